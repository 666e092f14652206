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
// hedges, its method is idempotent, so that two copies at once do what one
// does (an idempotency key is not enough: see classify.IdempotentMethod),
// its body, if any, can be made again with GetBody, and no SDK that
// retries it itself marked it (sdkRetries).
func (cp *compiled) mayHedge(req *http.Request) bool {
	return cp.hedges && classify.IdempotentMethod(req.Method) && (!hasBody(req) || req.GetBody != nil) && !cp.sdkRetries(req)
}

// sdkRetries reports whether req bears the mark of an SDK that retries
// its requests itself (sdkAttemptOf), unless the policy ignores such marks
// (Policy.IgnoreSDKAttempts). Such a request is not hedged: the SDK makes
// its own attempts, the transport sends each of them as few times as it
// can (limitForSDK), and hedges would multiply them again, the SDK's last
// attempt included. A mark with max=1 says the SDK's retries are off.
func (cp *compiled) sdkRetries(req *http.Request) bool {
	if cp.p.IgnoreSDKAttempts || len(req.Header) == 0 {
		return false
	}
	a, ok := sdkAttemptOf(req.Header)
	return ok && a.max != 1
}

// entrant is one copy of a hedged attempt: the attempt itself (n 0) or a
// hedge, and, once the base transport has returned, what it returned.
type entrant struct {
	n        int
	req      *http.Request
	cancel   context.CancelFunc // ends the copy's context
	endpoint int                // where it went (see call.endpoint)
	scope    string             // its endpoint's scope: its limiters' and outcome's
	counters *scopeCounters     // scope's
	qscope   string             // the scope whose retry quota it pays (compiled.quotaScope)
	paid     paid               // what a hedge paid the retry quotas
	start    time.Time
	resp     *http.Response
	err      error
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

// discard ends a losing copy's context, then drains and closes what it
// got: after the cancellation, the drain takes only what has arrived, and
// a stalled body holds nobody up.
func (rc *race) discard(e *entrant) {
	if e == nil {
		return
	}
	e.cancel()
	if e.resp != nil {
		rc.drain(e.resp)
	}
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
// failed, the attempt's result is the last response, or the last error if
// none got a response; a secondary's "not replicated yet" 404 is the
// result only if no other copy got a response (see failureRank). A timeout (AttemptTimeout, or what is left of
// MaxTotalTime) ends every copy, as it ends a lone attempt, but a response
// that arrived before it is still the attempt's, unless it is a
// secondary's not-replicated 404.
//
// Each copy runs in a goroutine of its own, which ends with its round
// trip; the hedge delay is slept in one more, which ends with the attempt.
func (c *call) sendHedged(areq *http.Request, timeout time.Duration) (*http.Response, classify.Outcome, error) {
	p := &c.cp.p
	copies := 1 + p.Hedge.Copies()
	var h hedgeRun
	h.rc = &race{results: make(chan *entrant, copies), drain: func(r *http.Response) { drain(r, p.MaxDrain, p.ReadTimeout) }}
	rc := h.rc
	tick := make(chan struct{}, 1)
	hctx, stopTicks := context.WithCancel(c.ctx)
	defer stopTicks()
	var timeoutC <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timeoutC = tm.C
	}

	first := &entrant{endpoint: c.endpoint(), scope: c.scope, counters: c.counters, qscope: c.quotaScope()}
	c.enter(first, areq)
	rc.running = append(rc.running, first)
	go rc.run(c.t.base, first)
	c.armHedge(hctx, tick)
	sent := 1
	h.inflight = 1
	for {
		select {
		case e := <-rc.results:
			if w, out, ok := c.takeCopy(&h, e); ok {
				return c.endRace(&h, w, out)
			}
		case <-tick:
			if sent < copies {
				if e := c.hedge(areq, sent); e != nil {
					rc.mu.Lock()
					rc.running = append(rc.running, e)
					rc.mu.Unlock()
					go rc.run(c.t.base, e)
					sent++
					h.inflight++
					if sent < copies {
						c.armHedge(hctx, tick)
					}
				}
			}
		case <-timeoutC:
			// What arrived with the timer is taken first, as a lone
			// attempt's timer is settled for whichever came first.
			for more := true; more; {
				select {
				case e := <-rc.results:
					if w, out, ok := c.takeCopy(&h, e); ok {
						return c.endRace(&h, w, out)
					}
				default:
					more = false
				}
			}
			// A failure that came in time is the attempt's result, as a
			// lone attempt's would be; not a secondary's 404 while the
			// primary's copy may still answer.
			if h.kept != nil && failureRank(h.kept, h.keptOut) == rankResponse {
				w, out := h.kept, h.keptOut
				h.kept = nil
				return c.endRace(&h, w, out)
			}
			c.endRace(&h, nil, classify.Outcome{})
			if err := c.ctx.Err(); err != nil {
				return nil, classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}, err
			}
			return nil, classify.Outcome{Kind: classify.Timeout, Reason: "attempt timeout"}, errAttemptTimeout
		}
	}
}

// hedgeRun is the attempt loop's side of a race: what it has received.
type hedgeRun struct {
	rc       *race
	inflight int              // copies sent and not yet received
	kept     *entrant         // the best failure so far, by failureRank
	keptOut  classify.Outcome // its outcome
}

// takeCopy classifies the result of copy e, records it in e's scope (its
// outcome, throttle and penalty, whether it wins or loses), and
// returns the attempt's winner if there is one now: e, if it got a
// response that will not be retried or the caller gave up; the best
// failure, once every copy sent has failed.
func (c *call) takeCopy(h *hedgeRun, e *entrant) (*entrant, classify.Outcome, bool) {
	cp := c.cp
	h.rc.taken(e)
	h.inflight--
	if cp.p.Hedge.Quantile > 0 {
		c.t.behaviour.get(e.scope, c.t.now).latencies().observe(c.t.now().Sub(e.start))
	}
	if c.route != nil {
		c.route.sentTo = e.endpoint
	}
	out, err := c.outcome(e.req, e.resp, e.err)
	e.err = err
	if cp.learner != nil && c.ctx.Err() == nil {
		cp.learner.Record(e.scope, out.Kind)
	}
	if out.Kind == classify.Throttle {
		e.counters.throttles.Add(1)
	}
	if cp.penalty {
		c.notePenalty(e.resp, out, c.t.behaviour.get(e.scope, c.t.now))
	}
	if e.resp != nil && !out.Retryable() || c.ctx.Err() != nil {
		return e, out, true
	}
	if c.route != nil {
		c.route.failed |= 1 << e.endpoint
	}
	if h.kept == nil || failureRank(e, out) >= failureRank(h.kept, h.keptOut) {
		h.rc.discard(h.kept)
		h.kept, h.keptOut = e, out
	} else {
		h.rc.discard(e)
	}
	if h.inflight > 0 {
		return nil, classify.Outcome{}, false
	}
	w, wout := h.kept, h.keptOut
	h.kept = nil
	return w, wout, true
}

// failureRank ranks the failed result of copy e, classified as out, as
// the attempt's result when every copy fails: a response above an error,
// and among responses, any above a secondary's "not replicated yet" 404,
// which may only mean that the secondary lags the primary. Of two results
// of the same rank, the later is kept.
func failureRank(e *entrant, out classify.Outcome) int {
	switch {
	case e.resp == nil:
		return rankError
	case out == notReplicatedOutcome:
		return rankNotReplicated
	}
	return rankResponse
}

// The ranks of failureRank.
const (
	rankError = iota
	rankNotReplicated
	rankResponse
)

// endRace ends the race with w as the attempt's result (nil: none), records
// for the latency quantile how long the losers had taken, and cancels,
// drains and closes every other copy.
func (c *call) endRace(h *hedgeRun, w *entrant, out classify.Outcome) (*http.Response, classify.Outcome, error) {
	if c.cp.p.Hedge.Quantile > 0 {
		c.censor(h.rc)
	}
	if h.kept != w {
		h.rc.discard(h.kept)
	}
	h.rc.finish(w)
	if w == nil {
		// No copy's result: the attempt's is its own (a timeout), in its
		// own endpoint's scope, though a failed copy went elsewhere.
		if r := c.route; r != nil {
			r.sentTo, r.other = r.current(), nil
		}
		return nil, out, nil
	}
	return c.won(w, out)
}

// censor records, for the latency quantile of their scopes, how long the
// copies still running have taken so far: they lose, and will never say
// how long they would have taken, but leaving them out would keep only the
// fast answers and make the quantile, and the hedge delay, ever shorter.
func (c *call) censor(rc *race) {
	now := c.t.now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range rc.running {
		c.t.behaviour.get(e.scope, c.t.now).latencies().observe(now.Sub(e.start))
	}
}

// won returns the result of the winning copy e: its costs refunded if it
// was a hedge that succeeded, its context released with its body, and the
// route pointed at its endpoint, for the events and the quotas.
func (c *call) won(e *entrant, out classify.Outcome) (*http.Response, classify.Outcome, error) {
	if e.n > 0 && out.Kind == classify.Success && e.err == nil {
		c.cp.refund(&e.paid, e.qscope, c.home())
	}
	if r := c.route; r != nil {
		r.sentTo, r.other = e.endpoint, nil
		if e.endpoint != r.current() {
			r.other = e
		}
	}
	if e.resp == nil || !needsContext(e.resp) {
		e.cancel()
	} else {
		e.resp.Body = &cancelOnClose{ReadCloser: e.resp.Body, cancel: e.cancel}
	}
	return e.resp, out, e.err
}

// enter readies copy e to be sent as a deep copy of r (its URL, header
// and trailer), with a context of its own. A copy that loses the race may
// still be in the base transport after RoundTrip returned, when the
// caller may reuse its request: nothing the copy's round trip reads may be
// the caller's. r's body must be the copy's own already (see ownBody).
func (c *call) enter(e *entrant, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	e.req, e.cancel, e.start = r.Clone(ctx), cancel, c.t.now()
}

// ownBody gives *areq, the request of an attempt about to be hedged, a
// body of the transport's own: the first attempt's is the caller's, which
// a copy that loses may still be reading after RoundTrip returned, so it
// gets a fresh one from GetBody, and the caller's is closed now, unread. A
// retry's body came from GetBody already. When GetBody fails, the request
// is not hedged after all: ownBody reports false, and the attempt goes
// alone, with the caller's body, as an attempt that is not hedged does.
func (c *call) ownBody(areq **http.Request) bool {
	if c.attempt > 1 || !hasBody(c.req) {
		return true
	}
	b, err := c.req.GetBody()
	if err != nil || b == nil {
		closeReader(b)
		c.hedging = false
		return false
	}
	closeReader(c.req.Body)
	r := (*areq).WithContext((*areq).Context())
	r.Body = b
	*areq = r
	return true
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
	h := &c.cp.p.Hedge
	d := h.Delay
	if h.Quantile > 0 {
		if q, ok := c.t.behaviour.get(c.scope, c.t.now).latencies().quantile(h.Quantile); ok {
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
	cp := c.cp
	endpoint := c.endpoint()
	if c.route != nil {
		rt := *c.route
		for range n {
			rt.next()
		}
		endpoint = rt.current()
	}
	home := c.home()
	e := &entrant{n: n, endpoint: endpoint, scope: cp.endpointScope(c.req, endpoint, home)}
	e.qscope = cp.quotaScope(e.scope, home)
	// A hedge pays as a retry after a Timeout would, and waits for nothing.
	pd, wait, ok := cp.pay(classify.Timeout, e.qscope, home, true)
	if !ok {
		return nil
	}
	e.paid = pd
	if wait > 0 {
		cp.giveBack(&e.paid, e.qscope, home)
		return nil
	}
	r := areq.WithContext(areq.Context())
	if endpoint != c.endpoint() {
		cp.readdress(r, c.req, endpoint) // areq's URL, as a WithBeforeRetry hook left it
	}
	if hasBody(c.req) {
		b, err := c.req.GetBody()
		if err != nil || b == nil {
			cp.giveBack(&e.paid, e.qscope, home)
			return nil
		}
		r.Body = b
	}
	if !c.paceHedge(e.scope) {
		closeReader(r.Body)
		cp.giveBack(&e.paid, e.qscope, home)
		return nil
	}
	c.enter(e, r)
	e.counters = c.t.stats.get(e.scope, cp)
	e.counters.attempts.Add(1)
	e.counters.hedges.Add(1)
	c.hedges++
	return e
}

// paceHedge takes a send token for a hedge to scope from the policy's rate
// limiters, and reports whether it got one without waiting: a hedge is
// worth sending now or not at all.
func (c *call) paceHedge(scope string) bool {
	cp := c.cp
	var turn ratelimit.Reservation
	if cp.limiter != nil {
		r, w, ok := cp.limiter.Reserve(scope)
		if !ok {
			return false
		}
		if w > 0 {
			r.Cancel()
			return false
		}
		turn = r
	}
	if cp.fixed != nil {
		r, w, ok := cp.fixed.Reserve(scope)
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
