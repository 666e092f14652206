package retrytransport_test

// The retry quota and the retry budget: what a retry costs and where,
// refills and refunds, scope functions, a quota in Wait mode, quotas the
// caller implements, no quota, and a budget beside the quota.

import (
	"errors"
	"io"
	"net/http"
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

func TestQuotaExhaustionStopsRetries(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	q := &quota.Bucket{Capacity: 12} // two retries at cost 5
	tr := newRig(t, s, policy.Policy{MaxAttempts: 10, Quota: q})
	_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if !errors.Is(err, quota.ErrExceeded) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RoundTrip error = %v; want quota.ErrExceeded wrapping the last error", err)
	}
	if got := s.count(); got != 3 {
		t.Errorf("attempts = %d; want 3 (two paid retries)", got)
	}
	var re *retrytransport.RetryError
	if errors.As(err, &re) && re.Attempts != 3 {
		t.Errorf("RetryError.Attempts = %d; want 3", re.Attempts)
	}
}

func TestQuotaIsPerHost(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	p := policy.Policy{MaxAttempts: 2, Quota: &quota.Bucket{Capacity: 5}}
	tr := newRig(t, s, p)
	for _, u := range []string{"http://a.example/", "http://a.example/", "http://b.example/"} {
		resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
		if err != nil {
			t.Fatalf("RoundTrip(%s): %v", u, err)
		}
		resp.Body.Close()
	}
	// a: 2 attempts, then 1 (quota of a empty); b: 2 attempts.
	if got := s.count(); got != 5 {
		t.Errorf("attempts = %d; want 5", got)
	}
}

func TestQuotaRefillsOnSuccess(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	q := &quota.Bucket{}
	tr := newRig(t, s, policy.Policy{Quota: q})
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if got := q.Level("api.example.com"); got != quota.DefaultCapacity {
		t.Errorf("quota level after a successful retry = %v; want %d (the retry cost refunded)", got, quota.DefaultCapacity)
	}
}

// Two transports built with the same policy value each make their own
// quota for its nil Quota, but share the Limiter it holds, per scope: a
// throttle one of them gets enables the limiter of that scope for the
// other too, and for no other scope.
func TestEachNewOwnsItsQuotaButSharesThePolicysLimiter(t *testing.T) {
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 2, Limiter: &ratelimit.Adaptive{Now: clock.Now}}
	s := &script{answer: func(_ int, req *http.Request) step {
		if req.URL.Path == "/throttled" {
			return step{status: 429}
		}
		return step{status: 503}
	}}
	tr1 := newRig(t, s, p, onClock(clock))
	tr2 := newRig(t, s, p, onClock(clock))
	// 100 failing requests drain tr1's default quota (100 retries at 5).
	for range 101 {
		tr1.get(t, url)
	}
	before := s.count()
	tr2.get(t, url)
	if got := s.count() - before; got != 2 {
		t.Errorf("second transport made %d attempts; want 2 (its own quota is full)", got)
	}
	tr1.get(t, "http://api.example.com/throttled")
	tr2.get(t, "http://other.example.com/")
	if st := tr2.scopeStats("api.example.com"); !st.Adaptive.Enabled {
		t.Errorf("second transport's limiter state of api.example.com = %+v after the first got a 429 there; want it enabled: the limiter is the policy's, shared", st.Adaptive)
	}
	if st := tr2.scopeStats("other.example.com"); st.Adaptive.Enabled {
		t.Errorf("second transport's limiter state of other.example.com = %+v; want it not enabled: no throttle came from that scope", st.Adaptive)
	}
}

// quota.None turns the quota off: nothing limits retries but
// MaxAttempts (far more than a default quota of 500 tokens pays for at 5
// each), and the quota's level is -1, as for a policy without one.
func TestNoQuota(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 200, Quota: quota.None}, recordEvents())
	_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if !errors.Is(err, retrytransport.ErrExhausted) || s.count() != 200 {
		t.Errorf("RoundTrip = %v after %d attempts; want ErrExhausted after 200", err, s.count())
	}
	if st := tr.scopeStats("api.example.com"); st.Quota != -1 {
		t.Errorf("Snapshot Quota = %v; want -1 (no quota)", st.Quota)
	}
	for _, ev := range tr.heard() {
		if ev.Quota != -1 {
			t.Fatalf("Event %d Quota = %v; want -1 (no quota)", ev.Attempt, ev.Quota)
		}
	}
}

func TestScopeFunctionSplitsQuota(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	p := policy.Policy{
		MaxAttempts: 2,
		Quota:       &quota.Bucket{Capacity: 5},
		Scope:       func(r *http.Request) string { return r.Header.Get("X-Table") },
	}
	tr := newRig(t, s, p)
	send := func(table string) int {
		before := s.count()
		req := newReq(t, "GET", url, "")
		req.Header.Set("X-Table", table)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip(%s): %v", table, err)
		}
		resp.Body.Close()
		return s.count() - before
	}
	if a1, a2, b := send("orders"), send("orders"), send("users"); a1 != 2 || a2 != 1 || b != 2 {
		t.Errorf("attempts orders, orders, users = %d, %d, %d; want 2, 1, 2 (one quota per table)", a1, a2, b)
	}
}

// A quota in Wait mode whose refill would take longer than a Duration
// holds is refused as too slow, like any refill past MaxDelay: the
// backoff plus that wait does not wrap around to a negative wait that is
// sent at once.
func TestQuotaWaitTooLongToHoldIsRefused(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	srv := serve(t, s)
	var delays []time.Duration
	p := policy.Policy{
		MaxAttempts: 3,
		Backoff:     backoff.Constant{Interval: time.Second},
		Quota:       &quota.Bucket{Capacity: 5, RetryCost: 5, Wait: true, RefillPerSecond: 1e-300},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ev := range tr.heard() {
		if !ev.Final {
			delays = append(delays, ev.Delay)
		}
	}
	stop := tr.stop()
	// The first retry empties the bucket; the second would wait for 5
	// tokens at 1e-300 a second.
	if s.count() != 2 || !equalDurations(delays, []time.Duration{time.Second}) {
		t.Errorf("%d attempts, retry delays %v; want 2 attempts and delays [1s]", s.count(), delays)
	}
	if !errors.Is(stop, quota.ErrExceeded) {
		t.Errorf("stop = %v; want quota.ErrExceeded", stop)
	}
}

// loggedQuota is a quota.Quota of the user's own: an in-process Quota that
// logs every call that changes it, with its scope, and reports a fallback
// count, as a store-backed quota would.
type loggedQuota struct {
	calls
	q quota.Bucket
}

func (l *loggedQuota) Acquire(scope string, k classify.Kind) (int, time.Duration, bool) {
	l.add("Acquire " + scope + " " + k.String())
	return l.q.Acquire(scope, k)
}
func (l *loggedQuota) Refund(scope string, cost int) {
	l.add("Refund " + scope)
	l.q.Refund(scope, cost)
}
func (l *loggedQuota) Success(scope string)          { l.add("Success " + scope); l.q.Success(scope) }
func (l *loggedQuota) Level(scope string) float64    { return l.q.Level(scope) }
func (l *loggedQuota) Fallbacks(scope string) uint64 { return 7 }

func TestPolicyTakesAnyRetryQuota(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	p := policy.Standard()
	q := &loggedQuota{}
	p.Quota = q
	tr := newRig(t, s, p)
	for range 2 { // a retry, then a first-attempt success
		tr.get(t, url)
	}
	want := []string{"Acquire api.example.com transient", "Refund api.example.com", "Success api.example.com"}
	if diff := cmp.Diff(want, q.get()); diff != "" {
		t.Errorf("calls to the policy's quota mismatch (-want +got):\n%s", diff)
	}
	snap := tr.Snapshot()
	if len(snap) != 1 || snap[0].Fallbacks != 7 || snap[0].Quota != 500 {
		t.Errorf("Snapshot = %+v; want one scope with Fallbacks 7 (the quota's FallbackCounter) and Quota 500", snap)
	}
}

// halfBudgetRig returns a rig over s for p with, as p's Budget and in
// place of its quota, a quota.Budget that grants retries to half the
// requests, with no floor, on the rig's clock.
func halfBudgetRig(t *testing.T, s *script, p policy.Policy) (*rig, *quota.Budget) {
	t.Helper()
	b := &quota.Budget{Ratio: 0.5, MinPerSecond: -1}
	p.Quota, p.Budget = quota.None, b
	tr := newRig(t, s, p)
	b.Now = tr.clock.Now
	return tr, b
}

// TestRetryBudgetCountsEveryRequest: a quota.Budget as the policy's
// Budget hears of every request, failed ones included, and grants retries
// in proportion: half of 20 requests to a failing server, none beyond.
func TestRetryBudgetCountsEveryRequest(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr, _ := halfBudgetRig(t, s, policy.Standard())
	refused := 0
	for range 20 {
		tr.get(t, url)
	}
	for _, st := range tr.Snapshot() {
		refused += int(st.BudgetRefusals)
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
	tr, b := halfBudgetRig(t, s, policy.None())
	for range 4 {
		tr.get(t, url)
	}
	if l := b.LevelAt(tr.clock.Now(), "api.example.com"); l != 2 {
		t.Errorf("budget level after 4 single-attempt requests at ratio 0.5 = %v; want 2", l)
	}
}

// The budget is kept in the request's own scope, beside the quota, and each
// keeps its own cost: a retry pays both, a refusal of either stops it.
func TestBudgetBesideQuota(t *testing.T) {
	srv := newEndpointServer(t, 503)
	clock := faketime.NewAt(time.Now())
	budget := &quota.Budget{Ratio: 0.5, MinPerSecond: -1, Now: clock.Now}
	tr := newRig(t, nil, policy.Policy{MaxAttempts: 2, Budget: budget}, backoffUnlessSet(everySecond))
	var refused int
	for range 20 {
		resp := tr.get(t, srv.URL)
		if got := retrytransport.ResponseAttempts(resp).Count; got <= 1 {
			refused++
		}
	}
	if n := srv.n.Load(); n != 30 || refused != 10 {
		t.Errorf("%d attempts, %d requests refused a retry; want 30 and 10 (the budget: half the requests)", n, refused)
	}
	snap := tr.Snapshot()
	if len(snap) != 1 || snap[0].Quota != quota.DefaultCapacity-10*quota.DefaultRetryCost {
		t.Errorf("snapshot %+v; want the quota paid for 10 retries at %d", snap, quota.DefaultRetryCost)
	}
}

// A refusal says which pays no more, by the field that refused: the
// policy's Quota stops with quota.ErrExceeded, its Budget with
// quota.ErrOverBudget, whatever the value's type.
func TestRefusalSaysWhichQuota(t *testing.T) {
	spent := func() quota.Quota { return &quota.Budget{Ratio: -1, MinPerSecond: -1} } // grants nothing
	tests := []struct {
		name        string
		p           policy.Policy
		want, other error
	}{
		{"Quota", policy.Policy{Quota: &quota.Bucket{Capacity: 1}}, quota.ErrExceeded, quota.ErrOverBudget},
		{"Budget", policy.Policy{Quota: quota.None, Budget: spent()}, quota.ErrOverBudget, quota.ErrExceeded},
		{"BucketAsBudget", policy.Policy{Quota: quota.None, Budget: &quota.Bucket{Capacity: 1}}, quota.ErrOverBudget, quota.ErrExceeded},
		{"BucketFirst", policy.Policy{Quota: &quota.Bucket{Capacity: 1}, Budget: spent()}, quota.ErrExceeded, quota.ErrOverBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
			tt.p.MaxAttempts = 3
			_, err := newRig(t, s, tt.p).RoundTrip(newReq(t, "GET", url, ""))
			if !errors.Is(err, tt.want) || errors.Is(err, tt.other) {
				t.Errorf("RoundTrip error = %v; want %v and not %v", err, tt.want, tt.other)
			}
			if got := s.count(); got != 1 {
				t.Errorf("attempts = %d; want 1: the retry was refused", got)
			}
		})
	}
}

// With failover, the budget stays in the request's own scope: retries that
// go to the secondary are counted against the primary's requests.
func TestBudgetStaysInTheRequestsScope(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 503)
	clock := faketime.NewAt(time.Now())
	budget := &quota.Budget{Ratio: 0.5, MinPerSecond: -1, Now: clock.Now}
	tr := newRig(t, nil, policy.Policy{MaxAttempts: 2, Budget: budget, Failover: &policy.Failover{Endpoints: []string{secondary.host()}}}, backoffUnlessSet(everySecond))
	for range 20 {
		tr.get(t, primary.URL)
	}
	if p, s := primary.n.Load(), secondary.n.Load(); p != 20 || s != 10 {
		// Charged to the secondary's scope, which has no requests and no
		// floor, every retry would be refused.
		t.Errorf("primary %d, secondary %d attempts; want 20 and 10: half the primary's requests retried at the secondary", p, s)
	}
}

// One rule says which scope pays for a retry, whatever the type: Quota
// the scope the retry goes to, Budget the request's own. Both are the same
// type here: a read whose retries go to the secondary and back to the
// primary pays the Quota at each in turn, and the Budget at the primary
// twice. Each Event shows the Quota of its own scope: the primary's is
// untouched after the first attempt, as its retry was paid at the
// secondary.
func TestQuotaPaidWhereTheRetryGoesBudgetAtHome(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 503)
	ph, sh := primary.host(), secondary.host()
	q, b := &loggedQuota{}, &loggedQuota{}
	p := policy.Policy{MaxAttempts: 3, Quota: q, Budget: b, Failover: &policy.Failover{Endpoints: []string{sh}}}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordEvents())
	tr.get(t, primary.URL)
	if diff := cmp.Diff([]string{"Acquire " + sh + " transient", "Acquire " + ph + " transient"}, q.get()); diff != "" {
		t.Errorf("calls to Quota mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Acquire " + ph + " transient", "Acquire " + ph + " transient"}, b.get()); diff != "" {
		t.Errorf("calls to Budget mismatch (-want +got):\n%s", diff)
	}
	type scoped struct {
		Scope string
		Quota float64
	}
	var got []scoped
	for _, ev := range tr.heard() {
		got = append(got, scoped{ev.Scope, ev.Quota})
	}
	want := []scoped{{ph, 500}, {sh, 495}, {ph, 495}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events' scope and quota level mismatch (-want +got):\n%s", diff)
	}
}
