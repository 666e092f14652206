package retrytransport_test

// What the caller learns of the attempts: ResponseAttempts on a response,
// and the attempts and waits a *RetryError reports.

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

func TestResponseAttemptsAfterRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 429, header: retryAfter(2)}, {status: 200, body: "ok"}}}
	tr := newRig(t, s, policy.Standard())
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
	tr := newRig(t, s, policy.Standard())
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
	tr := newRig(t, s, policy.Standard())
	_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("RoundTrip error = %v; want a *RetryError", err)
	}
	if re.Attempts != 3 || re.Waited != 1500*time.Millisecond {
		t.Errorf("RetryError = {Attempts: %d, Waited: %v}; want {3, 1.5s}", re.Attempts, re.Waited)
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
