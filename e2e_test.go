package retrytransport_test

// End to end over 127.0.0.1: statuses retried over one connection, dropped
// and refused connections, certificate failures, bodies replayed byte for
// byte, concurrent use and the context deadline.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

func TestE2ERetriesStatusesOverOneConnection(t *testing.T) {
	for _, code := range []int{500, 502, 503, 504, 408, 429, 509} {
		f, srv := newFlaky(t, 2, status(code))
		c := e2eClient(t, policy.Standard())
		resp, err := do(t, c, "GET", srv.URL, "r1", nil)
		if err != nil {
			t.Fatalf("GET with %d twice: %v", code, err)
		}
		if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
			t.Errorf("GET with %d twice = %d %q; want 200 ok", code, resp.StatusCode, got)
		}
		if got := f.count("r1"); got != 3 {
			t.Errorf("GET with %d twice: server saw %d attempts; want 3", code, got)
		}
		// Failed responses are drained and closed, so the connection is reused.
		if got := srv.conns.accepted.Load(); got != 1 {
			t.Errorf("GET with %d twice: server saw %d connections; want 1", code, got)
		}
	}
}

func TestE2EDroppedConnection(t *testing.T) {
	f, srv := newFlaky(t, 1, hangUp)
	c := e2eClient(t, policy.Standard())

	resp, err := do(t, c, "GET", srv.URL, "get", nil)
	if err != nil {
		t.Fatalf("GET after a dropped connection: %v", err)
	}
	resp.Body.Close()
	if got := f.count("get"); got != 2 {
		t.Errorf("GET: server saw %d attempts; want 2", got)
	}

	// The server read the POST before hanging up: it may have acted, so
	// the POST must not be sent again.
	_, err = do(t, c, "POST", srv.URL, "post", strings.NewReader("charge $10"))
	if !errors.Is(err, retrytransport.ErrNotRetryable) {
		t.Errorf("POST after a dropped connection: error = %v; want ErrNotRetryable", err)
	}
	if got := f.count("post"); got != 1 {
		t.Errorf("POST: server saw %d attempts; want exactly 1", got)
	}
}

func TestE2ERefusedConnectionRetriesEvenPOST(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens now: connections are refused

	var attempts int
	c := e2eClient(t, policy.Standard(), retrytransport.WithObserver(func(e retrytransport.Event) { attempts = e.Attempt }))
	_, err = do(t, c, "POST", "http://"+addr+"/", "p", strings.NewReader("body"))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, retrytransport.ErrExhausted) {
		t.Fatalf("POST to a closed port: error = %v; want a *RetryError after 3 attempts wrapping ECONNREFUSED and ErrExhausted", err)
	}
	if attempts != 3 {
		t.Errorf("observer saw attempt %d last; want 3", attempts)
	}
}

func TestE2ECertificateFailureIsFinal(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	var events int
	c := e2eClient(t, policy.Standard(), retrytransport.WithObserver(func(retrytransport.Event) { events++ }))
	_, err := do(t, c, "GET", srv.URL, "tls", nil)
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, retrytransport.ErrNotRetryable) {
		t.Errorf("GET to an untrusted certificate: error = %v; want a *RetryError after 1 attempt, ErrNotRetryable", err)
	}
	if events != 0 {
		t.Errorf("observer called %d times; want 0 for a final outcome", events)
	}
}

func TestE2EBodiesReplayedIdentically(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640 KB
	bodies := []struct {
		name string
		body func() io.Reader
	}{
		{"WithGetBody", func() io.Reader { return bytes.NewReader(payload) }},
		{"Recorded", func() io.Reader { return io.MultiReader(bytes.NewReader(payload)) }},
		{"RecordedSmallReads", func() io.Reader { return &smallReads{r: bytes.NewReader(payload)} }},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			f, srv := newFlaky(t, 2, status(503))
			c := e2eClient(t, policy.Standard())
			resp, err := do(t, c, "PUT", srv.URL, "put", b.body())
			if err != nil {
				t.Fatalf("PUT: %v", err)
			}
			resp.Body.Close()
			hashes := f.bodyHashes("put")
			want := sha256.Sum256(payload)
			if len(hashes) != 3 {
				t.Fatalf("server saw %d attempts; want 3", len(hashes))
			}
			for i, h := range hashes {
				if h != want {
					t.Errorf("attempt %d body hash differs from the payload's", i+1)
				}
			}
		})
	}
}

func TestE2EBodyPastBufferCapIsSentOnce(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 2<<20)
	f, srv := newFlaky(t, 5, status(503))
	c := e2eClient(t, policy.Policy{MaxBodyBuffer: 1 << 20})
	resp, err := do(t, c, "PUT", srv.URL, "big", io.MultiReader(bytes.NewReader(payload)))
	if err != nil {
		t.Fatalf("PUT: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("PUT status = %d; want the 503 returned as is", resp.StatusCode)
	}
	hashes := f.bodyHashes("big")
	if len(hashes) != 1 || hashes[0] != sha256.Sum256(payload) {
		t.Errorf("server saw %d attempts; want exactly 1 with the whole body", len(hashes))
	}
}

func TestE2ERequestBodyClosed(t *testing.T) {
	for _, fail := range []func(http.ResponseWriter, *http.Request){status(503), hangUp} {
		_, srv := newFlaky(t, 1, fail)
		c := e2eClient(t, policy.Standard())
		body := &closeSignal{Reader: strings.NewReader("payload"), done: make(chan struct{})}
		resp, err := do(t, c, "PUT", srv.URL, "c", body)
		if err != nil {
			t.Fatalf("PUT: %v", err)
		}
		resp.Body.Close()
		select {
		case <-body.done:
		case <-time.After(10 * time.Second): // a bound on a bug, not a wait
			t.Fatalf("request body was never closed")
		}
		if n := body.closes.Load(); n != 1 {
			t.Errorf("request body closed %d times; want 1", n)
		}
	}
}

func TestE2EConcurrentUse(t *testing.T) {
	f, srv := newFlaky(t, 1, status(503))
	c := e2eClient(t, policy.Standard())
	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id := string(rune('a'+g)) + "-" + string(rune('a'+i))
				resp, err := do(t, c, "PUT", srv.URL, id, strings.NewReader(id))
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of 320 concurrent requests failed; want 0", n)
	}
	if n := f.count("a-a"); n != 2 {
		t.Errorf("server saw %d attempts of one request; want 2", n)
	}
}

func TestE2EContextDeadlineBoundsRetries(t *testing.T) {
	_, srv := newFlaky(t, 10, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(503)
	})
	c := e2eClient(t, policy.Standard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || time.Since(start) > 2*time.Second {
		t.Errorf("GET = %d after %v; want the 503 at once (a 5 s wait would pass the 3 s deadline)", resp.StatusCode, time.Since(start))
	}
}

// smallReads hands out at most 7 bytes per Read, to exercise the recorder's
// bookkeeping across many reads.
type smallReads struct{ r io.Reader }

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 7)]) }

type closeSignal struct {
	io.Reader
	closes atomic.Int32
	done   chan struct{}
}

func (c *closeSignal) Close() error {
	if c.closes.Add(1) == 1 {
		close(c.done)
	}
	return nil
}
