package retrytransport

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
)

// hedgeRace is the shared state of a hedged attempt's copies. While the
// race is on, a copy that returns from the base transport is handed to
// the attempt loop, which classifies and settles it; once it is over, a
// copy that returns settles itself, in its own goroutine (settleLate). So
// every copy is settled exactly once, whenever it ends, and RoundTrip
// waits for none that lost. The race holds what that needs (the compiled
// policy, the transport, the caller's context), never the request, which
// lives on RoundTrip's stack.
type hedgeRace struct {
	cp  *compiled
	t   *Transport
	ctx context.Context // the caller's

	results chan *attempt // unbuffered: a copy handed over is one the loop took
	over    chan struct{} // closed when the race is over: no copy is taken after

	mu       sync.Mutex
	running  []*attempt // the copies still in the base transport
	timedOut bool       // the race ended at its timer (set with over)
}

// newHedgeRace returns the race of the copies of an attempt of r.
func newHedgeRace(r *request) *hedgeRace {
	return &hedgeRace{cp: r.cp, t: r.t, ctx: r.ctx, results: make(chan *attempt), over: make(chan struct{})}
}

// start sends copy e through base in a goroutine of its own, which ends
// with its round trip and, if the race is over by then, e's settling.
func (hr *hedgeRace) start(base http.RoundTripper, e *attempt) {
	hr.mu.Lock()
	hr.running = append(hr.running, e)
	hr.mu.Unlock()
	go hr.run(base, e)
}

// run sends e through base and hands what it got, unclassified, to the
// attempt loop, or, once the race is over, settles it.
func (hr *hedgeRace) run(base http.RoundTripper, e *attempt) {
	resp, err := base.RoundTrip(e.req)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	took := hr.t.since(e.start)
	hr.mu.Lock()
	e.resp, e.err, e.took = resp, err, took
	cut := !hr.answered(e)
	timedOut := hr.timedOut
	hr.mu.Unlock()
	if !cut {
		select {
		case hr.results <- e:
			return
		case <-hr.over:
		}
	}
	hr.settleLate(e, cut, timedOut)
}

// answered removes e, which returned from the base transport, from the
// copies running, and reports false if the race had ended first, and
// cancelled e (see finish). The caller holds hr.mu.
func (hr *hedgeRace) answered(e *attempt) bool {
	for i, c := range hr.running {
		if c == e {
			hr.running = append(hr.running[:i], hr.running[i+1:]...)
			return true
		}
	}
	return false
}

// settleLate settles copy e, which returned after its race was over, in
// its own goroutine, then cancels its context, and drains and closes its
// response, as discard does. A copy the race cut, still in the base
// transport when the race ended, was cancelled, and its time censored
// (see finish): if the race ended at its timer, it timed out, as a lone
// attempt whose timer fires does, whatever it got since; otherwise, if it
// got no response, it never answered and is only released. Any other copy
// answered, and is classified, its body reads bounded by ReadTimeout, and
// settled: its outcome goes to the limiter, its throttle to the counts,
// its penalty signal and published quota to its scope, and, if it was not
// censored, its latency to the quantile.
func (hr *hedgeRace) settleLate(e *attempt, cut, timedOut bool) {
	cp := hr.cp
	resp := e.resp
	switch {
	case cut && timedOut:
		e.timedOut(hr.ctx)
		cp.settle(hr.ctx, hr.t.now, e, false)
	case cut && resp == nil:
		cp.release(e)
	default:
		if resp != nil {
			e.out = cp.classifyResponse(e.req, resp)
		} else {
			e.out = cp.errorOutcome(e.req, e.err)
		}
		cp.settle(hr.ctx, hr.t.now, e, !cut)
	}
	e.cancel()
	if resp != nil {
		drain(resp, cp.p.MaxDrain, cp.p.ReadTimeout)
	}
}

// discard ends copy e, taken and settled, that the attempt does not keep:
// it cancels e's context, then drains and closes its response. After the
// cancellation, the drain takes only what has arrived, and a stalled body
// holds nobody up.
func (hr *hedgeRace) discard(e *attempt) {
	if e == nil {
		return
	}
	e.cancel()
	if e.resp != nil {
		drain(e.resp, hr.cp.p.MaxDrain, hr.cp.p.ReadTimeout)
	}
}

// finish ends the race, at its timer if timedOut: the copies still in the
// base transport are cut, that is cancelled, and, when the policy learns
// latency, censored: recorded for the quantile of their scopes at how
// long they have taken so far. They lose, and may never say how long they
// would have taken, but leaving them out would keep only the fast answers
// and make the quantile, and the hedge delay, ever shorter. Each copy
// settles itself when it returns (settleLate).
func (hr *hedgeRace) finish(timedOut bool) {
	var now time.Time
	if hr.cp.learnsLatency {
		now = hr.t.now()
	}
	hr.mu.Lock()
	hr.timedOut = timedOut
	for _, e := range hr.running {
		if hr.cp.learnsLatency {
			e.behaviour.latencies().observe(now.Sub(e.start))
		}
		e.cancel()
	}
	hr.running = nil
	hr.mu.Unlock()
	close(hr.over)
}

// raceHedged sends attempt a, and while no copy has an acceptable answer
// sends copies of it, each after the hedge delay, up to
// Policy.Hedge.MaxHedges. Every copy is classified and settled as it
// returns, those that return after the race was decided in their own
// goroutines (see hedgeRace). The first response whose outcome is not
// retryable wins; the others are cancelled, and their responses drained
// and closed. When every copy failed, the attempt's result is the last
// response, or the last error if none got a response; a secondary's "not
// replicated yet" 404 is the result only if no other copy got a response
// (see failureRank). A timeout (a.timeout) ends every copy, as it ends a lone
// attempt, but a response that arrived before it is still the attempt's,
// unless it is a secondary's not-replicated 404; each copy it ends timed
// out.
//
// Each copy runs in a goroutine of its own, which ends with its round
// trip and, if it lost, its settling, bounded by ReadTimeout and MaxDrain;
// the hedge delay is slept in one more, which ends with the attempt.
// The copies are values of their own: a stays on the caller's stack and
// takes the winner's result (see take).
func (r *request) raceHedged(a *attempt) {
	copies := 1 + r.cp.hedge.copies()
	h := hedgeRun{hr: newHedgeRace(r)}
	tick := make(chan struct{}, 1)
	var timers sync.WaitGroup // the hedge delays' goroutines, which end with the race
	defer timers.Wait()
	hctx, stopTicks := context.WithCancel(r.ctx)
	defer stopTicks()
	var timeoutC <-chan time.Time
	if a.timeout > 0 {
		tm := time.NewTimer(a.timeout)
		defer tm.Stop()
		timeoutC = tm.C
	}
	first := new(attempt)
	*first = *a
	a.pass, a.permit = breaker.Pass{}, concurrency.Permit{} // first's now, settled with it
	r.enter(first)
	h.hr.start(r.t.base, first)
	r.armHedge(hctx, &timers, tick, a)
	sent := 1
	h.inflight = 1
	for {
		select {
		case e := <-h.hr.results:
			if w := r.takeCopy(&h, e); w != nil {
				r.endRace(&h, a, w, false)
				return
			}
		case <-tick:
			if sent < copies {
				if e := r.hedge(a, sent); e != nil {
					h.hr.start(r.t.base, e)
					sent++
					h.inflight++
					if sent < copies {
						r.armHedge(hctx, &timers, tick, a)
					}
				}
			}
		case <-timeoutC:
			w := r.timeUp(&h)
			r.endRace(&h, a, w, true)
			if w == nil {
				// Each copy the timer ended settles itself as timed out.
				a.timedOut(r.ctx)
				if r.route != nil {
					r.noteRoute(a)
				}
			}
			return
		}
	}
}

// hedgeRun is the attempt loop's side of a race: what it has received.
type hedgeRun struct {
	hr       *hedgeRace
	inflight int      // copies sent and not yet received
	kept     *attempt // the best failure so far, by failureRank
}

// takeCopy classifies and settles copy e, and returns the attempt's winner
// if there is one now: e, if it got a response that will not be retried
// or the caller gave up; the best failure, once every copy sent has
// failed.
func (r *request) takeCopy(h *hedgeRun, e *attempt) *attempt {
	h.inflight--
	r.classify(e, e.req, e.resp, e.err)
	r.settle(e)
	if e.resp != nil && !e.out.Retryable() || r.ctx.Err() != nil {
		return e
	}
	if h.kept == nil || failureRank(e) >= failureRank(h.kept) {
		h.hr.discard(h.kept)
		h.kept = e
	} else {
		h.hr.discard(e)
	}
	if h.inflight > 0 {
		return nil
	}
	w := h.kept
	h.kept = nil
	return w
}

// timeUp returns the winner of a race that its timer ended: what arrived
// with the timer is taken first, as a lone attempt's timer is settled for
// whichever came first; then a failure that came in time, as a lone
// attempt's would be, but not a secondary's 404 while the primary's copy
// may still answer. With none, it returns nil, and the attempt timed out.
func (r *request) timeUp(h *hedgeRun) *attempt {
	for taking := true; taking; {
		select {
		case e := <-h.hr.results: // a copy waiting to be taken
			if w := r.takeCopy(h, e); w != nil {
				return w
			}
		default:
			taking = false
		}
	}
	if h.kept != nil && failureRank(h.kept) == rankResponse {
		w := h.kept
		h.kept = nil
		return w
	}
	return nil
}

// failureRank ranks the failed result of copy e as the attempt's result
// when every copy fails: a response above an error, and among responses,
// any above a secondary's "not replicated yet" 404, which may only mean
// that the secondary lags the primary. Of two results of the same rank,
// the later is kept.
func failureRank(e *attempt) int {
	switch {
	case e.resp == nil:
		return rankError
	case e.notReplicated:
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

// endRace ends the race, at its timer if timedOut, with w as the
// attempt's result (nil: none): it cuts the copies still running (see
// hedgeRace.finish), which settle themselves when they return, cancels,
// drains and closes the failure kept if it is not w, and gives a the
// winner's result.
func (r *request) endRace(h *hedgeRun, a, w *attempt, timedOut bool) {
	h.hr.finish(timedOut)
	if h.kept != w {
		h.hr.discard(h.kept)
	}
	if w != nil {
		a.take(w)
	}
}

// take gives a, the attempt, the result of its winning copy w: w's
// endpoint and scope, for the Event and the quotas, its response, with
// w's context released when its body is closed, and, if w is a hedge,
// its payment, to be refunded if it succeeded.
func (a *attempt) take(w *attempt) {
	if w.hedge > 0 {
		a.hedgePay = w.pay
	}
	a.endpoint, a.scope, a.stats, a.behaviour = w.endpoint, w.scope, w.stats, w.behaviour
	a.resp, a.err, a.out, a.notReplicated = w.resp, w.err, w.out, w.notReplicated
	if w.resp == nil || !needsContext(w.resp) {
		w.cancel()
	} else {
		w.resp.Body = &cancelOnClose{ReadCloser: w.resp.Body, cancel: w.cancel}
	}
}
