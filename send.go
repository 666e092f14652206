package retrytransport

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// race sends attempt a, and for a request that hedges, its copies (see
// raceHedged): a lone attempt is a race of one. Every copy sent is
// classified and settled once, whenever it ends (a losing hedge possibly
// after race returned), and a is left with the result the attempt takes:
// its own, or a copy's. A race of one starts no goroutine.
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
	// A limit that learns from latency needs two readings of the clock;
	// since(epoch) reads only the monotonic one, half the cost of now().
	var sent time.Duration
	timed := a.permit.LearnsLatency()
	if timed {
		sent = r.t.since(r.t.epoch)
	}
	resp, err := r.t.base.RoundTrip(req)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	if timed {
		a.took = r.t.since(r.t.epoch) - sent
	}
	if timer != nil {
		var fired bool
		if resp, fired = timer.end(resp); fired { // the timer cancelled the attempt's context already
			a.timedOut(r.ctx)
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
// its outcome: a Timeout, unless the caller's own end (ctx, the caller's
// context) came too, which then decides.
func (a *attempt) timedOut(ctx context.Context) {
	a.resp = nil
	if err := ctx.Err(); err != nil {
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
		a.out = r.cp.classifyResponse(req, resp)
		if r.route != nil && a.out.Kind != classify.Success && r.route.notReplicated(resp, a.endpoint) {
			a.out, a.notReplicated = notReplicatedOutcome, true
		}
		return
	}
	if err != errNoResponse && r.length.mismatch(r.req, r.replay, r.cp.p.MaxBodyBuffer) {
		a.out = classify.Outcome{Kind: classify.Fatal, Reason: "request body length differs from ContentLength"}
		a.err = &bodyLengthError{declared: r.req.ContentLength, err: err}
		return
	}
	a.out = r.cp.errorOutcome(req, err)
}

// classifyResponse classifies resp, the response to req, bounding in time
// the reads of its body that classification makes (Policy.ReadTimeout).
func (cp *compiled) classifyResponse(req *http.Request, resp *http.Response) classify.Outcome {
	p := &cp.p
	if !mayBeRead(resp, cp.customClassify) {
		return p.Classify(req, resp, nil)
	}
	tb := boundReads(resp, p.ReadTimeout)
	out := p.Classify(req, resp, nil)
	tb.release(resp)
	return out
}

// settle settles copy a (see compiled.settle), whether the attempt takes
// its result or not, and tells the request's route what a says of its
// endpoint: a failure there sends the next attempts elsewhere, and a
// secondary's "not replicated yet" sends them to the primary.
func (r *request) settle(a *attempt) {
	r.cp.settle(r.ctx, r.t.now, a, true)
	if r.route != nil {
		r.noteRoute(a)
	}
}

// noteRoute tells the request's route what copy a says of its endpoint.
func (r *request) noteRoute(a *attempt) {
	if a.resp == nil || a.out.Retryable() {
		r.route.failed |= 1 << a.endpoint
	}
	if a.notReplicated {
		r.route.toPrimary = true
	}
}

// settle records, in its scope, what copy a, sent and now ended, says, and
// is called once for every copy sent, whenever it ends. The limiter hears
// a's outcome, in one call with the quota that a's response publishes if
// it paces by one (see ratelimit.QuotaRecorder), or, when the caller's
// context ctx ended first, which says nothing of the server, only that a
// is no longer in flight (see ratelimit.Releaser); a throttle is counted;
// a penalty signal starts the scope's penalty; and with latency, a hedged
// copy's time to its response headers is learned. It reads nothing of a's
// request but what a holds, so that a hedged copy that ends after its race
// can be settled in its own goroutine (see hedgeRace.settleLate).
func (cp *compiled) settle(ctx context.Context, now func() time.Time, a *attempt, latency bool) {
	ended := ctx.Err() != nil
	var q retryafter.Quota
	var published bool
	if !ended {
		q, published = cp.publishedQuota(now, a)
	}
	switch {
	case ended:
		cp.release(a)
	case published:
		cp.quotas.RecordQuota(a.scope, a.out.Kind, q.Remaining, q.Reset)
	case cp.learner != nil:
		cp.learner.Record(a.scope, a.out.Kind)
	case cp.releaser != nil:
		cp.releaser.Release(a.scope)
	}
	// The breaker and the concurrency limit learn from what the server did;
	// the caller's own cancellation says nothing of it.
	if !ended && cp.breaker != nil {
		a.pass.Done(a.out, a.err)
		a.pass = breaker.Pass{}
	}
	if !ended && cp.conc != nil {
		a.permit.Done(a.took, a.out.Kind)
		a.permit = concurrency.Permit{}
	}
	if a.out.Kind == classify.Throttle {
		a.stats.throttles.Add(1)
	}
	if cp.penalty != nil {
		cp.notePenalty(now, a)
	}
	if latency && cp.learnsLatency && !a.start.IsZero() { // a hedged copy
		a.behaviour.latencies().observe(a.took)
	}
}

// release tells the limiter, if it counts the attempts in flight, that
// copy a ended without an outcome it should learn from, and frees a's
// breaker pass and concurrency place without a word about the server.
func (cp *compiled) release(a *attempt) {
	if cp.releaser != nil {
		cp.releaser.Release(a.scope)
	}
	a.pass.Drop()
	a.permit.Drop()
	a.pass, a.permit = breaker.Pass{}, concurrency.Permit{}
}

// publishedQuota returns the quota that a's response publishes in the
// fields the policy trusts (the host's, whose limiter it is, for a
// request with rules of its own), if the limiter paces by one, and
// whether there was one: on every status, since a server that reports its quota
// on its successes lets the limiter pace before the quota runs out.
func (cp *compiled) publishedQuota(now func() time.Time, a *attempt) (retryafter.Quota, bool) {
	if cp.quotas == nil || a.resp == nil || !retryafter.HasQuotaFields(a.resp.Header) { // most responses: no clock reading
		return retryafter.Quota{}, false
	}
	q, _, ok := retryafter.ParseQuota(a.resp.Header, now(), cp.shared().p.ServerDelay.Headers)
	return q, ok
}

// errNoResponse is the error of an attempt whose base transport returned
// neither a response nor an error, which breaks the RoundTripper contract;
// net/http's Client reports the same.
var errNoResponse = errors.New("retrytransport: base RoundTripper returned a nil *Response with a nil error")
