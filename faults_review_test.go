package retrytransport_test

// Faults found by a second adversarial review, of the attempt loop that
// holds the last response until the next attempt is certain: odd base
// transports and GetBody results, the budget against the drain, send
// tokens, and net/http's own rewinds of a recorded body.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// noPanic runs f and fails t if it panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if testing.Verbose() {
				t.Logf("%s", debug.Stack())
			}
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// TestBaseWithNoResponseIsAnError: a base transport that returns (nil,
// nil) breaks the RoundTripper contract. Every path (the attempt loop, one
// timed attempt, the direct single attempt, a classifier that copes with
// it) reports it as a final error, as net/http's Client does, and never
// panics.
func TestBaseWithNoResponseIsAnError(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, nil
	})
	// A classifier that copes with (nil, nil) itself: the loop then builds
	// a *RetryError with a nil Err, whose Error method panics.
	tolerant := func(req *http.Request, resp *http.Response, err error) classify.Outcome {
		if resp == nil && err == nil {
			return classify.Outcome{Kind: classify.Transient, Reason: "nothing came back"}
		}
		return classify.Standard(req, resp, err)
	}
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"Standard", policy.Policy{}},
		{"OneTimedAttempt", policy.Policy{MaxAttempts: 1, AttemptTimeout: time.Second}},
		{"TolerantClassifier", policy.Policy{Classify: tolerant, DisableQuota: true}},
		{"OneAttempt", policy.Policy{MaxAttempts: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := retrytransport.New(base, retrytransport.WithPolicy(tt.p), retrytransport.WithClock(nil, faketime.New().Sleep))
			noPanic(t, "RoundTrip over a (nil, nil) base, policy "+tt.name, func() {
				resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
				if resp != nil {
					resp.Body.Close()
				}
				var re *retrytransport.RetryError
				if !errors.As(err, &re) || re.Attempts != 1 || !strings.Contains(err.Error(), "nil *Response") {
					t.Errorf("RoundTrip error = %v; want a *RetryError after 1 attempt saying the base returned no response", err)
				}
			})
		})
	}
}

// TestNilGetBodyResultIsNotSentEmpty: a GetBody that returns (nil, nil)
// on a retry gives no body to send: the retry does not go, rather than go
// with an empty body.
func TestNilGetBodyResultIsNotSentEmpty(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr, _ := newTransport(t, s, policy.Policy{})
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
	f, srv := newTrackedFlaky(t, 1, status(503))
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

// TestDrainKeepsWithinMaxTotalTime: draining the previous response (a
// 500 whose body stalls) takes at most half of what is left of
// MaxTotalTime, and the retry's timer is armed with what is left after the
// drain, so the request ends at the budget, not a drain later.
func TestDrainKeepsWithinMaxTotalTime(t *testing.T) {
	noLeaks(t)
	var hits atomic.Int32
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			// A 500 (no peek for an error code) whose body stalls.
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(500)
			io.WriteString(w, "0123456789")
			w.(http.Flusher).Flush()
		}
		stall(w, r) // the first's body, and the second's headers, never come
	}))
	const budget = 500 * time.Millisecond
	c := pooledClient(t, nil, policy.Policy{
		MaxAttempts:  2,
		Backoff:      fastBackoff,
		MaxTotalTime: budget,
		ReadTimeout:  450 * time.Millisecond,
		DisableQuota: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), leakBound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	resp, err := c.Do(req)
	elapsed := time.Since(start)
	if err == nil {
		resp.Body.Close()
	}
	if elapsed > budget+300*time.Millisecond { // a bound on a bug: the drain alone was 450 ms
		t.Errorf("GET with MaxTotalTime %v took %v (error %v); want it to end at the budget", budget, elapsed, err)
	}
	srv.conns.expectAllClosed(t, c)
}

// TestRetryThatCannotRewindTakesNoSendToken: a retry whose GetBody fails
// is refused before it is paced, so it takes no send token of the scope's
// fixed rate, which x/time/rate could not give back: the next request is
// not refused by the FailFast limiter.
func TestRetryThatCannotRewindTakesNoSendToken(t *testing.T) {
	s := &script{steps: []step{{status: 503, body: "busy"}, {status: 200}}}
	lim := &ratelimit.Fixed{Rate: 10, Burst: 1, FailFast: true} // one token per 100 ms
	tr, clock := newTransport(t, s, policy.Policy{RateLimit: lim})
	lim.Now = clock.Now
	req := newReq(t, "PUT", "http://api.example.com/", "payload")
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("upload source gone") }
	resp, err := tr.RoundTrip(req) // attempt 1 takes the token; the retry's backoff (500 ms) refills it
	if err != nil {
		t.Fatalf("first PUT: %v; want the 503", err)
	}
	resp.Body.Close()
	if n := s.count(); n != 1 {
		t.Fatalf("first PUT made %d attempts; want 1 (its retry cannot rewind)", n)
	}
	// No attempt was sent since the clock's now: the bucket should be full.
	resp, err = tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
	if err != nil {
		t.Fatalf("next GET, with no attempt sent in the last 500 ms: %v; want it sent (the unsent retry's token given back)", err)
	}
	resp.Body.Close()
}

// TestBodilessRequestStaysBodilessOnRetries: a request with no Body but a
// GetBody (set by hand, or left over from a copied request) is sent
// without a body on every attempt: GetBody is called only for a request
// that has a body, as net/http's own rewinding does.
func TestBodilessRequestStaysBodilessOnRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr, _ := newTransport(t, s, policy.Policy{})
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
