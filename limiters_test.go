package retrytransport_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// calls records the method calls of the test implementations below.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// loggedQuota is a RetryQuota of the user's own: an in-process Quota that
// logs every call and reports a fallback count, as a store-backed quota
// would.
type loggedQuota struct {
	calls
	q ratelimit.Quota
}

func (l *loggedQuota) Acquire(scope string, k classify.Kind) (int, time.Duration, bool) {
	l.add("Acquire " + k.String())
	return l.q.Acquire(scope, k)
}
func (l *loggedQuota) Refund(scope string, cost int) { l.add("Refund"); l.q.Refund(scope, cost) }
func (l *loggedQuota) Success(scope string)          { l.add("Success"); l.q.Success(scope) }
func (l *loggedQuota) Level(scope string) float64    { return l.q.Level(scope) }
func (l *loggedQuota) Fallbacks(scope string) uint64 { return 7 }

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
func (m *movingLimiter) Fallbacks(scope string) uint64  { return 5 }

// learningLimiter is a movingLimiter that implements ratelimit.Recorder.
type learningLimiter struct{ movingLimiter }

func (l *learningLimiter) Record(scope string, k classify.Kind) { l.add("Record " + k.String()) }

func TestPolicyTakesAnyRetryQuota(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	p := policy.Standard()
	q := &loggedQuota{}
	p.Quota = q
	tr, _ := newTransport(t, s, p)
	for range 2 { // a retry, then a first-attempt success
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{"Acquire transient", "Refund", "Success"}
	if diff := cmp.Diff(want, q.get()); diff != "" {
		t.Errorf("calls to the policy's quota mismatch (-want +got):\n%s", diff)
	}
	snap := tr.Snapshot()
	if len(snap) != 1 || snap[0].Fallbacks != 7 || snap[0].Quota != 500 {
		t.Errorf("Snapshot = %+v; want one scope with Fallbacks 7 (the quota's FallbackCounter) and Quota 500", snap)
	}
}

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
		tr, clock := newTransport(t, s, p)
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		// Half of the 40 ms, then asked again: 30 ms more, of which half,
		// then asked again: due. Then the backoff before the retry.
		sleeps := clock.Sleeps()
		if len(sleeps) < 2 || sleeps[0] != 20*time.Millisecond || sleeps[1] != 15*time.Millisecond {
			t.Errorf("learn=%t: sleeps = %v; want 20ms, 15ms first (the reservation asked again after each part)", learn, sleeps)
		}
		wantLimiter := []string{"Delay api.example.com", "Delay api.example.com"}
		wantQuota := []string{"Acquire throttle", "Refund"} // charged, and refunded when the retry succeeds
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

// TestRetryBudgetCountsEveryRequest: a ratelimit.Budget as the policy's
// quota hears of every request, failed ones included, and grants retries
// in proportion: half of 20 requests to a failing server, none beyond.
func TestRetryBudgetCountsEveryRequest(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	p := policy.Standard()
	b := &ratelimit.Budget{Ratio: 0.5, MinPerSecond: -1}
	p.Quota = b
	tr, clock := newTransport(t, s, p)
	b.Now = clock.Now
	refused := 0
	for range 20 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, st := range tr.Snapshot() {
		refused += int(st.QuotaRefusals)
	}
	s.mu.Lock()
	calls := s.calls
	s.mu.Unlock()
	if calls != 20+10 {
		t.Errorf("attempts for 20 failing requests with a budget of half the requests = %d; want 30", calls)
	}
	if refused != 20 {
		t.Errorf("retries refused = %d; want 20: every request's first retry or, for the 10 granted one, its second", refused)
	}
}

// TestRetryBudgetCountsRequestsOfOneAttempt: requests under a policy of a
// single attempt, which the transport sends without its attempt loop,
// still count towards a budget that other policies share.
func TestRetryBudgetCountsRequestsOfOneAttempt(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.None()
	b := &ratelimit.Budget{Ratio: 0.5, MinPerSecond: -1}
	p.Quota = b
	tr, clock := newTransport(t, s, p)
	b.Now = clock.Now
	for range 4 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if l := b.LevelAt(clock.Now(), "api.example.com"); l != 2 {
		t.Errorf("budget level after 4 single-attempt requests at ratio 0.5 = %v; want 2", l)
	}
}
