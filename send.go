package retrytransport

import (
	"errors"
	"net/http"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// race sends attempt a, and for a request that hedges, its copies (see
// raceHedged): a lone attempt is a race of one. Every copy that returns
// is classified and settled, and a is left with the result the attempt
// takes: its own, or a copy's. A race of one starts no goroutine.
func (r *request) race(a *attempt) {
	r.n++
	a.turn = ratelimit.Reservation{} // the send token is spent
	a.stats.attempts.Add(1)
	if a.n > 1 {
		a.stats.retries.Add(1)
		a.mark.Waited = r.waited
	}
	if r.watch != nil {
		r.watch.reset()
	}
	if r.hedging && r.ownBody(a) {
		r.raceHedged(a)
		return
	}
	r.send(a)
	r.settle(a)
}

// send sends a alone, within its timeout if it has one, and classifies
// what came back.
func (r *request) send(a *attempt) {
	req := a.req
	var timer *attemptTimer
	if a.timeout > 0 {
		req, timer = startAttemptTimer(req, a.timeout)
	}
	resp, err := r.t.base.RoundTrip(req)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	if timer != nil {
		var fired bool
		if resp, fired = timer.end(resp); fired { // the timer cancelled the attempt's context already
			r.timedOut(a)
			return
		}
	}
	if resp != nil && r.cp.unclassified && r.t.final == nil { // a final observer needs the outcome
		a.resp, a.out, a.unclassified = resp, classify.Outcome{Kind: classify.Success}, true
		return
	}
	// The attempt's context stays alive while it is classified; classify
	// bounds its own reads of the body.
	r.classify(a, req, resp, err)
	if timer != nil {
		timer.release(a.resp)
	}
}

// timedOut gives a, whose timer fired before its response headers came,
// its outcome: a Timeout, unless the caller's own end came too, which
// then decides.
func (r *request) timedOut(a *attempt) {
	a.resp = nil
	if err := r.ctx.Err(); err != nil {
		a.out, a.err = classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}, err
		return
	}
	a.out, a.err = classify.Outcome{Kind: classify.Timeout, Reason: "attempt timeout"}, errAttemptTimeout
}

// classify gives copy a, whose request req got resp or err, its result:
// the response, as the caller sees it, or the error, said more precisely
// where the request knows more than the base transport (see
// bodyLengthError), and its outcome.
func (r *request) classify(a *attempt, req *http.Request, resp *http.Response, err error) {
	a.resp, a.err = resp, err
	if resp != nil {
		if req != r.req {
			resp.Request = r.req // the caller's request, not our per-attempt copy
		}
		a.out = r.classifyResponse(req, resp)
		if r.route != nil && a.out.Kind != classify.Success && r.route.notReplicated(resp, a.endpoint) {
			a.out, a.notReplicated = notReplicatedOutcome, true
		}
		return
	}
	if err != errNoResponse && r.bodyLengthWrong() {
		a.out = classify.Outcome{Kind: classify.Fatal, Reason: "request body length differs from ContentLength"}
		a.err = &bodyLengthError{declared: r.req.ContentLength, err: err}
		return
	}
	a.out = r.cp.errorOutcome(req, err)
}

// classifyResponse classifies resp, bounding in time the reads of its
// body that classification makes (Policy.ReadTimeout).
func (r *request) classifyResponse(req *http.Request, resp *http.Response) classify.Outcome {
	p := &r.cp.p
	if !r.cp.mayBeRead(resp) {
		return p.Classify(req, resp, nil)
	}
	tb := boundReads(resp, p.ReadTimeout)
	out := p.Classify(req, resp, nil)
	tb.release(resp)
	return out
}

// settle records the outcome of copy a, in a's scope, whether the attempt
// takes its result or not: the limiter learns it, and the quota its
// response publishes (unless the caller gave up first, which says nothing
// of the server), a throttle is counted, a
// penalty signal starts the scope's penalty, a hedged copy's latency is
// learned, and a secondary's "not replicated yet" sends the request's
// next attempts to the primary.
func (r *request) settle(a *attempt) {
	cp := r.cp
	if cp.learner != nil && r.ctx.Err() == nil {
		cp.learner.Record(a.scope, a.out.Kind)
	}
	if cp.quotas != nil && a.resp != nil && r.ctx.Err() == nil {
		r.recordQuota(a)
	}
	if a.out.Kind == classify.Throttle {
		a.stats.throttles.Add(1)
	}
	if cp.penalty != nil {
		r.notePenalty(a)
	}
	if cp.learnsLatency && !a.start.IsZero() { // a hedged copy
		a.behaviour.latencies().observe(a.took)
	}
	if r.route != nil {
		if a.resp == nil || a.out.Retryable() {
			r.route.failed |= 1 << a.endpoint
		}
		if a.notReplicated {
			r.route.toPrimary = true
		}
	}
}

// recordQuota tells the limiter the quota that a's response publishes in
// the fields the policy trusts, if any: on every status, since a server
// that reports its quota on its successes lets the limiter pace before
// the quota runs out.
func (r *request) recordQuota(a *attempt) {
	h := a.resp.Header
	// Most responses publish nothing: look before reading the clock.
	if h["Ratelimit"] == nil && h["Ratelimit-Remaining"] == nil && h["X-Ratelimit-Remaining"] == nil {
		return
	}
	if q, _, ok := retryafter.ParseQuota(h, r.t.now(), r.cp.p.ServerDelay.Headers); ok {
		r.cp.quotas.RecordQuota(a.scope, q.Remaining, q.Reset)
	}
}

// errNoResponse is the error of an attempt whose base transport returned
// neither a response nor an error, which breaks the RoundTripper contract;
// net/http's Client reports the same.
var errNoResponse = errors.New("retrytransport: base RoundTripper returned a nil *Response with a nil error")
