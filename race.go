package retrytransport

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// hedgeRace is the shared state of a hedged attempt's copies: those in
// flight deliver to results until the attempt is over; a copy that returns
// after that discards what it got.
type hedgeRace struct {
	mu      sync.Mutex
	over    bool
	results chan *attempt // buffered for every copy: delivering never blocks
	running []*attempt    // the copies not yet delivered
	drain   func(*http.Response)
}

// start sends copy e through base in a goroutine of its own, which ends
// with its round trip.
func (hr *hedgeRace) start(base http.RoundTripper, e *attempt) {
	hr.mu.Lock()
	hr.running = append(hr.running, e)
	hr.mu.Unlock()
	go hr.run(base, e)
}

// run sends e through base and delivers what it got, unclassified.
func (hr *hedgeRace) run(base http.RoundTripper, e *attempt) {
	resp, err := base.RoundTrip(e.req)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	e.resp, e.err = resp, err
	hr.mu.Lock()
	if !hr.over {
		hr.results <- e
		hr.mu.Unlock()
		return
	}
	hr.mu.Unlock()
	hr.discard(e)
}

// discard ends a losing copy's context, then drains and closes what it
// got: after the cancellation, the drain takes only what has arrived, and
// a stalled body holds nobody up.
func (hr *hedgeRace) discard(e *attempt) {
	if e == nil {
		return
	}
	e.cancel()
	if e.resp != nil {
		hr.drain(e.resp)
	}
}

// finish ends the race: the copies still running are cancelled and will
// discard their results; those delivered and not taken are discarded now.
func (hr *hedgeRace) finish(winner *attempt) {
	hr.mu.Lock()
	hr.over = true
	for _, e := range hr.running {
		if e != winner {
			e.cancel()
		}
	}
	hr.mu.Unlock()
	for {
		select {
		case e := <-hr.results:
			hr.discard(e)
		default:
			return
		}
	}
}

// taken removes e from the running copies, once it was received.
func (hr *hedgeRace) taken(e *attempt) {
	hr.mu.Lock()
	for i, c := range hr.running {
		if c == e {
			hr.running = append(hr.running[:i], hr.running[i+1:]...)
			break
		}
	}
	hr.mu.Unlock()
}

// raceHedged sends attempt a, and while no copy has an acceptable answer
// sends copies of it, each after the hedge delay, up to
// Policy.Hedge.MaxHedges. Every copy is classified and settled as it
// returns. The first response whose outcome is not retryable wins; the
// others are cancelled, and their responses drained and closed. When
// every copy failed, the attempt's result is the last response, or the
// last error if none got a response; a secondary's "not replicated yet"
// 404 is the result only if no other copy got a response (see
// failureRank). A timeout (a.timeout) ends every copy, as it ends a lone
// attempt, but a response that arrived before it is still the attempt's,
// unless it is a secondary's not-replicated 404.
//
// Each copy runs in a goroutine of its own, which ends with its round
// trip; the hedge delay is slept in one more, which ends with the attempt.
// The copies are values of their own: a stays on the caller's stack and
// takes the winner's result (see take).
func (r *request) raceHedged(a *attempt) {
	p := &r.cp.p
	copies := 1 + r.cp.hedge.copies()
	h := hedgeRun{hr: &hedgeRace{results: make(chan *attempt, copies),
		drain: func(resp *http.Response) { drain(resp, p.MaxDrain, p.ReadTimeout) }}}
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
	r.enter(first)
	h.hr.start(r.t.base, first)
	r.armHedge(hctx, &timers, tick, a)
	sent := 1
	h.inflight = 1
	for {
		select {
		case e := <-h.hr.results:
			if w := r.takeCopy(&h, e); w != nil {
				r.endRace(&h, a, w)
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
			r.endRace(&h, a, w)
			if w == nil {
				r.timedOut(a)
				r.settle(a)
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
	h.hr.taken(e)
	h.inflight--
	e.took = r.t.now().Sub(e.start)
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
	for len(h.hr.results) > 0 { // only this goroutine receives: it does not block
		if w := r.takeCopy(h, <-h.hr.results); w != nil {
			return w
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

// endRace ends the race with w as the attempt's result (nil: none), records
// for the latency quantile how long the losers had taken, cancels, drains
// and closes every other copy, and gives a the winner's result.
func (r *request) endRace(h *hedgeRun, a, w *attempt) {
	if r.cp.learnsLatency {
		r.censor(h.hr)
	}
	if h.kept != w {
		h.hr.discard(h.kept)
	}
	h.hr.finish(w)
	if w != nil {
		a.take(w)
	}
}

// censor records, for the latency quantile of their scopes, how long the
// copies still running have taken so far: they lose, and will never say
// how long they would have taken, but leaving them out would keep only the
// fast answers and make the quantile, and the hedge delay, ever shorter.
func (r *request) censor(hr *hedgeRace) {
	now := r.t.now()
	hr.mu.Lock()
	defer hr.mu.Unlock()
	for _, e := range hr.running {
		e.behaviour.latencies().observe(now.Sub(e.start))
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
