package retrytransport

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// mayHedge reports whether req's attempts may be hedged: its policy
// hedges, and sending it twice at once is safe (an idempotent method or an
// idempotency key) and possible (no body, or one GetBody makes again).
func (st *hostState) mayHedge(req *http.Request) bool {
	return st.p.Hedge.Enabled() && classify.IsIdempotent(req) && (!hasBody(req) || req.GetBody != nil)
}

// entrant is one copy of a hedged attempt: the attempt itself (n 0) or a
// hedge, and, once the base transport has returned, what it returned.
type entrant struct {
	n        int
	req      *http.Request
	cancel   context.CancelFunc // ends the copy's context
	endpoint int                // where it went (see call.endpoint)
	scope    string
	start    time.Time
	resp     *http.Response
	err      error
	cost     int // what a hedge paid the quota of scope
	budget   int // and the budget of the request's own scope
}

// race is the shared state of a hedged attempt: the copies in flight
// deliver to results until the attempt is over; a copy that returns after
// that discards what it got.
type race struct {
	mu      sync.Mutex
	over    bool
	results chan *entrant // buffered for every copy: delivering never blocks
	running []*entrant    // the copies not yet delivered
	drain   func(*http.Response)
}

// run sends e through base and delivers the result.
func (rc *race) run(base http.RoundTripper, e *entrant) {
	resp, err := base.RoundTrip(e.req)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	e.resp, e.err = resp, err
	rc.mu.Lock()
	if !rc.over {
		rc.results <- e
		rc.mu.Unlock()
		return
	}
	rc.mu.Unlock()
	rc.discard(e)
}

// discard closes what a losing copy got and ends its context.
func (rc *race) discard(e *entrant) {
	if e.resp != nil {
		rc.drain(e.resp)
	}
	e.cancel()
}

// finish ends the race: the copies still running are cancelled and will
// discard their results; those delivered and not taken are discarded now.
func (rc *race) finish(winner *entrant) {
	rc.mu.Lock()
	rc.over = true
	for _, e := range rc.running {
		if e != winner {
			e.cancel()
		}
	}
	rc.mu.Unlock()
	for {
		select {
		case e := <-rc.results:
			rc.discard(e)
		default:
			return
		}
	}
}

// taken removes e from the running copies, once it was received.
func (rc *race) taken(e *entrant) {
	rc.mu.Lock()
	for i, r := range rc.running {
		if r == e {
			rc.running = append(rc.running[:i], rc.running[i+1:]...)
			break
		}
	}
	rc.mu.Unlock()
}

// sendHedged sends areq, and while no copy has an acceptable answer sends
// copies of it, each after the hedge delay, up to Policy.Hedge.MaxHedges.
// The first response whose outcome is not retryable wins; the others are
// cancelled, and their responses drained and closed. When every copy
// failed, the last failure is the attempt's. A timeout (AttemptTimeout, or
// what is left of MaxTotalTime) ends every copy, as it ends a lone attempt.
//
// Each copy runs in a goroutine of its own, which ends with its round
// trip; the hedge delay is slept in one more, which ends with the attempt.
func (c *call) sendHedged(areq *http.Request, timeout time.Duration) (*http.Response, classify.Outcome, error) {
	p := &c.st.p
	copies := 1 + p.Hedge.Copies()
	rc := &race{results: make(chan *entrant, copies), drain: func(r *http.Response) { drain(r, p.MaxDrain, p.ReadTimeout) }}
	tick := make(chan struct{}, 1)
	hctx, stopTicks := context.WithCancel(c.ctx)
	defer stopTicks()
	var timeoutC <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timeoutC = tm.C
	}

	first := c.entrant(0, areq, c.endpoint(), c.scope)
	rc.running = append(rc.running, first)
	go rc.run(c.t.base, first)
	c.armHedge(hctx, tick)
	sent, inflight := 1, 1
	var kept *entrant // the latest failure, the attempt's if all fail
	for {
		select {
		case e := <-rc.results:
			rc.taken(e)
			inflight--
			if p.Hedge.Quantile > 0 {
				c.counters.latencies().observe(c.t.now().Sub(e.start))
			}
			if c.route != nil {
				c.route.sentTo = e.endpoint
			}
			out := c.outcome(e.req, e.resp, e.err)
			// The first response that will not be retried wins; a
			// failure waits for the copies still running, and is the
			// attempt's if none of them does better.
			if kept != nil {
				rc.discard(kept)
				kept = nil
			}
			if e.resp != nil && !out.Retryable() || inflight == 0 || c.ctx.Err() != nil {
				if p.Hedge.Quantile > 0 {
					c.censor(rc)
				}
				rc.finish(e)
				return c.won(e, out)
			}
			kept = e
		case <-tick:
			if sent < copies {
				if e := c.hedge(areq, sent); e != nil {
					rc.mu.Lock()
					rc.running = append(rc.running, e)
					rc.mu.Unlock()
					go rc.run(c.t.base, e)
					sent++
					inflight++
					if sent < copies {
						c.armHedge(hctx, tick)
					}
				}
			}
		case <-timeoutC:
			if kept != nil {
				rc.discard(kept)
			}
			rc.finish(nil)
			if err := c.ctx.Err(); err != nil {
				return nil, classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}, err
			}
			return nil, classify.Outcome{Kind: classify.Timeout, Reason: "attempt timeout"}, errAttemptTimeout
		}
	}
}

// censor records, for the latency quantile, how long the copies still
// running have taken so far: they lose, and will never say how long they
// would have taken, but leaving them out would keep only the fast answers
// and make the quantile, and the hedge delay, ever shorter.
func (c *call) censor(rc *race) {
	now := c.t.now()
	h := c.counters.latencies()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range rc.running {
		h.observe(now.Sub(e.start))
	}
}

// won returns the result of the winning copy e: its costs refunded if it
// was a hedge that succeeded, its context released with its body, and the
// call pointed at its endpoint, for the events.
func (c *call) won(e *entrant, out classify.Outcome) (*http.Response, classify.Outcome, error) {
	if e.n > 0 && out.Kind == classify.Success && e.err == nil {
		c.refundHedge(e)
	}
	if c.route != nil {
		c.route.sentTo = e.endpoint
	}
	if e.resp == nil || !needsContext(e.resp) {
		e.cancel()
	} else {
		e.resp.Body = &cancelOnClose{ReadCloser: e.resp.Body, cancel: e.cancel}
	}
	return e.resp, out, e.err
}

// entrant returns copy n of the attempt, to be sent as r with a context of
// its own.
func (c *call) entrant(n int, r *http.Request, endpoint int, scope string) *entrant {
	ctx, cancel := context.WithCancel(r.Context())
	return &entrant{n: n, req: r.WithContext(ctx), cancel: cancel, endpoint: endpoint, scope: scope, start: c.t.now()}
}

// armHedge sleeps the hedge delay, in a goroutine that ends with ctx, and
// then ticks.
func (c *call) armHedge(ctx context.Context, tick chan<- struct{}) {
	d, ok := c.hedgeDelay()
	if !ok {
		return
	}
	go hedgeTimer(ctx, c.t.sleep, d, tick)
}

// hedgeTimer ticks after sleeping d, unless ctx ends first. It takes no
// *call, so that the call itself stays on its goroutine's stack.
func hedgeTimer(ctx context.Context, sleep func(context.Context, time.Duration) error, d time.Duration, tick chan<- struct{}) {
	if sleep(ctx, d) == nil {
		select {
		case tick <- struct{}{}:
		default:
		}
	}
}

// hedgeDelay returns how long an attempt waits before its next copy: the
// policy's Delay, or the scope's observed Quantile, no shorter than
// MinDelay; false when there is none yet.
func (c *call) hedgeDelay() (time.Duration, bool) {
	h := &c.st.p.Hedge
	d := h.Delay
	if h.Quantile > 0 {
		if q, ok := c.counters.latencies().quantile(h.Quantile); ok {
			d = q
		}
		d = max(d, h.MinDelay)
	}
	return d, d > 0
}

// hedge returns copy n of areq, paid for and paced, ready to send, or nil
// when it may not go: the retry quotas cannot pay, a rate limiter would
// make it wait, or a fresh body cannot be had. It goes where the next
// retry would: the request's next endpoint, if it may fail over.
func (c *call) hedge(areq *http.Request, n int) *entrant {
	st := c.st
	endpoint := c.endpoint()
	if c.route != nil {
		rt := *c.route
		for range n {
			rt.next()
		}
		endpoint = rt.current()
	}
	scope := st.endpointScope(c.req, endpoint, c.home())
	e := &entrant{n: n, endpoint: endpoint, scope: scope}
	if !c.payHedge(e) {
		return nil
	}
	r := areq.WithContext(areq.Context())
	if endpoint != c.endpoint() {
		if endpoint == 0 {
			r.URL, r.Host = c.req.URL, c.req.Host
		} else {
			r.URL, r.Host = st.endpoints.alt[endpoint-1].URL(c.req.URL), ""
		}
	}
	if hasBody(c.req) {
		b, err := c.req.GetBody()
		if err != nil || b == nil {
			c.refundHedge(e)
			return nil
		}
		r.Body = b
	}
	if !c.paceHedge(scope) {
		closeReader(r.Body)
		c.refundHedge(e)
		return nil
	}
	full := c.entrant(n, r, endpoint, scope)
	full.cost, full.budget = e.cost, e.budget
	counters := c.t.stats.get(scope, st)
	counters.attempts.Add(1)
	counters.hedges.Add(1)
	c.hedges++
	return full
}

// payHedge takes a hedge's cost from the retry quotas, as a retry after a
// Timeout would pay, and reports whether they paid.
func (c *call) payHedge(e *entrant) bool {
	st := c.st
	if st.quota != nil {
		cost, wait, ok := st.quota.Acquire(e.scope, classify.Timeout)
		if !ok || wait > 0 {
			if ok {
				st.quota.Refund(e.scope, cost)
			}
			return false
		}
		e.cost = cost
	}
	if st.budget != nil {
		cost, wait, ok := st.budget.Acquire(c.home(), classify.Timeout)
		if !ok || wait > 0 {
			if ok {
				st.budget.Refund(c.home(), cost)
			}
			c.refundHedge(e)
			return false
		}
		e.budget = cost
	}
	return true
}

// refundHedge gives back what a hedge paid.
func (c *call) refundHedge(e *entrant) {
	if e.cost > 0 {
		c.st.quota.Refund(e.scope, e.cost)
	}
	if e.budget > 0 {
		c.st.budget.Refund(c.home(), e.budget)
	}
	e.cost, e.budget = 0, 0
}

// paceHedge takes a send token for a hedge to scope from the policy's rate
// limiters, and reports whether it got one without waiting: a hedge is
// worth sending now or not at all.
func (c *call) paceHedge(scope string) bool {
	st := c.st
	var turn ratelimit.Reservation
	if st.limiter != nil {
		r, w, ok := st.limiter.Reserve(scope)
		if !ok {
			return false
		}
		if w > 0 {
			r.Cancel()
			return false
		}
		turn = r
	}
	if st.fixed != nil {
		r, w, ok := st.fixed.Reserve(scope)
		if !ok || w > 0 {
			if ok {
				r.Cancel()
			}
			turn.Cancel()
			return false
		}
	}
	return true
}
