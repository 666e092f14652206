package retrytransport_test

// Hedging across endpoints: a hedge goes where a retry would, a
// secondary's 404 never wins over the primary, and each copy's outcome,
// timeout and event belong to the endpoint and scope it went to.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// bothFail starts a primary and a secondary for a race that both copies of
// an attempt lose, in order: the primary answers first, with status first,
// once the hedge has reached the secondary; the secondary answers second
// once the primary's answer was classified. The policy must classify with
// the returned Func.
func bothFail(t *testing.T, first, second int) (primary, secondary *faultServer, classified classify.Func) {
	t.Helper()
	hedgeIn := make(chan struct{})
	done := make(chan struct{})
	primary = newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !waitOr(hedgeIn, r) {
			return
		}
		w.WriteHeader(first)
	}))
	secondary = newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hedgeIn)
		if !waitOr(done, r) {
			return
		}
		w.WriteHeader(second)
	}))
	return primary, secondary, onClassified(first, done)
}

// gatedPair starts a primary and a secondary, each served by a gate that
// holds the requests primaryHolds and secondaryHolds say; a secondaryStatus
// other than 0 is the status of every answer the secondary gives.
func gatedPair(t *testing.T, primaryHolds, secondaryHolds func(int, *http.Request) bool, secondaryStatus int) (pg, sg *gate, primary, secondary *faultServer) {
	t.Helper()
	pg, sg = newGate(primaryHolds), newGate(secondaryHolds)
	if secondaryStatus != 0 {
		sg.status = func(int) int { return secondaryStatus }
	}
	return pg, sg, newFaultServer(t, pg), newFaultServer(t, sg)
}

// holdAll and holdNone are a gate's hold for every request and for none.
func holdAll(int, *http.Request) bool  { return true }
func holdNone(int, *http.Request) bool { return false }

// A hedge goes where a retry would: to the secondary of a request that may
// fail over, which then races the primary.
func TestHedgeRacesFailover(t *testing.T) {
	noLeaks(t)
	pg, sg, primary, secondary := gatedPair(t, holdAll, holdNone, 0)
	sh := secondary.host()
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{sh}}, Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)

	getBody(t, client, primary.URL)
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Endpoint != sh || ev[0].Scope != sh || ev[0].Hedges != 1 {
		t.Errorf("final events %+v; want the secondary's answer, in its scope, after 1 hedge", ev)
	}
	if s := tr.scopeStats(sh); s.Hedges != 1 || s.Attempts != 1 {
		t.Errorf("secondary stats %+v; want its one attempt, a hedge", s)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
	// The secondary may win before the primary's request even arrives;
	// one that arrived saw its cancellation.
	pg.cancelledSoon(t, pg.n.Load())

	// A write stays on the primary: its hedge too.
	pg2 := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	primary2 := newFaultServer(t, pg2)
	tr2 := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{sh}}, Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond))
	client2 := tr2.client(t)
	req, _ := http.NewRequest("PUT", primary2.URL, strings.NewReader("x"))
	resp, err := client2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if pg2.n.Load() != 2 || sg.n.Load() != 1 {
		t.Errorf("primary %d, secondary %d requests; want the PUT and its hedge on the primary", pg2.n.Load(), sg.n.Load())
	}
	primary2.conns.expectAllClosed(t, client2)
}

// A 404 from a secondary, which may lag the primary, does not win a race:
// the primary's answer does.
func TestHedgeNotFoundOnSecondaryDoesNotWin(t *testing.T) {
	noLeaks(t)
	got404 := make(chan struct{})
	_, sg, primary, secondary := gatedPair(t, func(int, *http.Request) bool { <-got404; return false }, holdNone, 404)
	sh := secondary.host()
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{sh}}, Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond))
	client := tr.client(t)
	go func() { sg.wait(t); close(got404) }()
	resp, _ := getBody(t, client, primary.URL)
	if resp.StatusCode != 200 {
		t.Errorf("status %d; want the primary's 200", resp.StatusCode)
	}
}

// Nor does it when both copies fail: the primary's 503, which came first,
// is the attempt's result, not the secondary's later 404.
func TestHedgeNotFoundOnSecondaryDoesNotWinWhenBothFail(t *testing.T) {
	noLeaks(t)
	primary, secondary, classified := bothFail(t, 503, 404)
	p := policy.Policy{MaxAttempts: 1, Failover: &policy.Failover{Endpoints: []string{secondary.host()}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: classified}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	resp, _ := getBody(t, client, primary.URL)
	if resp.StatusCode != 503 {
		t.Errorf("status %d; want the primary's 503: a secondary's 404 never wins over the primary", resp.StatusCode)
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Endpoint != primary.host() {
		t.Errorf("final events %+v; want one, naming the primary", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// But a secondary's 404 is still a response: when the primary's copy
// fails with a transport error, after the 404 came, the 404 is the
// attempt's result, not the error (failureRank: a response above an
// error, a not-replicated 404 included).
func TestHedgeNotFoundOnSecondaryBeatsAnError(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	hedgeIn := make(chan struct{})
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if waitOr(hedgeIn, r) && waitOr(classified, r) {
			resetConn(w, r) // once the secondary's 404 was classified
		}
	}))
	secondary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hedgeIn)
		w.WriteHeader(404)
	}))
	p := policy.Policy{MaxAttempts: 1, Failover: &policy.Failover{Endpoints: []string{secondary.host()}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(404, classified)}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Errorf("Get = %v; want the secondary's 404, the only response the attempt got", err)
	} else {
		if resp.StatusCode != 404 {
			t.Errorf("status %d; want the secondary's 404", resp.StatusCode)
		}
		readBody(t, resp)
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Endpoint != secondary.host() || ev[0].StatusCode != 404 {
		t.Errorf("final events %+v; want one, naming the secondary and its 404", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// Nor when the primary's copy is still out as the attempt times out: the
// secondary's 404 is no answer that came in time, and the caller gets the
// timeout.
func TestHedgeNotFoundOnSecondaryDoesNotWinAtTheTimeout(t *testing.T) {
	noLeaks(t)
	_, sg, primary, secondary := gatedPair(t, holdAll, holdNone, 404)
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond,
		Failover: &policy.Failover{Endpoints: []string{secondary.host()}}, Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond))
	client := tr.client(t)
	resp, err := client.Get(primary.URL)
	if err == nil {
		readBody(t, resp)
		t.Fatalf("status %d; want the attempt's timeout: the secondary's 404 does not win over the primary", resp.StatusCode)
	}
	if !errors.Is(err, retrytransport.ErrExhausted) || sg.n.Load() != 1 {
		t.Errorf("Get = %v after %d request(s) at the secondary; want the timeout of the one attempt, ErrExhausted, after its hedge", err, sg.n.Load())
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// When a hedge to the primary wins for an attempt sent to a secondary, the
// final event names the primary, and its scope.
func TestHedgeToThePrimaryNamedInTheEvent(t *testing.T) {
	noLeaks(t)
	_, _, primary, secondary := gatedPair(t, holdNone, holdAll, 0)
	ph, sh := primary.host(), secondary.host()
	p := policy.Policy{Failover: &policy.Failover{Endpoints: []string{sh}, Mode: policy.SecondaryThenPrimary}, Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	getBody(t, client, primary.URL)
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph || ev[0].Hedges != 1 {
		t.Errorf("final events %+v; want the primary's answer, in its scope, after 1 hedge", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// A hedge's outcome, from another endpoint, is recorded in that endpoint's
// scope: the secondary's 429 is the secondary's throttle, and enables its
// adaptive limiter, not the primary's.
func TestHedgeOutcomeRecordedInItsOwnScope(t *testing.T) {
	noLeaks(t)
	// The primary's 500 first, so that the 429 is the last failure.
	primary, secondary, classified := bothFail(t, 500, http.StatusTooManyRequests)
	ph, sh := primary.host(), secondary.host()
	p := policy.Policy{MaxAttempts: 1, Failover: &policy.Failover{Endpoints: []string{sh}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: classified}
	tr := newRig(t, nil, p, adaptiveOnRig(), backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	resp, _ := getBody(t, client, primary.URL)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d; want the secondary's 429, the last failure", resp.StatusCode)
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Scope != sh {
		t.Errorf("final events %+v; want one in the secondary's scope", ev)
	}
	ps, ss := tr.scopeStats(ph), tr.scopeStats(sh)
	if ps.Throttles != 0 || ps.Adaptive.Enabled {
		t.Errorf("primary: Throttles = %d, limiter enabled = %v; want 0 and false: it answered 500, never 429", ps.Throttles, ps.Adaptive.Enabled)
	}
	if ss.Throttles != 1 || !ss.Adaptive.Enabled {
		t.Errorf("secondary: Throttles = %d, limiter enabled = %v; want 1 and true: its 429 was the attempt's outcome", ss.Throttles, ss.Adaptive.Enabled)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// A hedge's failure at a secondary is remembered by the route: the retry
// goes to "the next endpoint in that order that the request has not yet
// seen fail" (docs/failover.md), not back to that secondary.
func TestRouteRemembersAFailedHedge(t *testing.T) {
	noLeaks(t)
	aIn := make(chan struct{})
	classified := make(chan struct{})
	var pn, an, bn atomic.Int64
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pn.Add(1) == 1 && !waitOr(aIn, r) {
			return
		}
		w.WriteHeader(500)
	}))
	a := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if an.Add(1) == 1 {
			close(aIn)
			if !waitOr(classified, r) {
				return
			}
		}
		w.WriteHeader(500)
	}))
	b := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bn.Add(1)
		io.WriteString(w, "ok")
	}))
	clock := faketime.NewAt(time.Now())
	// Only the first attempt is hedged: later hedge delays never end.
	var hedgeDelays atomic.Int64
	sleep := func(ctx context.Context, d time.Duration) error {
		if d == hedgeDelay && hedgeDelays.Add(1) > 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return clock.Sleep(ctx, d)
	}
	p := policy.Policy{MaxAttempts: 2, Failover: &policy.Failover{Endpoints: []string{a.host(), b.host()}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	tr := newRig(t, nil, p, onClock(clock), sleepingWith(sleep), backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	getBody(t, client, primary.URL)
	var endpoint string
	if ev := tr.finalEvents(); len(ev) == 1 {
		endpoint = ev[0].Endpoint
	}
	if an.Load() != 1 || bn.Load() != 1 {
		t.Errorf("the retry went to %s (P %d, A %d, B %d requests); want B: P and A had both failed the first attempt", endpoint, pn.Load(), an.Load(), bn.Load())
	}
	for _, s := range []*faultServer{primary, a, b} {
		s.conns.expectAllClosed(t, client)
	}
}

// A hedge of a retry that goes to another endpoint keeps what the
// WithBeforeRetry hook made of the retry's URL: only the host changes.
func TestHedgeOfARetryKeepsTheHooksURL(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var seen []string // endpoint letter and query of each request, as they arrive
	// Each attempt's first copy to arrive waits for the other, so that
	// both are sent and both fail.
	bothIn := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var n atomic.Int64
	record := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, name+"?"+r.URL.RawQuery)
			mu.Unlock()
			k := n.Add(1)
			if both := bothIn[(k-1)/2%2]; k%2 == 1 {
				waitOr(both, r)
			} else {
				close(both)
			}
			w.WriteHeader(503)
		}
	}
	primary := newFaultServer(t, record("P"))
	alt := newFaultServer(t, record("A"))
	p := policy.Policy{MaxAttempts: 2, Failover: &policy.Failover{Endpoints: []string{alt.host()}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Backoff: everySecond}
	tr := newRig(t, nil, p, withOptions(retrytransport.WithBeforeRetry(func(req *http.Request, _ retrytransport.Event) error {
		req.URL.RawQuery = "sig=retry"
		return nil
	})))
	client := tr.client(t)
	getBody(t, client, primary.URL+"/x?sig=first")
	primary.conns.expectAllClosed(t, client)
	alt.conns.expectAllClosed(t, client)
	mu.Lock()
	defer mu.Unlock()
	retries := seen[2:]
	for _, s := range retries {
		if !strings.HasSuffix(s, "?sig=retry") {
			t.Errorf("the retry's copies arrived as %q; want each with the hook's query sig=retry", retries)
			break
		}
	}
	if len(retries) != 2 {
		t.Errorf("the retry's copies: %q; want the retry and its hedge", retries)
	}
}

// A hedged attempt whose copies all run into AttemptTimeout describes
// itself in its own endpoint's scope: not in that of the copy whose result
// the attempt before it took. Attempt 1 goes to the primary, its hedge to
// A, and both fail, A last; attempt 2 goes to B, its hedge to the primary,
// and neither answers in time.
func TestHedgedAttemptTimeoutIsInItsOwnScope(t *testing.T) {
	noLeaks(t)
	aIn := make(chan struct{})
	classified := make(chan struct{})
	var pn atomic.Int64
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pn.Add(1) == 1 && waitOr(aIn, r) {
			w.WriteHeader(500)
			return
		}
		<-r.Context().Done()
	}))
	a := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(aIn)
		if waitOr(classified, r) { // after the primary's 500, so that A's result is kept
			w.WriteHeader(503)
		}
	}))
	b := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	p := policy.Policy{MaxAttempts: 2, AttemptTimeout: 200 * time.Millisecond, Failover: &policy.Failover{Endpoints: []string{a.host(), b.host()}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	_, err := client.Get(primary.URL)
	if !errors.Is(err, retrytransport.ErrExhausted) {
		t.Fatalf("Get = %v; want the second attempt's timeout, ErrExhausted", err)
	}
	ev := tr.finalEvents()
	if len(ev) != 1 || ev[0].Attempt != 2 {
		t.Fatalf("final events %+v; want one, of attempt 2", ev)
	}
	if want := b.host(); ev[0].Endpoint != want || ev[0].Scope != want || ev[0].Quota != tr.scopeStats(want).Quota {
		t.Errorf("final event: Endpoint %s, Scope %s, Quota %v; want B's endpoint, scope and quota level (%s, %v)",
			ev[0].Endpoint, ev[0].Scope, ev[0].Quota, want, tr.scopeStats(want).Quota)
	}
	for _, s := range []*faultServer{primary, a, b} {
		s.conns.expectAllClosed(t, client)
	}
}

// So does one whose hedge failed with a transport error before the timer
// ended the attempt's own copy: the attempt's timeout is the primary's,
// and its event names the primary, with its scope.
func TestHedgedAttemptTimeoutAfterAFailedHedgeIsInItsOwnScope(t *testing.T) {
	noLeaks(t)
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	a := newFaultServer(t, http.HandlerFunc(resetConn))
	ph, ah := primary.host(), a.host()
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Failover: &policy.Failover{Endpoints: []string{ah}},
		Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	if _, err := client.Get(primary.URL); err == nil {
		t.Fatal("Get succeeded; want the attempt's timeout")
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph {
		t.Errorf("final events %+v; want one naming the primary (%s), in its scope", ev, ph)
	}
	primary.conns.expectAllClosed(t, client)
	a.conns.expectAllClosed(t, client)
}
