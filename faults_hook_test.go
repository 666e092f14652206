package retrytransport_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// Cloud Storage marks every request with gccl-attempt-count/1, also when
// its retries are off (storage.WithPolicy(storage.RetryNever)) and for the
// operations it never retries. A first attempt's mark therefore proves
// nothing: the policy's retries apply.
func TestGoogleMarkOfAFirstAttemptKeepsThePolicy(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200, body: "ok"}}}
	var stops []error
	tr, _ := newTransport(t, s, policy.Policy{}, retrytransport.WithObserver(func(e retrytransport.Event) {
		if e.Final {
			stops = append(stops, e.Stop)
		}
	}))
	req := newReq(t, "GET", url, "")
	// What cloud.google.com/go/storage sends with WithPolicy(RetryNever).
	req.Header.Set("x-goog-api-client", "gccl-invocation-id/5c9d4f1e-0b7a-4c1e-9a51-2f0e4b8c7d11 gccl-attempt-count/1 gl-go/1.24.0 gccl/1.50.0")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 3 {
		t.Errorf("storage request with its retries off: status %d after %d server hits, final Stop %v; want 200 after 3 (the policy's attempts: the SDK will not retry)",
			resp.StatusCode, s.count(), stops)
	}
}

// A retry that the WithBeforeRetry hook refuses is never sent, and takes no
// send token: the hook runs before pacing, since a fixed rate's token cannot
// be given back. The scope's next request goes as if nothing happened.
func TestBeforeRetryRefusalKeepsTheFixedRateToken(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	p := policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 2, FailFast: true}}
	errNoToken := errors.New("no fresh token")
	tr, clock := newTransport(t, s, p, retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error {
		return errNoToken
	}))
	p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
	// A: one token for its attempt; 0.5 s backoff refills half a token;
	// the refused retry takes one: 0.5 left instead of 1.5.
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || s.count() != 1 {
		t.Fatalf("first request: %d after %d hits; want the 503 after 1 (the hook refused the retry)", resp.StatusCode, s.count())
	}
	resp, err = tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Errorf("second request, right after: %v; want it sent: only one send of the burst of 2 went out in the last 0.5 s", err)
		return
	}
	resp.Body.Close()
}

// With Policy.AttemptHeader set, the first attempt is a copy of the
// caller's request sharing its body. When the pacing wait before it ends
// exactly at MaxTotalTime, the attempt is not sent and the caller's body is
// closed once, not once for the copy and once for the caller.
func TestAttemptHeaderBudgetSpentClosesTheBodyOnce(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{
		AttemptHeader: "X-Attempt",
		MaxTotalTime:  time.Second,
		RateLimit:     &ratelimit.Fixed{Rate: 1, Burst: 1},
	}
	tr, clock := newTransport(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	// The next token is 1 s away: the wait ends exactly at MaxTotalTime.
	body := &closeCounter{Reader: strings.NewReader("payload")}
	req := newReq(t, "PUT", url, "")
	req.Body, req.ContentLength = body, 7
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
	_, err = tr.RoundTrip(req)
	if !errors.Is(err, retrytransport.ErrBudget) {
		t.Fatalf("second RoundTrip error = %v; want ErrBudget before the first attempt", err)
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("request body closed %d times; want 1", n)
	}
}

// The hook's prev is the Event that announced the retry, as the observer
// saw it: its Waited does not include its own Delay.
func TestBeforeRetrySeesTheAnnouncedEvent(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	var announced, prev retrytransport.Event
	tr, _ := newTransport(t, s, policy.Policy{},
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if !e.Final {
				announced = e
			}
		}),
		retrytransport.WithBeforeRetry(func(_ *http.Request, e retrytransport.Event) error {
			prev = e
			return nil
		}))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if prev.Waited != announced.Waited || prev.Delay != announced.Delay {
		t.Errorf("hook's prev: Waited %v, Delay %v; the announcing event: Waited %v, Delay %v; want the same event (Waited without Delay)",
			prev.Waited, prev.Delay, announced.Waited, announced.Delay)
	}
}
