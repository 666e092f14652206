package retrytransport_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// throttleThenOK answers 429 to the first n attempts, then 200.
func throttleThenOK(n int) *script {
	steps := make([]step, 0, n+1)
	for range n {
		steps = append(steps, step{status: 429})
	}
	return &script{steps: append(steps, step{status: 200})}
}

func TestAdaptivePacesFirstAttemptsAfterAThrottle(t *testing.T) {
	s := throttleThenOK(1)
	tr, clock := newTransport(t, s, policy.Adaptive())
	for i := range 20 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
	}
	stats := tr.Snapshot()
	if len(stats) != 1 || !stats[0].Adaptive.Enabled || stats[0].Throttles != 1 {
		t.Fatalf("Snapshot() = %+v; want one scope whose adaptive limiter is enabled after 1 throttle", stats)
	}
	// One backoff before the retry of the throttled request; every other
	// wait is the limiter pacing an attempt.
	if waits := clock.Sleeps(); len(waits) < 2 {
		t.Errorf("waits = %v; want the limiter to pace attempts after the throttle", waits)
	}
	if got := s.count(); got != 21 {
		t.Errorf("attempts = %d; want 21 (20 requests, one retry)", got)
	}
}

func TestAdaptiveNeverDelaysAnUnthrottledScope(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr, clock := newTransport(t, s, policy.Adaptive())
	for range 50 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if waits := clock.Sleeps(); len(waits) != 0 {
		t.Errorf("waits = %v; want none before any throttle", waits)
	}
}

func TestAdaptiveFailFast(t *testing.T) {
	s := throttleThenOK(1000)
	p := policy.Standard()
	p.MaxAttempts = 1 + 1
	p.Limiter = &ratelimit.Adaptive{FailFast: true}
	tr, clock := newTransport(t, s, p)
	p.Limiter.(*ratelimit.Adaptive).Now = clock.Now
	var err error
	for i := 0; i < 50 && err == nil; i++ {
		var resp *http.Response
		if resp, err = tr.RoundTrip(newReq(t, "GET", url, "")); resp != nil {
			resp.Body.Close()
		}
	}
	if !errors.Is(err, ratelimit.ErrRateLimited) {
		t.Fatalf("RoundTrip error = %v; want ErrRateLimited once the limiter needs a wait", err)
	}
	if stats := tr.Snapshot(); len(stats) != 1 || stats[0].RateLimited == 0 {
		t.Errorf("Snapshot() = %+v; want RateLimited counted", stats)
	}
	for _, w := range clock.Sleeps() {
		if w > 2*time.Second {
			t.Errorf("a fail-fast limiter waited %v", w)
		}
	}
}

func TestAdaptivePacingHonoursDeadline(t *testing.T) {
	s := throttleThenOK(1000)
	p := policy.Standard()
	p.MaxAttempts = 1
	// The reference algorithm drops to 0.5 req/s at its first throttle, so
	// the next attempt must wait about 2 s: past a deadline 1 s away.
	p.Limiter = &ratelimit.Adaptive{Reference: true}
	tr, clock := newTransport(t, s, p)
	p.Limiter.(*ratelimit.Adaptive).Now = clock.Now
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	var err error
	for i := 0; i < 50 && err == nil; i++ {
		var resp *http.Response
		if resp, err = tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx)); resp != nil {
			resp.Body.Close()
		}
	}
	if !errors.Is(err, retrytransport.ErrDeadline) {
		t.Errorf("RoundTrip error = %v; want ErrDeadline when the pacing wait passes the deadline", err)
	}
	// The wait is refused before any of it is slept, though the transport
	// sleeps a long wait in halves.
	if waits := clock.Sleeps(); len(waits) != 0 {
		t.Errorf("waits = %v; want none: the pacing wait ends past the deadline", waits)
	}
}

// In adaptive mode the retry quota must still refill on first-attempt
// successes; one SDK forgets to, and its quota then never recovers (docs/aws.md).
func TestAdaptiveQuotaStillRefills(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200}}}
	q := &ratelimit.Quota{}
	p := policy.Adaptive()
	p.Quota = q
	tr, _ := newTransport(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := q.Level("api.example.com"); got != 495 {
		t.Fatalf("quota after two retries, the last refunded = %v; want 495", got)
	}
	for range 3 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := q.Level("api.example.com"); got != 498 {
		t.Errorf("quota after 3 first-attempt successes = %v; want 498 (+1 each)", got)
	}
}

func TestFixedRateLimitPacesEveryAttempt(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Standard()
	p.RateLimit = &ratelimit.Fixed{Rate: 10, Burst: 1}
	tr, clock := newTransport(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
	for range 3 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}
	if diff := cmp.Diff(want, clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedRateFailFastBeforeFirstAttempt(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Standard()
	p.RateLimit = &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}
	tr, clock := newTransport(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	body := &closeCounter{}
	req := newReq(t, "PUT", url, "")
	req.Body = body
	_, err = tr.RoundTrip(req)
	if !errors.Is(err, ratelimit.ErrRateLimited) || s.count() != 1 {
		t.Errorf("second request: error = %v after %d attempts; want ErrRateLimited and no attempt", err, s.count())
	}
	if body.closed.Load() != 1 {
		t.Errorf("request body closed %d times; want 1", body.closed.Load())
	}
}

// TestAdaptiveThrottlesCostNoQuota checks that, with the adaptive limiter
// pacing the scope, a retry after a throttle takes nothing from the retry
// quota, so a replica throttled more than its quota pays for still gets its
// requests through; in reference mode throttles are charged, as in the SDKs.
func TestAdaptiveThrottlesCostNoQuota(t *testing.T) {
	for _, reference := range []bool{false, true} {
		s := throttleThenOK(2)
		p := policy.Standard()
		p.Quota = &ratelimit.Quota{Capacity: 10} // one throttled retry's worth (TimeoutCost 10)
		p.Limiter = &ratelimit.Adaptive{Reference: reference}
		tr, clock := newTransport(t, s, p)
		p.Quota.(*ratelimit.Quota).Now, p.Limiter.(*ratelimit.Adaptive).Now = clock.Now, clock.Now
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatalf("reference %t: RoundTrip: %v", reference, err)
		}
		resp.Body.Close()
		wantStatus, wantLevel := 200, 10.0
		if reference {
			wantStatus, wantLevel = 429, 0 // the first retry paid 10, the second was refused
		}
		stats := tr.Snapshot()
		if len(stats) != 1 || resp.StatusCode != wantStatus || stats[0].Quota != wantLevel {
			t.Errorf("reference %t: status %d, Snapshot %+v; want status %d, one scope with quota level %v", reference, resp.StatusCode, stats, wantStatus, wantLevel)
		}
	}
}

// A request waiting for its turn asks the limiter again, halfway through a
// wait over 10 ms and when the wait is over: a throttle of another request
// recorded meanwhile lowers the rate, and the request waits for its turn at
// the new rate rather than sending at the old one.
func TestAdaptiveWaiterFollowsRateChange(t *testing.T) {
	const scope = "api.example.com"
	clock := faketime.NewAt(time.Now())
	lim := &ratelimit.Adaptive{Now: clock.Now}
	// Scope throttled at a measured 10 req/s: fill rate 7, empty bucket.
	lim.Reserve(scope)
	for i := range 5 {
		clock.Advance(100 * time.Millisecond)
		k := classify.Success
		if i == 4 {
			k = classify.Throttle
		}
		lim.Record(scope, k)
	}
	lim.Reserve(scope) // another caller holds the next turn, due in 1/7 s
	p := policy.Standard()
	p.Limiter = lim
	var sleeps []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		if len(sleeps) == 0 {
			lim.Record(scope, classify.Throttle) // the other caller's answer: 7 -> 4.9 req/s
		}
		sleeps = append(sleeps, d)
		return clock.Sleep(ctx, d)
	}
	s := &script{steps: []step{{status: 200}}}
	tr := retrytransport.New(mockBase(s), retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The turn was 2/7 s away (285.7 ms): sleep half. The throttle
	// recorded as that sleep began makes the two turns take 2/4.9 s from
	// then; each answer is slept by half again down to 10 ms.
	var total time.Duration
	for _, d := range sleeps {
		total += d
	}
	rate := 4.9
	first, want := 142857143*time.Nanosecond, time.Duration(2/rate*float64(time.Second))
	if len(sleeps) < 3 || sleeps[0] != first || (total-want).Abs() > time.Microsecond {
		t.Errorf("sleeps = %v (total %v); want %v first, then asking again until %v in all", sleeps, total, first, want)
	}
}
