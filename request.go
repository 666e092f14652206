package retrytransport

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/quota"
)

// request is one RoundTrip: what lives as long as the request, across its
// attempts. Each attempt, and each hedged copy of one, is an attempt value.
type request struct {
	t   *Transport
	cp  *compiled
	req *http.Request   // the caller's; never modified
	ctx context.Context // req's

	home       string          // the scope of req's URL: its Budget's, wherever its attempts go
	route      *route          // where its attempts go, for a request that may fail over; nil otherwise
	replay     *replayBuffer   // replays a body without GetBody; nil otherwise
	watch      *connWatch      // what each attempt's connection did, for a request that is not idempotent; nil otherwise
	attemptCtx context.Context // ctx, with watch's trace if there is one: every attempt's context derives from it
	idempotent bool            // it may be sent again after any retryable outcome
	hedging    bool            // its attempts may be hedged (Policy.Hedge)
	timeEnd    time.Time       // when Policy.MaxTotalTime runs out; zero for none
	length     lengthCheck     // whether its body's length matches ContentLength, once known

	max    int           // attempts allowed: the policy's, fewer when an SDK retries (sdk.go), more after paced throttles
	sdk    bool          // the SDK will retry what this request does not
	extra  int           // retries after paced throttles that may still raise max (see throttleRetrier); 0 once an SDK marked it
	n      int           // attempts sent so far
	hedges int           // hedged copies sent so far
	waited time.Duration // time spent waiting before attempts so far
	paid   payment       // what decide paid for the next attempt, until prepare hands it over
}

// start sets r up as the request of req under policy cp, before its first
// attempt. (It fills in a request in place rather than returning one: the
// copy of a returned request cost the happy path about 8 ns, of an
// allowance of 1.8 times the overhead before the request was a value of
// its own.)
func (r *request) start(t *Transport, req *http.Request, cp *compiled) {
	p := &cp.p
	r.t, r.cp, r.req, r.ctx, r.home, r.max = t, cp, req, req.Context(), cp.scope(req), p.MaxAttempts
	r.extra = cp.throttleExtra
	r.attemptCtx = r.ctx
	if cp.endpoints != nil && cp.endpoints.mayFailOver(req) {
		r.route = &route{e: cp.endpoints}
	}
	r.hedging = cp.mayHedge(req)
	cp.countRequest(r.home)
	retries := r.max > 1
	if retries && hasBody(req) && req.GetBody == nil {
		r.replay = newReplayBuffer(req.Body, p.MaxBodyBuffer)
	}
	r.idempotent = cp.idempotent(req)
	if retries && !r.idempotent {
		r.watch = new(connWatch)
		r.attemptCtx = r.watch.context(r.ctx)
	}
	if p.MaxTotalTime > 0 {
		r.timeEnd = t.now().Add(p.MaxTotalTime)
	}
}

// run is the attempt loop. Each turn prepares the next attempt, paces it,
// sends it (a race of one, or with its hedges, every copy settled), and
// decides, before anything is announced, whether another attempt follows
// and after what wait; then announces the retry and waits. The last
// attempt's response is kept intact until the next attempt is certain to
// go, so that an attempt refused on the way gives the caller that
// response.
func (r *request) run() (resp *http.Response, err error) {
	if r.replay != nil {
		defer func() { r.replay.finish(resp == nil) }()
	}
	var first attempt
	a, last := &first, (*attempt)(nil) // the next attempt, and the last one sent (none yet)
	for {
		stop := r.ready(a, last)
		if stop != nil {
			return r.abandon(last, a, stop)
		}
		if last != nil {
			last.release(r)
		}
		r.race(a)
		retry, stop := r.decide(a)
		if !retry {
			return r.finish(a, stop)
		}
		r.announce(a)
		if err := r.t.sleep(r.ctx, a.wait); err != nil {
			return r.abandon(a, nil, err)
		}
		r.waited = addSaturating(r.waited, a.wait)
		if last == nil {
			last = new(attempt) // the retry's slot: most requests end at their first attempt and need none
		}
		a, last = last, a
	}
}

// ready prepares and paces a, the attempt after last, and returns why it is
// not to be sent, if it is not. When the breaker of a's endpoint is open
// and the request may fail over, a goes to the next endpoint at once
// instead of failing, trying each endpoint once; a retry's payment moves
// with it, to the scope it now goes to.
func (r *request) ready(a, last *attempt) error {
	stop := r.prepare(a, last)
	if stop == nil {
		stop = r.pace(a)
	}
	for tried := 1; stop != nil && r.route != nil && tried < len(r.route.e.order) && errors.Is(stop, breaker.ErrOpen); tried++ {
		a.unsend()
		*a = attempt{n: a.n} // given back: nothing left to undo
		r.route.next()
		if r.n > 0 {
			k := last.out.Kind
			scope := r.cp.endpointScope(r.req, r.route.current(), r.home)
			pay, wait, refused := r.cp.pay(k, scope, r.home, !r.cp.pacesThrottles(k))
			if refused == nil && wait > 0 {
				pay.cancel()
				refused = quota.ErrExceeded
			}
			if refused != nil {
				return refused
			}
			r.paid = pay
		}
		if stop = r.prepare(a, last); stop == nil {
			stop = r.pace(a)
		}
	}
	return stop
}

// abandon ends the request before next, the attempt after last, is sent
// (next is nil when the wait before it was cut short), for stop: what next
// took is given back (its payment, its adaptive send token, a body the
// transport made for it), and the request ends with last's result.
// Before the first attempt there is none, and the caller's body is closed.
// The caller's own cancellation is the exception: it gets the context's
// error, as it would without this transport, and last's response is
// closed.
func (r *request) abandon(last, next *attempt, stop error) (*http.Response, error) {
	r.paid.cancel()
	if next != nil {
		next.unsend()
	}
	if r.n == 0 {
		if r.replay == nil {
			closeReader(r.req.Body) // with a replay buffer, run's finish closes it
		}
		return r.finish(next, stop)
	}
	if err := r.ctx.Err(); err != nil && errors.Is(stop, err) {
		if last.resp != nil && last.resp.Body != nil {
			last.resp.Body.Close() // not drained: its reads end with the context anyway
		}
		last.dropped = true
	}
	return r.finish(last, stop)
}

// finish ends the request with a's result, the one way out of the loop:
// stop is nil when a succeeded, and otherwise says why no attempt follows.
// It hands the request's final Event to the observers, and the caller
// gets a's response, untouched, or its error in a *RetryError; before the
// first attempt (a not sent, with neither), a *RetryError of 0 attempts
// whose Err is stop. The observers of WithObserver hear of a request that
// took more than one attempt, or whose retryable outcome ends it; the
// final observers, of every request whose response was classified.
func (r *request) finish(a *attempt, stop error) (*http.Response, error) {
	if !a.unclassified {
		r.emitFinal(a, stop, r.n != 1 || a.out.Retryable())
	}
	resp, err := a.resp, a.err
	if a.dropped {
		resp, err = nil, r.ctx.Err()
	}
	resp, err = giveUp(resp, err, r.n, r.waited, stop)
	if resp != nil && (r.n > 1 || r.waited > 0) {
		rememberAttempts(resp, Attempts{Count: r.n, Waited: r.waited})
	}
	return resp, err
}

// giveUp returns the last attempt's result: its response untouched, or its
// error wrapped in a *RetryError; with neither (no attempt was made), a
// *RetryError whose Err is the reason.
func giveUp(resp *http.Response, err error, attempts int, waited time.Duration, reason error) (*http.Response, error) {
	if resp != nil {
		return resp, nil
	}
	if err == nil {
		err = reason
	}
	return nil, &RetryError{Attempts: attempts, Reason: reason, Err: err, Waited: waited}
}

// announce tells the observers that a retry follows a, after a.wait.
func (r *request) announce(a *attempt) {
	if r.t.observe != nil || r.t.logger != nil {
		r.t.emit(r.event(a))
	}
}

// emitFinal hands the request's final Event, that of a with stop, to the
// final observers and, if the request is one they hear about (observed),
// to the observers and the logger.
func (r *request) emitFinal(a *attempt, stop error, observed bool) {
	t := r.t
	observed = observed && (t.observe != nil || t.logger != nil)
	if !observed && t.final == nil {
		return
	}
	ev := r.event(a)
	ev.Final, ev.Stop = true, stop
	ev.Delay, ev.ServerDelay = 0, false
	if observed {
		t.emit(ev)
	}
	if t.final != nil {
		t.final(ev)
	}
}

// event returns the Event of a, the attempt sent last (none, before the
// first attempt): its scope and endpoint, its result and the wait decided
// after it, and the level of its scope's retry quota.
func (r *request) event(a *attempt) Event {
	ev := Event{Request: r.req, Scope: a.scope, Attempt: r.n, Hedges: r.hedges,
		Outcome: a.out, Err: a.err, Delay: a.wait, ServerDelay: a.server, Waited: r.waited,
		Quota: r.cp.quotaLevel(a.scope), RequestPolicy: r.cp.hostPolicy != nil}
	if a.resp != nil {
		ev.StatusCode = a.resp.StatusCode
	}
	if r.route != nil {
		ev.Endpoint = r.cp.host(r.req, a.endpoint)
	}
	return ev
}
