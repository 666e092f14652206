package retrytransport_test

// Faults of servers that stall: headers or bodies that never come end at
// the deadline, and the error says it was a timeout, not a connection
// failure.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// Where a stall handler stops answering.
type stallPoint int

const (
	stallBeforeHeaders stallPoint = iota // no byte of the response
	stallMidHeaders                      // the status line and part of the header
	stallMidBody                         // the header and the first bytes of a longer body
)

// stallBodyPart is what a stallMidBody handler sends of its 1000-byte body.
const stallBodyPart = "0123456789"

// staller is a handler that reads the request, counts it, and stops
// answering at its point. It holds each request until the client goes away
// or the test ends (release), and closes entered at the first request.
type staller struct {
	at      stallPoint
	seen    atomic.Int32
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

// newStaller starts a server for a staller; release is closed when the
// test ends, before the server is, so a held request never delays the
// server's Close.
func newStaller(t *testing.T, at stallPoint) (*staller, *faultServer) {
	t.Helper()
	s := &staller{at: at, entered: make(chan struct{}), release: make(chan struct{})}
	srv := newFaultServer(t, s)
	t.Cleanup(func() { close(s.release) })
	return s, srv
}

func (s *staller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	s.seen.Add(1)
	s.once.Do(func() { close(s.entered) })
	switch s.at {
	case stallMidHeaders:
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/pla")
		buf.Flush()
		// The hijacked connection has no request context: the client's
		// close ends the read, the deadline a client that never closes.
		c.SetReadDeadline(time.Now().Add(leakBound))
		io.Copy(io.Discard, c)
		return
	case stallMidBody:
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, stallBodyPart)
		w.(http.Flusher).Flush()
	}
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
}

// deadlineKinds are the ways to bound a request in time: the caller's
// context deadline, http.Client.Timeout, and the policy's AttemptTimeout.
// Each says how to apply the bound to a client and request, how many
// attempts of an idempotent request the server sees when every attempt
// stalls (a POST is never sent twice after a timeout), and whether the
// bound is the caller's, which also covers reading the response body and
// whose expiry surfaces as context.DeadlineExceeded (for AttemptTimeout see
// TestFaultAttemptTimeoutErrorIsADeadline).
var deadlineKinds = []struct {
	name     string
	p        policy.Policy
	apply    func(c *http.Client, req *http.Request, d time.Duration) (*http.Request, context.CancelFunc)
	attempts int32
	caller   bool
}{
	{"ContextDeadline", policy.Standard(), func(_ *http.Client, req *http.Request, d time.Duration) (*http.Request, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(req.Context(), d)
		return req.WithContext(ctx), cancel
	}, 1, true},
	{"ClientTimeout", policy.Standard(), func(c *http.Client, req *http.Request, d time.Duration) (*http.Request, context.CancelFunc) {
		c.Timeout = d
		return req, func() {}
	}, 1, true},
	{"AttemptTimeout", policy.Policy{AttemptTimeout: 100 * time.Millisecond}, func(_ *http.Client, req *http.Request, _ time.Duration) (*http.Request, context.CancelFunc) {
		return req, func() {}
	}, 3, false},
}

// TestFaultStalledHeadersEndAtTheDeadline: a server that never finishes
// its response header. The caller gets an error wrapping
// context.DeadlineExceeded once its deadline passes, not later; a deadline
// the caller set is not a reason to send again, so the server sees one
// attempt; nothing is left running.
func TestFaultStalledHeadersEndAtTheDeadline(t *testing.T) {
	for _, at := range []struct {
		name string
		at   stallPoint
	}{{"BeforeHeaders", stallBeforeHeaders}, {"MidHeaders", stallMidHeaders}} {
		for _, dk := range deadlineKinds {
			for _, method := range []string{"GET", "POST"} {
				t.Run(at.name+"_"+dk.name+"_"+method, func(t *testing.T) {
					noLeaks(t)
					s, srv := newStaller(t, at.at)
					c := e2eClient(t, dk.p)
					req, err := http.NewRequest(method, srv.URL, strings.NewReader("payload"))
					if err != nil {
						t.Fatalf("http.NewRequest: %v", err)
					}
					req, cancel := dk.apply(c, req, 200*time.Millisecond)
					defer cancel()
					start := time.Now()
					resp, err := c.Do(req)
					elapsed := time.Since(start)
					if err == nil {
						resp.Body.Close()
						t.Fatalf("%s to a stalled server = %d; want an error", method, resp.StatusCode)
					}
					// http.Client flattens the error to text when its
					// Timeout fires, so only the AttemptTimeout error is
					// sure to hold the *RetryError.
					var re *retrytransport.RetryError
					if dk.caller && (!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) || !dk.caller && !errors.As(err, &re) {
						t.Errorf("%s to a stalled server: error = %v; want one wrapping context.DeadlineExceeded, or a *RetryError for AttemptTimeout", method, err)
					}
					if elapsed > leakBound {
						t.Errorf("%s to a stalled server returned after %v; want soon after the 200ms deadline", method, elapsed)
					}
					want := dk.attempts
					if method == "POST" {
						want = 1
					}
					if got := s.seen.Load(); got != want {
						t.Errorf("%s to a stalled server: %d attempts; want %d", method, got, want)
					}
					srv.conns.expectAllClosed(t, c)
				})
			}
		}
	}
}

// TestFaultStalledBodyEndsAtTheDeadline: a server that sends its header and
// the first bytes of the body, then stalls. The caller gets the response at
// once; reading the body yields the bytes sent, then an error wrapping
// context.DeadlineExceeded when the deadline passes.
func TestFaultStalledBodyEndsAtTheDeadline(t *testing.T) {
	for _, dk := range deadlineKinds {
		if !dk.caller {
			continue // TestAttemptTimeoutDoesNotBoundTheBodyRead
		}
		t.Run(dk.name, func(t *testing.T) {
			noLeaks(t)
			s, srv := newStaller(t, stallMidBody)
			c := e2eClient(t, dk.p)
			req, err := http.NewRequest("GET", srv.URL, nil)
			if err != nil {
				t.Fatalf("http.NewRequest: %v", err)
			}
			// Long enough for the header to arrive on a loaded machine.
			req, cancel := dk.apply(c, req, time.Second)
			defer cancel()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("GET with a stalled body: %v; want the response", err)
			}
			start := time.Now()
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != stallBodyPart || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("reading a stalled body = %q, %v; want %q and an error wrapping context.DeadlineExceeded", got, err, stallBodyPart)
			}
			if elapsed := time.Since(start); elapsed > leakBound {
				t.Errorf("reading a stalled body failed after %v; want soon after the 1s deadline", elapsed)
			}
			if got := s.seen.Load(); got != 1 {
				t.Errorf("GET with a stalled body: %d attempts; want 1", got)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// stalledCall sends a GET to a server that never answers, bounded as dk
// says, and returns the error.
func stalledCall(t *testing.T, dk int) error {
	t.Helper()
	_, srv := newStaller(t, stallBeforeHeaders)
	c := e2eClient(t, deadlineKinds[dk].p)
	req, err := http.NewRequest("GET", srv.URL, nil)
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	req, cancel := deadlineKinds[dk].apply(c, req, 200*time.Millisecond)
	defer cancel()
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET to a stalled server = %d; want an error", resp.StatusCode)
	}
	return err
}

// TestFaultTimeoutErrorReportsTimeout: through net/http alone, a request
// whose deadline passes fails with a *url.Error whose Timeout() is true,
// and the usual errors.As(err, &netErr) && netErr.Timeout() holds. A
// drop-in RoundTripper must keep both.
func TestFaultTimeoutErrorReportsTimeout(t *testing.T) {
	for i, dk := range deadlineKinds {
		t.Run(dk.name, func(t *testing.T) {
			noLeaks(t)
			err := stalledCall(t, i)
			var ue *neturl.Error
			var ne net.Error
			if !errors.As(err, &ue) || !ue.Timeout() || !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("GET to a stalled server with %s: error = %v; want (*url.Error).Timeout() and net.Error.Timeout() true", dk.name, err)
			}
		})
	}
}

// TestFaultAttemptTimeoutErrorIsADeadline: when every attempt runs out of
// its AttemptTimeout, the error says so: it wraps context.DeadlineExceeded,
// and not context.Canceled, which callers read as their own cancellation.
func TestFaultAttemptTimeoutErrorIsADeadline(t *testing.T) {
	noLeaks(t)
	for i, dk := range deadlineKinds {
		if dk.caller {
			continue
		}
		err := stalledCall(t, i)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("GET to a stalled server with %s: error = %v; want it to wrap context.DeadlineExceeded and not context.Canceled", dk.name, err)
		}
	}
}

// TestFaultClientTimeoutIsNotAConnectionError: http.Client.Timeout cancels
// a request to a RoundTripper it does not know, such as this one, through
// Request.Cancel as well as the context, and the base transport may then
// fail with "net/http: request canceled" before the context reports its
// deadline. Either way the caller's deadline has passed: the outcome is
// final, with no retry decision (no Event), and the server sees each
// request once.
func TestFaultClientTimeoutIsNotAConnectionError(t *testing.T) {
	noLeaks(t)
	s, srv := newStaller(t, stallBeforeHeaders)
	var events []string
	var mu sync.Mutex
	c := e2eClient(t, policy.Standard(), retrytransport.WithObserver(func(e retrytransport.Event) {
		mu.Lock()
		events = append(events, e.Outcome.Reason)
		mu.Unlock()
	}))
	c.Timeout = 20 * time.Millisecond
	const requests = 20
	for range requests {
		req, err := http.NewRequest("GET", srv.URL, nil)
		if err != nil {
			t.Fatalf("http.NewRequest: %v", err)
		}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("GET to a stalled server with Client.Timeout = %d; want an error", resp.StatusCode)
		}
	}
	if len(events) != 0 || s.seen.Load() != requests {
		t.Errorf("%d GETs past Client.Timeout: events %q, %d attempts; want no event and %d attempts", requests, events, s.seen.Load(), requests)
	}
}
