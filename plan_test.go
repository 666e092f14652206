package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// TestPacingBeforeTheFirstAttemptKeepsTheBudget: a fixed rate whose token
// is spent needs a 400 ms wait, but MaxTotalTime is 100 ms. The wait is not
// started; the error says the budget, comes before any attempt (so it is
// not a *RetryError, whose Attempts is at least 1), and the request body,
// which has GetBody, is closed as the RoundTripper contract requires.
func TestPacingBeforeTheFirstAttemptKeepsTheBudget(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{MaxTotalTime: 100 * time.Millisecond, RateLimit: &ratelimit.Fixed{Rate: 2.5, Burst: 1}}
	tr, clock := newTransport(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
	resp, err := tr.RoundTrip(newReq(t, "GET", url, "")) // spends the token
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()

	req := newReq(t, "PUT", url, "payload") // strings.Reader: GetBody is set
	body := &closeCounter{Reader: strings.NewReader("payload")}
	req.Body = body
	_, err = tr.RoundTrip(req)
	var re *retrytransport.RetryError
	if !errors.Is(err, retrytransport.ErrBudget) || errors.As(err, &re) {
		t.Errorf("RoundTrip error = %v; want ErrBudget before any attempt, not a *RetryError", err)
	}
	if n := s.count(); n != 1 {
		t.Errorf("attempts = %d; want only the first request's", n)
	}
	for _, d := range clock.Sleeps() {
		if d > p.MaxTotalTime {
			t.Errorf("waited %v; want no wait past MaxTotalTime %v", d, p.MaxTotalTime)
		}
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("request body closed %d times; want 1", n)
	}
}

// TestPlannedRetryThatCannotGoReturnsTheLastResponse: a retry was planned
// and paid for, and then could not be sent: the body's GetBody failed, or
// the rate limiter refused to wait for it. The retry's quota cost is
// refunded, the observer hears why it stopped, and the caller gets the 503
// it received, whole.
func TestPlannedRetryThatCannotGoReturnsTheLastResponse(t *testing.T) {
	for _, tt := range []struct {
		name   string
		p      policy.Policy
		getErr error
		why    error
	}{
		{"GetBodyFails", policy.Policy{}, errors.New("upload source gone"), retrytransport.ErrNotRetryable},
		{"RateLimiterRefuses", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}}, nil, ratelimit.ErrRateLimited},
		// The backoff's 500 ms fits in MaxTotalTime; the send token's
		// further 500 ms would not.
		{"PacingPastBudget", policy.Policy{MaxTotalTime: 800 * time.Millisecond, RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1}}, nil, retrytransport.ErrBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503, body: "busy"}}}
			var events []retrytransport.Event
			tr, clock := newTransport(t, s, tt.p, retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) }))
			if tt.p.RateLimit != nil {
				tt.p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
			}
			req := newReq(t, "PUT", url, "payload")
			if tt.getErr != nil {
				req.GetBody = func() (io.ReadCloser, error) { return nil, tt.getErr }
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip error = %v; want the 503", err)
			}
			if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
				t.Errorf("RoundTrip = %d %q; want the 503 whole", resp.StatusCode, got)
			}
			if n := s.count(); n != 1 {
				t.Errorf("attempts = %d; want 1", n)
			}
			if q := tr.Snapshot()[0].Quota; q != ratelimit.DefaultQuotaCapacity {
				t.Errorf("quota = %v after a retry that was not sent; want %d, its cost refunded", q, ratelimit.DefaultQuotaCapacity)
			}
			if len(events) != 2 || events[0].Stop != nil || !errors.Is(events[1].Stop, tt.why) {
				t.Errorf("events = %+v; want a retry, then a stop for %v", events, tt.why)
			}
			if tt.getErr != nil && !errors.Is(events[len(events)-1].Stop, tt.getErr) {
				t.Errorf("stop event %v does not carry GetBody's error", events[len(events)-1].Stop)
			}
		})
	}
}

// TestCallerCancelWhilePacingARetry: the caller cancels while a planned
// retry waits for its send token. The caller gets its context's error,
// not the response that the retry was to replace; that response is closed,
// and the retry's cost refunded.
func TestCallerCancelWhilePacingARetry(t *testing.T) {
	body := &closeCounter{Reader: strings.NewReader("busy")}
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 503, Header: http.Header{}, Body: body, Request: req}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sleeps int
	sleep := func(ctx context.Context, _ time.Duration) error {
		if sleeps++; sleeps == 1 { // the backoff: the caller gives up as it ends
			cancel()
			return nil
		}
		return ctx.Err()
	}
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{Backoff: halfJitter, RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, Now: clock.Now}}
	tr := retrytransport.New(base, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, sleep))
	req := newReq(t, "GET", url, "").WithContext(ctx)
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip = %d; want the caller's cancellation", resp.StatusCode)
	}
	if !errors.Is(err, context.Canceled) || sleeps != 2 {
		t.Errorf("RoundTrip error = %v after %d waits; want context.Canceled during the second (the send token's)", err, sleeps)
	}
	if q := tr.Snapshot()[0].Quota; q != ratelimit.DefaultQuotaCapacity {
		t.Errorf("quota = %v; want %d, the retry's cost refunded", q, ratelimit.DefaultQuotaCapacity)
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("the 503's body closed %d times; want 1", n)
	}
}
