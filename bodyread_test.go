package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/policy"
)

// stallingFailure answers the first failures requests with status and a
// body that declares length bytes, sends first, and then sends one more
// byte every every (never, if every is zero) until the client goes away;
// later requests get 200 "ok".
type stallingFailure struct {
	failures int32
	status   int
	length   int
	first    string
	every    time.Duration
	hits     atomic.Int32
}

func (s *stallingFailure) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if s.hits.Add(1) > s.failures {
		io.WriteString(w, "ok")
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(s.length))
	w.WriteHeader(s.status)
	io.WriteString(w, s.first)
	w.(http.Flusher).Flush()
	bound := time.NewTimer(leakBound) // a bound on a bug, not a wait
	defer bound.Stop()
	var tick <-chan time.Time
	if s.every > 0 {
		tk := time.NewTicker(s.every)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-bound.C:
			return
		case <-tick:
			if _, err := io.WriteString(w, "x"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// boundedCall sends a GET to url through c under a caller's deadline that
// only bounds a bug, and fails t if that deadline is what ended it.
func boundedCall(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leakBound)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := c.Do(req)
	if ctx.Err() != nil {
		t.Fatalf("GET ended at the caller's deadline (%v); want the policy's own bound to end it", err)
	}
	return resp, err
}

// TestStalledFailedBodyIsNotWaitedFor: a 500 that sends 10 of its 1000
// bytes and stalls, after AttemptTimeout (here, until the headers) or
// MaxTotalTime gave the attempt its time. Its drain before the next attempt
// ends at ReadTimeout: the body is closed, not waited for, and the retry
// succeeds.
func TestStalledFailedBodyIsNotWaitedFor(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"AttemptTimeout", policy.Policy{AttemptTimeout: time.Second, ReadTimeout: 50 * time.Millisecond}},
		{"MaxTotalTime", policy.Policy{MaxTotalTime: 10 * time.Second, ReadTimeout: 50 * time.Millisecond}},
		{"NoTimeBound", policy.Policy{ReadTimeout: 50 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			h := &stallingFailure{failures: 1, status: 500, length: 1000, first: "0123456789"}
			srv := newFaultServer(t, h)
			c := e2eClient(t, tt.p)
			resp, err := boundedCall(t, c, srv.URL)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
				t.Errorf("GET = %d %q; want 200 ok after the stalled 500", resp.StatusCode, got)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// TestTricklingErrorDocumentIsNotWaitedFor: a 503 that declares 1 GiB and
// sends a byte every 20 ms would keep a 4 KiB peek for an error code busy
// for a minute and a half. The peek ends at ReadTimeout; the body, too long
// to drain, is closed at once; the retry succeeds. When the 503 is the last
// response, the caller gets it, status and headers intact, and its body
// gives the bytes that arrived and then an error that says it timed out.
func TestTricklingErrorDocumentIsNotWaitedFor(t *testing.T) {
	p := policy.Policy{ReadTimeout: 50 * time.Millisecond}
	t.Run("Retried", func(t *testing.T) {
		noLeaks(t)
		h := &stallingFailure{failures: 1, status: 503, length: 1 << 30, every: 20 * time.Millisecond}
		srv := newFaultServer(t, h)
		c := e2eClient(t, p)
		resp, err := boundedCall(t, c, srv.URL)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" || h.hits.Load() != 2 {
			t.Errorf("GET = %d %q after %d hits; want 200 ok after 2", resp.StatusCode, got, h.hits.Load())
		}
		srv.conns.expectAllClosed(t, c)
	})
	t.Run("Last", func(t *testing.T) {
		noLeaks(t)
		h := &stallingFailure{failures: 3, status: 503, length: 1 << 30, first: "<Error>", every: 20 * time.Millisecond}
		srv := newFaultServer(t, h)
		c := e2eClient(t, p)
		resp, err := boundedCall(t, c, srv.URL)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.ContentLength != 1<<30 || string(b[:min(len(b), 7)]) != "<Error>" {
			t.Errorf("GET = %d (Content-Length %d), body %q; want the 503 as sent, from its first bytes", resp.StatusCode, resp.ContentLength, b)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("reading the 503's body: %v; want an error wrapping os.ErrDeadlineExceeded", err)
		}
		srv.conns.expectAllClosed(t, c)
	})
}
