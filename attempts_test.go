package retrytransport_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

func TestResponseAttemptsAfterRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 429, header: retryAfter(2)}, {status: 200, body: "ok"}}}
	tr, _ := newTransport(t, s, policy.Standard())
	req := newReq(t, "GET", url, "")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	// halfJitter waits 0.5 s before retry 1; the server asked 2 s before retry 2.
	want := retrytransport.Attempts{Count: 3, Waited: 2500 * time.Millisecond}
	if got := retrytransport.ResponseAttempts(resp); got != want {
		t.Errorf("ResponseAttempts = %+v; want %+v", got, want)
	}
	if resp.Request != req {
		t.Errorf("resp.Request = %p; want the caller's request %p", resp.Request, req)
	}
}

func TestResponseAttemptsOfAFirstAttempt(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr, _ := newTransport(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if got, want := retrytransport.ResponseAttempts(resp), (retrytransport.Attempts{Count: 1}); got != want {
		t.Errorf("ResponseAttempts = %+v; want %+v", got, want)
	}
	if got := retrytransport.ResponseAttempts(nil); got != (retrytransport.Attempts{}) {
		t.Errorf("ResponseAttempts(nil) = %+v; want the zero Attempts", got)
	}
}

// A response that came back after retries, through an
// http.Client that wraps the body for its Timeout, still reports them.
func TestResponseAttemptsThroughClientWithTimeout(t *testing.T) {
	f, srv := newFlaky(t, 2, status(503))
	c := e2eClient(t, policy.Policy{Backoff: halfJitter})
	c.Timeout = time.Minute
	resp, err := do(t, c, "GET", srv.URL, "timeout", nil)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	if got := retrytransport.ResponseAttempts(resp).Count; got != 3 || f.count("timeout") != 3 {
		t.Errorf("ResponseAttempts.Count = %d, server saw %d; want 3 and 3", got, f.count("timeout"))
	}
}

func TestRetryErrorSaysHowLongItWaited(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	tr, _ := newTransport(t, s, policy.Standard())
	_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("RoundTrip error = %v; want a *RetryError", err)
	}
	if re.Attempts != 3 || re.Waited != 1500*time.Millisecond {
		t.Errorf("RetryError = {Attempts: %d, Waited: %v}; want {3, 1.5s}", re.Attempts, re.Waited)
	}
}

// Every retry's request tells the base transport which attempt it is and
// how long the request waited; the first attempt's carries nothing and
// reads as attempt 1.
func TestAttemptFromContextReachesTheBase(t *testing.T) {
	var mu sync.Mutex
	var seen []retrytransport.Attempts
	n := 0
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, retrytransport.AttemptFromContext(r.Context()))
		n++
		if n < 3 {
			return &http.Response{StatusCode: 503, Body: http.NoBody, Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	clock := faketime.New()
	tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Backoff: halfJitter}),
		retrytransport.WithClock(clock.Now, clock.Sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	want := []retrytransport.Attempts{{Count: 1}, {Count: 2, Waited: 500 * time.Millisecond}, {Count: 3, Waited: 1500 * time.Millisecond}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("AttemptFromContext per attempt mismatch (-want +got):\n%s", diff)
	}
}

// Policy.AttemptHeader sends each attempt's number to the server, on a copy
// of the header: the caller's request keeps its own.
func TestAttemptHeaderNumbersEveryAttempt(t *testing.T) {
	for _, maxAttempts := range []int{1, 3} {
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.Header.Get("X-Attempt"))
			if len(got) < maxAttempts {
				w.WriteHeader(503)
			}
		}))
		c := e2eClient(t, policy.Policy{MaxAttempts: maxAttempts, AttemptHeader: "X-Attempt", Backoff: halfJitter})
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("X-Mine", "kept")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("MaxAttempts %d: GET: %v", maxAttempts, err)
		}
		resp.Body.Close()
		srv.Close()
		want := []string{"1", "2", "3"}[:maxAttempts]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("MaxAttempts %d: X-Attempt per attempt mismatch (-want +got):\n%s", maxAttempts, diff)
		}
		if len(req.Header) != 1 || req.Header.Get("X-Attempt") != "" {
			t.Errorf("MaxAttempts %d: caller's header = %v; want it untouched", maxAttempts, req.Header)
		}
	}
}

// The final event: one per request that needed a retry, or whose retryable
// outcome was not retried, or that was refused before its first attempt;
// none for a request that ended at its first attempt.
func TestFinalEvent(t *testing.T) {
	type final struct {
		Attempt, Status int
		Kind            string
		Waited          time.Duration
		Stop            string
	}
	stopText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	tests := []struct {
		name  string
		steps []step
		p     policy.Policy
		want  []final
	}{
		{"FirstAttemptSucceeds", []step{{status: 200}}, policy.Policy{}, nil},
		{"FirstAttemptFatal", []step{{status: 404}}, policy.Policy{}, nil},
		{"RecoversAfterRetries", []step{{status: 503}, {status: 500}, {status: 200}}, policy.Policy{},
			[]final{{3, 200, "success", 1500 * time.Millisecond, ""}}},
		{"FatalAfterRetry", []step{{status: 503}, {status: 404}}, policy.Policy{},
			[]final{{2, 404, "fatal", 500 * time.Millisecond, retrytransport.ErrNotRetryable.Error()}}},
		{"Exhausted", []step{{status: 503}}, policy.Policy{},
			[]final{{3, 503, "transient", 1500 * time.Millisecond, retrytransport.ErrExhausted.Error()}}},
		{"NotRetriedAtAll", []step{{status: 503}}, policy.Policy{MaxAttempts: 1, AttemptTimeout: time.Minute},
			[]final{{1, 503, "transient", 0, retrytransport.ErrExhausted.Error()}}},
		// MaxAttempts 1 and nothing else to do: the response is not even
		// classified, so there is nothing to report.
		{"RetriesOff", []step{{status: 503}}, policy.Policy{MaxAttempts: 1}, nil},
		{"QuotaRefused", []step{{status: 503}}, policy.Policy{Quota: &ratelimit.Quota{Capacity: 7}},
			[]final{{2, 503, "transient", 500 * time.Millisecond, ratelimit.ErrQuotaExceeded.Error()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []final
			finals := 0
			obs := retrytransport.WithObserver(func(e retrytransport.Event) {
				if e.Final {
					finals++
					got = append(got, final{e.Attempt, e.StatusCode, e.Outcome.Kind.String(), e.Waited, stopText(e.Stop)})
				}
			})
			tr, _ := newTransport(t, &script{steps: tt.steps}, tt.p, obs)
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("final events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A request refused before its first attempt (here: the rate limiter will
// not wait) ends with a final event for attempt 0.
func TestFinalEventOfARequestRefusedBeforeItsFirstAttempt(t *testing.T) {
	var events []retrytransport.Event
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}}
	tr, _ := newTransport(t, s, p, retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) }))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	if _, err := tr.RoundTrip(newReq(t, "GET", url, "")); !errors.Is(err, ratelimit.ErrRateLimited) {
		t.Fatalf("second RoundTrip error = %v; want ratelimit.ErrRateLimited", err)
	}
	if len(events) != 1 || !events[0].Final || events[0].Attempt != 0 || !errors.Is(events[0].Stop, ratelimit.ErrRateLimited) {
		t.Errorf("events = %+v; want one final event for attempt 0 stopped by ErrRateLimited", events)
	}
}

// A retry's wait for a send token counts in its Attempts, as seen from its
// context and from the response: the record is settled when it is sent.
func TestAttemptsCountTheWaitForASendToken(t *testing.T) {
	var seen []retrytransport.Attempts
	n := 0
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, retrytransport.AttemptFromContext(r.Context()))
		n++
		if n == 1 {
			return &http.Response{StatusCode: 503, Header: retryAfter(0), Body: http.NoBody, Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	clock := faketime.New()
	p := policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, Now: clock.Now}}
	tr := retrytransport.New(base, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	want := retrytransport.Attempts{Count: 2, Waited: time.Second} // Retry-After: 0, then 1 s for the token
	if len(seen) != 2 || seen[1] != want {
		t.Errorf("AttemptFromContext per attempt = %+v; want the retry's %+v", seen, want)
	}
	if got := retrytransport.ResponseAttempts(resp); got != want {
		t.Errorf("ResponseAttempts = %+v; want %+v", got, want)
	}
}
