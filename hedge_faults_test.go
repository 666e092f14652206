package retrytransport_test

// Hedging under faults, with failover and the budget: copies that stall,
// fail, time out or are refused a send token, and where their outcomes,
// costs and events are recorded. Each test names the promise it keeps.

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
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// onClassified is a Policy.Classify that classifies as classify.Standard
// does and closes ch once it has classified a response with status.
func onClassified(status int, ch chan struct{}) classify.Func {
	var once sync.Once
	return func(req *http.Request, resp *http.Response, err error) classify.Outcome {
		out := classify.Standard(req, resp, err)
		if resp != nil && resp.StatusCode == status {
			once.Do(func() { close(ch) })
		}
		return out
	}
}

// waitOr waits for ch, or for the request's end, or gives up after
// leakBound (a limit on a bug, not a wait).
func waitOr(ch <-chan struct{}, r *http.Request) bool {
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		return false
	case <-time.After(leakBound):
		return false
	}
}

// A failed copy that waits for the others ("kept") is cancelled before
// its body is drained, so a failed response whose body stalls does not
// hold the winner back for ReadTimeout, past MaxTotalTime.
func TestHedgeStalledLoserDoesNotDelayTheWinner(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: a 500 whose body stalls after 10 of its 1000 bytes
			if !waitOr(hedgeIn, r) {
				return
			}
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(500)
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case 2: // the hedge: 200 once the attempt's 500 was classified
			close(hedgeIn)
			if !waitOr(classified, r) {
				return
			}
			io.WriteString(w, "ok")
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{
		Hedge:        policy.Hedge{Delay: hedgeDelay},
		MaxTotalTime: 300 * time.Millisecond,
		ReadTimeout:  3 * time.Second,
		Classify:     onClassified(500, classified),
	}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	start := time.Now()
	resp, err := client.Get(srv.URL)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if took > time.Second {
		t.Errorf("the hedge's 200 came back after %v with MaxTotalTime 300ms; the losing copy's stalled body was drained (ReadTimeout 3s) before its context was cancelled", took.Round(10*time.Millisecond))
	}
	srv.conns.expectAllClosed(t, client)
}

// The attempt timer of a hedged attempt keeps a response that arrived in
// time: the attempt's own 500 came back, its hedge was still running when
// the timer fired, and the caller gets the 500, as from a lone attempt.
func TestHedgeTimeoutKeepsAResponseThatArrivedInTime(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: 500 as soon as its hedge is sent
			if !waitOr(hedgeIn, r) {
				return
			}
			w.WriteHeader(500)
			io.WriteString(w, "attempt's answer")
		case 2: // the hedge: never answers
			close(hedgeIn)
			<-r.Context().Done()
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Errorf("Get = %v; want the attempt's 500, which arrived well within AttemptTimeout", err)
	} else {
		if resp.StatusCode != 500 {
			t.Errorf("status %d; want 500", resp.StatusCode)
		}
		readBody(t, resp)
	}
	srv.conns.expectAllClosed(t, client)
}

// signalLimiter passes Reserve to a Limiter and closes second after the
// second call.
type signalLimiter struct {
	ratelimit.Limiter
	n      atomic.Int64
	second chan struct{}
}

func (l *signalLimiter) Reserve(scope string) (ratelimit.Reservation, time.Duration, bool) {
	r, w, ok := l.Limiter.Reserve(scope)
	if l.n.Add(1) == 2 {
		close(l.second)
	}
	return r, w, ok
}

// A hedge pays the Budget before the rate limiter is asked; when the
// limiter would make it wait, the hedge is not sent, and its cost goes
// back through Budget.Cancel (Refund is for retries that were sent), so
// the request's real retry is still granted.
func TestUnsentHedgeGivesBackItsBudget(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	lim := &signalLimiter{Limiter: &ratelimit.Fixed{Rate: 1, Now: clock.Now}, second: make(chan struct{})}
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			// The attempt answers once its hedge was asked for a send token
			// (and refused: the fixed rate's token is the attempt's).
			if !waitOr(lim.second, r) {
				return
			}
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "ok")
	}))
	p := policy.Policy{
		Budget:    &ratelimit.Budget{Ratio: 1, MinPerSecond: -1, Now: clock.Now}, // one retry per request
		RateLimit: lim,
		Hedge:     policy.Hedge{Delay: hedgeDelay},
	}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://"))
	if resp.StatusCode != 200 {
		var stop error
		if ev := finals(); len(ev) > 0 {
			stop = ev[len(ev)-1].Stop
		}
		t.Errorf("status %d after %d request(s) at the server, %d hedges sent, stop %v; want the retry the budget allows (1 per request) and 200: the unsent hedge spent it",
			resp.StatusCode, n.Load(), s.Hedges, stop)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge's 429 is recorded, by the adaptive limiter (its Recorder is told
// "after every attempt", and a hedge is one) and in the scope's Throttles
// counter, even when the attempt it raced then succeeds.
func TestLosingHedgesThrottleIsRecorded(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 { // the attempt: 200 once the hedge's 429 was classified
			if !waitOr(classified, r) {
				return
			}
			io.WriteString(w, "ok")
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{Adaptive: true, Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(429, classified)}
	client, tr, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://"))
	if s.Hedges != 1 || n.Load() != 2 {
		t.Fatalf("%d hedges, %d requests at the server; want the race to have happened", s.Hedges, n.Load())
	}
	if s.Throttles != 1 || !s.Adaptive.Enabled {
		t.Errorf("after the hedge got a 429: Throttles = %d, adaptive limiter enabled = %v; want 1 and true (the limiter hears every attempt's outcome)", s.Throttles, s.Adaptive.Enabled)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge's outcome, from another endpoint, is recorded in that endpoint's
// scope: the secondary's 429 is the secondary's throttle, and enables its
// adaptive limiter, not the primary's.
func TestHedgeOutcomeRecordedInItsOwnScope(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !waitOr(hedgeIn, r) {
			return
		}
		w.WriteHeader(500)
	}))
	secondary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hedgeIn)
		if !waitOr(classified, r) { // the primary's 500 first, so that the 429 is the last failure
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	ph, sh := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(secondary.URL, "http://")
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, Adaptive: true, Endpoints: []string{sh},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d; want the secondary's 429, the last failure", resp.StatusCode)
	}
	if ev := finals(); len(ev) != 1 || ev[0].Scope != sh {
		t.Errorf("final events %+v; want one in the secondary's scope", ev)
	}
	ps, ss := statsOf(tr, ph), statsOf(tr, sh)
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
	host := func(s *faultServer) string { return strings.TrimPrefix(s.URL, "http://") }
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
	p := policy.Policy{MaxAttempts: 2, Endpoints: []string{host(a), host(b)},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, _, finals := hedgeClientOn(t, p, clock, sleep)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	var endpoint string
	if ev := finals(); len(ev) == 1 {
		endpoint = ev[0].Endpoint
	}
	if an.Load() != 1 || bn.Load() != 1 {
		t.Errorf("the retry went to %s (P %d, A %d, B %d requests); want B: P and A had both failed the first attempt", endpoint, pn.Load(), an.Load(), bn.Load())
	}
	for _, s := range []*faultServer{primary, a, b} {
		s.conns.expectAllClosed(t, client)
	}
}

// A *ratelimit.Budget used as the Quota is kept, like Policy.Budget, in
// the request's own scope, where its requests are counted: paid in the
// scope the retry goes to, where no request was ever counted, it would
// refuse every failover retry (see TestBudgetStaysInTheRequestsScope).
func TestBudgetAsQuotaLetsReadsFailOver(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 200)
	clock := faketime.NewAt(time.Now())
	budget := &ratelimit.Budget{Ratio: 0.5, MinPerSecond: -1, Now: clock.Now}
	tr := failoverTransport(t, policy.Policy{MaxAttempts: 2, Quota: budget, Endpoints: []string{secondary.host()}})
	ok := 0
	for range 20 {
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			ok++
		}
	}
	if s := secondary.n.Load(); s != 10 || ok != 10 {
		t.Errorf("%d retries failed over, %d reads succeeded; want 10 and 10: half the primary's 20 requests, as the budget allows", s, ok)
	}
}

// When the last copy to answer fails with a transport error, the attempt's
// result is the response another copy got: with no attempts left, the
// caller gets it ("the last response, when there is one", README).
func TestHedgeResponseBeatsAnError(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: 500, once the hedge is out
			if !waitOr(hedgeIn, r) {
				return
			}
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(500)
		case 2: // the hedge: its connection reset after the 500 was classified
			close(hedgeIn)
			if !waitOr(classified, r) {
				return
			}
			resetConn(w, r)
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Errorf("Get = %v; want the attempt's 500 (with its Retry-After), the only response the attempt got", err)
	} else {
		if resp.StatusCode != 500 {
			t.Errorf("status %d; want 500", resp.StatusCode)
		}
		readBody(t, resp)
	}
	srv.conns.expectAllClosed(t, client)
}

// The latency quantile hears of attempts that ran into their
// AttemptTimeout: the copies the timer ends are censored at the time they
// took, so the hedge delay does not collapse to the fast answers'. Here 20
// attempts answered at once and 40 took over a (fake) second before their
// timer ended them: the 0.5 quantile is above a second.
func TestHedgeQuantileCountsTimedOutAttempts(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	var slow atomic.Bool
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			clock.Advance(2 * time.Second) // this attempt takes 2 s of the transport's clock
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}))
	var mu sync.Mutex
	var delays []time.Duration
	never := func(ctx context.Context, d time.Duration) error { // hedge delays only: MaxAttempts 1
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 5 * time.Millisecond,
		Hedge: policy.Hedge{Delay: time.Millisecond, Quantile: 0.5}}
	client, _, _ := hedgeClientOn(t, p, clock, never)
	get := func() {
		resp, err := client.Get(srv.URL)
		if err == nil {
			readBody(t, resp)
		}
	}
	for range 20 {
		get()
	}
	slow.Store(true)
	for range 40 {
		get()
	}
	slow.Store(false)
	get()
	mu.Lock()
	last := delays[len(delays)-1]
	mu.Unlock()
	if last < time.Second {
		t.Errorf("hedge delay after 20 fast and 40 timed-out (2 s) attempts = %v; want the 0.5 quantile, above 1s", last)
	}
	srv.conns.expectAllClosed(t, client)
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
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 2, Endpoints: []string{strings.TrimPrefix(alt.URL, "http://")},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Backoff: backoff.Constant{Interval: time.Second}}
	tr := retrytransport.New(&http.Transport{}, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep),
		retrytransport.WithBeforeRetry(func(req *http.Request, _ retrytransport.Event) error {
			req.URL.RawQuery = "sig=retry"
			return nil
		}))
	client := &http.Client{Transport: tr}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get(primary.URL + "/x?sig=first")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
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

// When a hedge to the primary wins for an attempt sent to a secondary, the
// final event names the primary, and its scope.
func TestHedgeToThePrimaryNamedInTheEvent(t *testing.T) {
	noLeaks(t)
	pg := newGate(func(int, *http.Request) bool { return false })
	primary := newFaultServer(t, pg)
	sg := newGate(func(int, *http.Request) bool { return true })
	secondary := newFaultServer(t, sg)
	ph, sh := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(secondary.URL, "http://")
	p := policy.Policy{Endpoints: []string{sh}, LocationMode: policy.SecondaryThenPrimary, Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, _, finals := hedgeClient(t, p, nil)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph || ev[0].Hedges != 1 {
		t.Errorf("final events %+v; want the primary's answer, in its scope, after 1 hedge", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
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
	host := func(s *faultServer) string { return strings.TrimPrefix(s.URL, "http://") }
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 2, AttemptTimeout: 200 * time.Millisecond, Endpoints: []string{host(a), host(b)},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	_, err := client.Get(primary.URL)
	if !errors.Is(err, retrytransport.ErrExhausted) {
		t.Fatalf("Get = %v; want the second attempt's timeout, ErrExhausted", err)
	}
	ev := finals()
	if len(ev) != 1 || ev[0].Attempt != 2 {
		t.Fatalf("final events %+v; want one, of attempt 2", ev)
	}
	if want := host(b); ev[0].Endpoint != want || ev[0].Scope != want || ev[0].Quota != statsOf(tr, want).Quota {
		t.Errorf("final event: Endpoint %s, Scope %s, Quota %v; want B's endpoint, scope and quota level (%s, %v)",
			ev[0].Endpoint, ev[0].Scope, ev[0].Quota, want, statsOf(tr, want).Quota)
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
	ph, ah := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(a.URL, "http://")
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Endpoints: []string{ah},
		Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, finals := hedgeClientOn(t, p, clock, nil)
	if _, err := client.Get(primary.URL); err == nil {
		t.Fatal("Get succeeded; want the attempt's timeout")
	}
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph {
		t.Errorf("final events %+v; want one naming the primary (%s), in its scope", ev, ph)
	}
	primary.conns.expectAllClosed(t, client)
	a.conns.expectAllClosed(t, client)
}
