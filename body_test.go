package retrytransport_test

// Request bodies: replay on retries (byte-identical, decided just before
// the attempt that would send it), GetBody results, bodiless requests, the
// recorded body's closing, and bodies whose length is not ContentLength.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// TestBodyLengthMismatchIsFinal: a request whose body is not as long as
// its ContentLength says is the caller's bug; net/http refuses to finish
// sending it, and every attempt would fail the same way. It is attempted
// once, with no wait, and the error says it is not retryable and carries
// net/http's own.
func TestBodyLengthMismatchIsFinal(t *testing.T) {
	for _, tt := range []struct {
		name          string
		declared      int64
		body          string
		withGetBody   bool
		wantInMessage string
	}{
		{"ShortWithGetBody", 100, strings.Repeat("a", 50), true, "request body length differs from ContentLength=100"},
		{"ShortRecorded", 100, strings.Repeat("a", 50), false, "request body length differs from ContentLength=100"},
		{"LongWithGetBody", 10, strings.Repeat("a", 50), true, "request body length differs from ContentLength=10"},
		{"LongRecorded", 10, strings.Repeat("a", 50), false, "request body length differs from ContentLength=10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			f, srv := newFlaky(t, 0, nil)
			var waits atomic.Int32
			var baseErr error // net/http's error, which the transport's wraps
			base := &countingBase{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := srv.Client().Transport.RoundTrip(r)
				baseErr = err
				return resp, err
			})}
			tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Backoff: halfJitter}),
				retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { waits.Add(1); return ctx.Err() }))
			c := &http.Client{Transport: tr}
			t.Cleanup(c.CloseIdleConnections)
			req, err := http.NewRequest("PUT", srv.URL, strings.NewReader(tt.body))
			if err != nil {
				t.Fatalf("http.NewRequest: %v", err)
			}
			if !tt.withGetBody {
				req.GetBody = nil
				req.Body = io.NopCloser(strings.NewReader(tt.body))
			}
			req.ContentLength = tt.declared
			req.Header.Set("X-Request-Id", tt.name)
			resp, err := c.Do(req)
			if n := base.calls.Load(); n != 1 || waits.Load() != 0 {
				t.Errorf("PUT attempted %d times after %d waits; want once, no wait", n, waits.Load())
			}
			switch {
			case resp != nil && tt.declared < int64(len(tt.body)):
				// net/http sent the declared bytes, and the server's answer
				// to them beat the error: a response, which is final.
				resp.Body.Close()
			case resp != nil:
				resp.Body.Close()
				t.Errorf("PUT = %d; want an error", resp.StatusCode)
			case !errors.Is(err, retrytransport.ErrNotRetryable) || !strings.Contains(err.Error(), tt.wantInMessage):
				t.Errorf("PUT error = %v; want ErrNotRetryable and %q", err, tt.wantInMessage)
			case baseErr == nil || !errors.Is(err, baseErr) || !strings.Contains(err.Error(), baseErr.Error()):
				t.Errorf("PUT error = %v; want it to wrap, and say, net/http's: %v", err, baseErr)
			}
			// A body longer than declared is cut by net/http at the
			// declared length, so the server may see one whole request.
			if n := f.count(tt.name); n > 1 {
				t.Errorf("handler saw the request %d times; want at most 1", n)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// earlyAnswer answers every request with a 500 header at once, then reads
// the whole request body, and only then sends the 500's body: a server that
// rejects an upload early but keeps its connection by reading the rest.
type earlyAnswer struct {
	mu     sync.Mutex
	bodies [][32]byte // hash of each body read whole
	sizes  []int      // size of each body read whole
}

func (e *earlyAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.NewResponseController(w).EnableFullDuplex()
	w.WriteHeader(500)
	w.(http.Flusher).Flush()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.bodies = append(e.bodies, sha256.Sum256(b))
	e.sizes = append(e.sizes, len(b))
	e.mu.Unlock()
	io.WriteString(w, "upload rejected")
}

// TestBodyReplayDecidedJustBeforeSending: a 3 MiB PUT without GetBody to a
// server that answers 500 at once and then reads the whole body. The first
// attempt's writer goes on reading the body, past the 1 MiB record, while
// the transport holds the 500. Whether the body can be replayed is decided
// only when the next attempt is about to go: a next attempt, if any, sends
// the identical 3 MiB, never a cut body; and when the body can no longer be
// replayed the caller gets the 500, whole, not an error.
func TestBodyReplayDecidedJustBeforeSending(t *testing.T) {
	noLeaks(t)
	h := &earlyAnswer{}
	srv := newFaultServer(t, h)
	c := e2eClient(t, policy.Standard())
	payload := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	req, err := http.NewRequest("PUT", srv.URL, io.NopCloser(bytes.NewReader(payload)))
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	req.ContentLength = int64(len(payload))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("PUT: %v; want the 500", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 500 || got != "upload rejected" {
		t.Errorf("PUT = %d %q; want the 500 whole", resp.StatusCode, got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	want := sha256.Sum256(payload)
	for i, sum := range h.bodies {
		if sum != want {
			t.Errorf("body %d that the server read whole: %d bytes differing from the %d sent", i+1, h.sizes[i], len(payload))
		}
	}
	srv.conns.expectAllClosed(t, c)
}

// A request net/http refuses to send (a client bug) is attempted once and
// ends with ErrNotRetryable: sending it again cannot succeed.
func TestMalformedRequestIsAttemptedOnce(t *testing.T) {
	tests := []struct {
		name   string
		modify func(r *http.Request)
	}{
		{"HeaderValueWithNewline", func(r *http.Request) { r.Header.Set("X-Trace", "a\nb") }},
		// An unknown method alone is not sent again after a connection
		// error; the Idempotency-Key makes it a request that would be.
		{"InvalidMethod", func(r *http.Request) {
			r.Method = "GE T"
			r.Header.Set("Idempotency-Key", "k1")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			f, srv := newFlaky(t, 0, nil)
			base := &countingBase{base: cleanhttp.DefaultPooledTransport()}
			clock := faketime.NewAt(time.Now())
			p := policy.Standard()
			p.Backoff = halfJitter
			c := &http.Client{Transport: retrytransport.New(base,
				retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep))}
			t.Cleanup(c.CloseIdleConnections)

			req := newReq(t, "GET", srv.URL+"/", "")
			req.Header.Set("X-Request-Id", tt.name)
			tt.modify(req)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s: Do(%s) succeeded; want net/http to refuse the request", tt.name, srv.URL)
			}
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, retrytransport.ErrNotRetryable) {
				t.Errorf("%s: Do(%s) error = %v; want a *RetryError after 1 attempt wrapping ErrNotRetryable", tt.name, srv.URL, err)
			}
			if got := base.calls.Load(); got != 1 {
				t.Errorf("%s: base transport called %d times; want 1", tt.name, got)
			}
			if got := f.count(tt.name); got != 0 {
				t.Errorf("%s: server saw %d attempts; want 0 (net/http refuses before sending)", tt.name, got)
			}
			if got := clock.Sleeps(); len(got) != 0 {
				t.Errorf("%s: waited %v; want no wait", tt.name, got)
			}
		})
	}
}

// TestNilGetBodyResultIsNotSentEmpty: a GetBody that returns (nil, nil)
// on a retry gives no body to send: the retry does not go, rather than go
// with an empty body.
func TestNilGetBodyResultIsNotSentEmpty(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr := newRig(t, s, policy.Policy{})
	req := newReq(t, "PUT", "http://api.example.com/", "")
	req.Body = io.NopCloser(io.MultiReader(strings.NewReader("payload"))) // length unknown
	req.ContentLength = -1
	req.GetBody = func() (io.ReadCloser, error) { return nil, nil }
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	for i, b := range s.received() {
		if b != "payload" {
			t.Errorf("attempt %d sent body %q; want %q or no attempt (bodies %q)", i+1, b, "payload", s.received())
		}
	}
}

// TestNilGetBodyResultKeepsTheLastResponse: the retry that a nil GetBody
// result stops is refused before the 503 it was to replace is drained, so
// the caller gets that 503.
func TestNilGetBodyResultKeepsTheLastResponse(t *testing.T) {
	noLeaks(t)
	f, srv := newFlaky(t, 1, status(503))
	c := e2eClient(t, policy.Policy{})
	req, _ := http.NewRequest("PUT", srv.URL, strings.NewReader("payload"))
	req.Header.Set("X-Request-Id", "r")
	req.GetBody = func() (io.ReadCloser, error) { return nil, nil }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("PUT whose GetBody gives a nil body: %v (after %d attempts); want the 503, or a retry with the whole body", err, f.count("r"))
	}
	resp.Body.Close()
	srv.conns.expectAllClosed(t, c)
}

// TestBodilessRequestStaysBodilessOnRetries: a request with no Body but a
// GetBody (set by hand, or left over from a copied request) is sent
// without a body on every attempt: GetBody is called only for a request
// that has a body, as net/http's own rewinding does.
func TestBodilessRequestStaysBodilessOnRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr := newRig(t, s, policy.Policy{})
	req := newReq(t, "GET", "http://api.example.com/", "")
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("stale upload")), nil }
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	if got := s.received(); len(got) != 2 || got[0] != got[1] {
		t.Errorf("bodies sent = %q; want the same (empty) body on every attempt", got)
	}
}

// TestRecordedBodyClosedWhenNetHTTPRewindsAndGivesUp: the recorder hands
// net/http its rewind as the attempt's GetBody. net/http's HTTP/2
// transport calls it after a refused stream and, if the attempt's context
// ends during its own backoff (the caller cancels, or AttemptTimeout
// fires), returns without closing the copy it got. The caller's
// Request.Body is closed all the same once the request has failed.
func TestRecordedBodyClosedWhenNetHTTPRewindsAndGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name   string
		p      policy.Policy
		cancel bool
	}{
		{"CallerCancels", policy.Policy{Backoff: fastBackoff}, true},
		{"AttemptTimeout", policy.Policy{Backoff: fastBackoff, AttemptTimeout: 300 * time.Millisecond, MaxAttempts: 2}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newH2Script(t, func(int32, int) h2Verdict { return h2Refuse })
			c := h2cClient(t, tt.p)
			body := &closeSignal{Reader: io.MultiReader(strings.NewReader("payload")), done: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "PUT", srv.url("http"), body) // no GetBody: recorded
			if tt.cancel {
				// net/http refuses twice at once, then backs off for about a
				// second before its third try: cancel during that backoff.
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("PUT to a server that refuses every stream = %d; want an error", resp.StatusCode)
			}
			select {
			case <-body.done:
			case <-time.After(leakBound):
				t.Errorf("PUT ended (%v, after %d refusals), but its Request.Body was not closed within %v", err, srv.refusals(), leakBound)
			}
		})
	}
}
