package retrytransport_test

// Rate limiters: the adaptive limiter's pacing after throttles, a fixed
// rate, limiters the caller implements, and the send token a wait or a
// refused attempt must not keep or spend.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
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
	tr := newRig(t, s, policy.Adaptive(), adaptiveOnRig())
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
	if waits := tr.clock.Sleeps(); len(waits) < 2 {
		t.Errorf("waits = %v; want the limiter to pace attempts after the throttle", waits)
	}
	if got := s.count(); got != 21 {
		t.Errorf("attempts = %d; want 21 (20 requests, one retry)", got)
	}
}

func TestAdaptiveNeverDelaysAnUnthrottledScope(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr := newRig(t, s, policy.Adaptive(), adaptiveOnRig())
	for range 50 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if waits := tr.clock.Sleeps(); len(waits) != 0 {
		t.Errorf("waits = %v; want none before any throttle", waits)
	}
}

func TestAdaptiveFailFast(t *testing.T) {
	s := throttleThenOK(1000)
	p := policy.Standard()
	p.MaxAttempts = 1 + 1
	// No retries after throttles beyond MaxAttempts: their growing backoffs
	// are not the limiter's waits, which this test bounds.
	p.Limiter = &ratelimit.Adaptive{FailFast: true, ThrottleRetries: -1}
	tr := newRig(t, s, p)
	p.Limiter.(*ratelimit.Adaptive).Now = tr.clock.Now
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
	for _, w := range tr.clock.Sleeps() {
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
	tr := newRig(t, s, p)
	p.Limiter.(*ratelimit.Adaptive).Now = tr.clock.Now
	ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(time.Second))
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
	if waits := tr.clock.Sleeps(); len(waits) != 0 {
		t.Errorf("waits = %v; want none: the pacing wait ends past the deadline", waits)
	}
}

// In adaptive mode the retry quota must still refill on first-attempt
// successes; one SDK forgets to, and its quota then never recovers (docs/aws.md).
func TestAdaptiveQuotaStillRefills(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200}}}
	q := &quota.Bucket{}
	p := policy.Adaptive()
	p.Quota = q
	tr := newRig(t, s, p, adaptiveOnRig())
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
	tr := newRig(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
	for range 3 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}
	if diff := cmp.Diff(want, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedRateFailFastBeforeFirstAttempt(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Standard()
	p.RateLimit = &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}
	tr := newRig(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
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
		p.Quota = &quota.Bucket{Capacity: 10} // one throttled retry's worth (TimeoutCost 10)
		p.Limiter = &ratelimit.Adaptive{Reference: reference}
		tr := newRig(t, s, p)
		p.Quota.(*quota.Bucket).Now, p.Limiter.(*ratelimit.Adaptive).Now = tr.clock.Now, tr.clock.Now
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

// TestRetryThatCannotRewindTakesNoSendToken: a retry whose GetBody fails
// is refused before it is paced, so it takes no send token of the scope's
// fixed rate, which x/time/rate could not give back: the next request is
// not refused by the FailFast limiter.
func TestRetryThatCannotRewindTakesNoSendToken(t *testing.T) {
	s := &script{steps: []step{{status: 503, body: "busy"}, {status: 200}}}
	lim := &ratelimit.Fixed{Rate: 10, Burst: 1, FailFast: true} // one token per 100 ms
	tr := newRig(t, s, policy.Policy{RateLimit: lim})
	lim.Now = tr.clock.Now
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

// movingLimiter is a Limiter of the user's own whose queue moves: the
// first reservation is due in 40 ms, and asked again it says 30 ms more,
// as if a throttle had lowered the rate meanwhile.
type movingLimiter struct {
	calls
	asked  int
	issued int
}

func (m *movingLimiter) Reserve(scope string) (ratelimit.Reservation, time.Duration, bool) {
	m.issued++
	if m.issued > 1 {
		return ratelimit.Reservation{}, 0, true
	}
	return ratelimit.NewReservation(m, scope, ratelimit.Ticket{Seq: 1}), 40 * time.Millisecond, true
}

func (m *movingLimiter) Delay(r ratelimit.Reservation) time.Duration {
	m.asked++
	m.add("Delay " + r.Scope())
	if m.asked == 1 {
		return 30 * time.Millisecond
	}
	return 0
}

func (m *movingLimiter) Cancel(r ratelimit.Reservation) { m.add("Cancel") }

func (m *movingLimiter) Fallbacks(scope string) uint64 { return 5 }

// learningLimiter is a movingLimiter that implements ratelimit.Recorder.
type learningLimiter struct{ movingLimiter }

func (l *learningLimiter) Record(scope string, k classify.Kind) { l.add("Record " + k.String()) }

// TestPolicyTakesAnyLimiter: a Limiter of the user's own paces attempts
// through its reservations, asked again after each wait, and one that
// records outcomes hears every attempt and frees throttle retries from
// the quota, while one that does not is charged for them.
func TestPolicyTakesAnyLimiter(t *testing.T) {
	for _, learn := range []bool{false, true} {
		s := &script{steps: []step{{status: 429}, {status: 200}}}
		p := policy.Standard()
		q := &loggedQuota{}
		p.Quota = q
		var l interface {
			ratelimit.Limiter
			get() []string
		}
		if learn {
			l = &learningLimiter{}
		} else {
			l = &movingLimiter{}
		}
		p.Limiter = l
		tr := newRig(t, s, p)
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		// Half of the 40 ms, then asked again: 30 ms more, of which half,
		// then asked again: due. Then the backoff before the retry.
		sleeps := tr.clock.Sleeps()
		if len(sleeps) < 2 || sleeps[0] != 20*time.Millisecond || sleeps[1] != 15*time.Millisecond {
			t.Errorf("learn=%t: sleeps = %v; want 20ms, 15ms first (the reservation asked again after each part)", learn, sleeps)
		}
		wantLimiter := []string{"Delay api.example.com", "Delay api.example.com"}
		wantQuota := []string{"Acquire api.example.com throttle", "Refund api.example.com"} // charged, and refunded when the retry succeeds
		if learn {
			wantLimiter = append(wantLimiter, "Record throttle", "Record success")
			wantQuota = nil // a limiter that learns paces throttles, so their retries are free
		}
		if diff := cmp.Diff(wantLimiter, l.get()); diff != "" {
			t.Errorf("learn=%t: calls to the limiter mismatch (-want +got):\n%s", learn, diff)
		}
		if diff := cmp.Diff(wantQuota, q.get()); diff != "" {
			t.Errorf("learn=%t: calls to the quota mismatch (-want +got):\n%s", learn, diff)
		}
		if snap := tr.Snapshot(); len(snap) != 1 || snap[0].Fallbacks != 7+5 {
			t.Errorf("learn=%t: Snapshot = %+v; want Fallbacks 12 (quota 7 + limiter 5)", learn, snap)
		}
	}
}

// TestPacingBeforeTheFirstAttemptKeepsTheTimeLimit: a fixed rate whose
// token is spent needs a 400 ms wait, but MaxTotalTime is 100 ms. The wait
// is not started; the error says the time limit ran out, comes before any
// attempt (a *RetryError of 0 attempts), and the request body, which has GetBody, is closed as the RoundTripper
// contract requires.
func TestPacingBeforeTheFirstAttemptKeepsTheTimeLimit(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{MaxTotalTime: 100 * time.Millisecond, RateLimit: &ratelimit.Fixed{Rate: 2.5, Burst: 1}}
	tr := newRig(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
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
	if !errors.Is(err, retrytransport.ErrTimeLimit) || !errors.As(err, &re) || re.Attempts != 0 {
		t.Errorf("RoundTrip error = %v; want ErrTimeLimit before any attempt, a *RetryError of 0 attempts", err)
	}
	if n := s.count(); n != 1 {
		t.Errorf("attempts = %d; want only the first request's", n)
	}
	for _, d := range tr.clock.Sleeps() {
		if d > p.MaxTotalTime {
			t.Errorf("waited %v; want no wait past MaxTotalTime %v", d, p.MaxTotalTime)
		}
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("request body closed %d times; want 1", n)
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
	if q := tr.Snapshot()[0].Quota; q != quota.DefaultCapacity {
		t.Errorf("quota = %v; want %d, the retry's cost refunded", q, quota.DefaultCapacity)
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("the 503's body closed %d times; want 1", n)
	}
}

// A retry after a throttle that the limiter paces does not use up one of
// MaxAttempts, up to the limiter's allowance: the request that met the
// server while the limiter was still finding its rate gets through
// (ratelimit.Adaptive's ThrottleRetries). Other failures count as before,
// and the allowance ends.
func TestPacedThrottlesDoNotUseUpAttempts(t *testing.T) {
	tests := []struct {
		name      string
		allowance int
		reference bool
		steps     []step
		attempts  int
		mark      string // amz-sdk-request
		want      int    // the status the caller gets
	}{
		{"ThrottlesWithinAllowance", 3, false, throttleThenOK(5).steps, 6, "", 200},
		{"AllowanceSpent", 2, false, throttleThenOK(9).steps, 5, "", 429},
		{"NoAllowance", -1, false, throttleThenOK(5).steps, 3, "", 429},
		{"DefaultAllowance", 0, false, throttleThenOK(ratelimit.DefaultThrottleRetries + 2).steps, ratelimit.DefaultThrottleRetries + 3, "", 200},
		{"DefaultAllowanceSpent", 0, false, throttleThenOK(20).steps, ratelimit.DefaultThrottleRetries + 3, "", 429},
		{"OtherFailuresCount", 3, false, []step{{status: 503}, {status: 503}, {status: 429}, {status: 200}}, 4, "", 200},
		{"OnlyThrottlesAreFree", 3, false, []step{{status: 503}, {status: 503}, {status: 503}, {status: 200}}, 3, "", 503},
		{"ReferenceModeChargesThrottles", 3, true, throttleThenOK(5).steps, 3, "", 429},
		// The SDK's last attempt gets what is left of MaxAttempts (5)
		// after its two earlier ones, and no more: the server sees at
		// most 5 per call.
		{"SDKsLastAttempt", 3, false, throttleThenOK(5).steps, 3, "attempt=3; max=3", 429},
		{"SDKRetriesItself", 3, false, throttleThenOK(5).steps, 1, "attempt=1; max=3", 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := faketime.NewAt(time.Now())
			s := &script{steps: tt.steps}
			p := policy.Adaptive()
			p.MaxAttempts = 3
			if tt.mark != "" {
				p.MaxAttempts = 5
			}
			p.Quota = quota.None // what reference mode charges is not what is tested
			p.Limiter = &ratelimit.Adaptive{Now: clock.Now, Reference: tt.reference, ThrottleRetries: tt.allowance}
			tr := newRig(t, s, p, onClock(clock), recordFinals())
			req := newReq(t, "GET", url, "")
			if tt.mark != "" {
				req.Header.Set("amz-sdk-request", tt.mark)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d; want %d", resp.StatusCode, tt.want)
			}
			if got := s.count(); got != tt.attempts {
				t.Errorf("attempts = %d; want %d", got, tt.attempts)
			}
			finals := tr.finalEvents()
			wantStop := retrytransport.ErrExhausted
			if tt.mark == "attempt=1; max=3" {
				wantStop = retrytransport.ErrSDKRetries
			}
			if tt.want != 200 && (len(finals) != 1 || !errors.Is(finals[0].Stop, wantStop)) {
				t.Errorf("final events %+v; want one whose Stop is %v", finals, wantStop)
			}
		})
	}
}

// MaxAttempts 1 turns retries off, those after paced throttles too.
func TestOneAttemptHasNoThrottleRetries(t *testing.T) {
	clock := faketime.NewAt(time.Now())
	s := throttleThenOK(5)
	p := policy.Adaptive()
	p.MaxAttempts = 1
	p.Limiter = &ratelimit.Adaptive{Now: clock.Now, ThrottleRetries: 3}
	tr := newRig(t, s, p, onClock(clock))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || s.count() != 1 {
		t.Errorf("status %d after %d attempts; want the 429 of the only attempt", resp.StatusCode, s.count())
	}
}

// A retry after a throttle that the adaptive limiter paces waits for its
// send token only: the limiter slowed the scope for that throttle already,
// and a backoff on top would slow the request twice. In reference mode,
// where the limiter asks for throttles to be charged as the AWS SDKs do,
// the backoff stays, and so it does for other failures.
func TestPacedThrottleRetryWaitsForItsTokenOnly(t *testing.T) {
	const backoffWait = 700 * time.Millisecond
	tests := []struct {
		name      string
		reference bool
		steps     []step
		backoff   bool // the retries wait the backoff
	}{
		{"Throttles", false, throttleThenOK(4).steps, false},
		{"ReferenceMode", true, throttleThenOK(2).steps, true},
		{"ServerErrors", false, []step{{status: 503}, {status: 503}, {status: 200}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := faketime.NewAt(time.Now())
			s := &script{steps: tt.steps}
			p := policy.Adaptive()
			p.Backoff = backoff.Constant{Interval: backoffWait}
			p.Limiter = &ratelimit.Adaptive{Now: clock.Now, Reference: tt.reference}
			tr := newRig(t, s, p, onClock(clock))
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || s.count() != len(tt.steps) {
				t.Fatalf("status %d after %d attempts; want 200 after %d", resp.StatusCode, s.count(), len(tt.steps))
			}
			var backedOff int
			for _, d := range clock.Sleeps() {
				if d == backoffWait {
					backedOff++
				}
			}
			if want := 0; tt.backoff {
				want = len(tt.steps) - 1
				if backedOff != want {
					t.Errorf("sleeps %v: %d of the backoff's %v; want %d", clock.Sleeps(), backedOff, backoffWait, want)
				}
			} else if backedOff != want {
				t.Errorf("sleeps %v: %d of the backoff's %v; want none, only the send tokens' waits", clock.Sleeps(), backedOff, backoffWait)
			}
			// Four throttles in a row on a fresh scope: the decreases take
			// the rate from its cold start of 10 req/s to 2.4, and the
			// waits for the tokens add up to about a second, where the
			// backoff alone would have slept 2.8 s.
			if !tt.backoff {
				var sum time.Duration
				for _, d := range clock.Sleeps() {
					sum += d
				}
				if sum > 1500*time.Millisecond {
					t.Errorf("the retries waited %v in all (%v); want under 1.5 s", sum, clock.Sleeps())
				}
			}
		})
	}
}
