package retrytransport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// call is the state of one request in the attempt loop.
type call struct {
	t        *Transport
	cp       *compiled
	req      *http.Request
	ctx      context.Context
	scope    string         // the current attempt's scope: its endpoint's
	route    *route         // where its attempts go, for a request that may fail over; nil otherwise
	counters *scopeCounters // the current attempt scope's
	replay   *replayBuffer  // records a body without GetBody; nil otherwise
	watch    *connWatch     // for a request that is not idempotent; nil otherwise
	timeEnd  time.Time      // when the time budget, Policy.MaxTotalTime, runs out; zero for none

	max     int                   // attempts allowed: the policy's, or fewer when an SDK retries (sdk.go)
	waited  time.Duration         // time spent waiting before attempts so far
	mark    *Attempts             // the next retry's, in its context; nil before the first retry
	attempt int                   // attempts sent so far
	resp    *http.Response        // the last attempt's response, kept intact until the next attempt goes
	err     error                 // the last attempt's transport error
	ev      *Event                // the decision to retry after the last attempt
	paid    paid                  // what the retry quotas were paid for the next attempt
	turn    ratelimit.Reservation // the next attempt's place in the adaptive limiter's queue while paced; zero otherwise
	body    attemptBody           // what the base transport took of the last attempt's body; nil if not watched
	length  lengthCheck           // whether the body's length matches ContentLength, once known

	// Together, so that they share a word.
	hedges  int32 // hedged copies sent so far
	sdk     bool  // the SDK will retry what this call does not
	paced   bool  // the next attempt holds a send token of the scope's limiters
	hedging bool  // its attempts may be hedged (Policy.Hedge)
}

// roundTrip is the attempt loop: before each attempt, pace it and give it
// its body; send it; classify the outcome; and either end, or plan the
// retry and wait for it.
func (t *Transport) roundTrip(req *http.Request, cp *compiled) (resp *http.Response, err error) {
	p := &cp.p
	// Fields set one by one: a composite literal here is built aside and
	// copied, which costs the happy path more than the rest of this setup.
	var c call
	c.t, c.cp, c.req, c.ctx, c.scope = t, cp, req, req.Context(), cp.scope(req)
	if cp.extras {
		c.setUpExtras()
	}
	c.counters = t.stats.get(c.scope, cp)
	c.max = p.MaxAttempts
	retries := c.max > 1
	if retries && hasBody(req) && req.GetBody == nil {
		c.replay = newReplayBuffer(req.Body, p.MaxBodyBuffer)
		defer func() { c.replay.finish(resp == nil) }()
	}
	idempotent := cp.idempotent(req)
	attemptCtx := c.ctx
	if retries && !idempotent {
		c.watch = new(connWatch)
		attemptCtx = c.watch.context(c.ctx)
	}
	if p.MaxTotalTime > 0 {
		c.timeEnd = t.now().Add(p.MaxTotalTime)
	}

	for {
		// Before the attempt. What may refuse it comes first, and a refusal
		// leaves the last response intact for the caller: the budget, a
		// fresh copy of the body, the attempt's request with the body
		// claimed, the WithBeforeRetry hook, and last the send token, which
		// a fixed rate cannot give back. Only then is the last response
		// drained, and what is left of the budget bounds the attempt.
		if !c.timeEnd.IsZero() && !t.now().Before(c.timeEnd) {
			return c.abandon(ErrBudget)
		}
		areq := req // a first attempt that needs nothing changed is the caller's request
		if c.attempt > 0 || c.replay != nil || c.watch != nil || p.AttemptHeader != "" || c.endpoint() != 0 {
			var reason error
			if areq, reason = c.prepare(attemptCtx); reason != nil {
				return c.abandon(reason)
			}
		}
		if cp.fixed != nil || cp.limiter != nil {
			if reason := c.pace(); reason != nil {
				return c.abandonUnsent(areq, reason)
			}
		}
		timeout := p.AttemptTimeout
		if !c.timeEnd.IsZero() {
			left := c.timeEnd.Sub(t.now())
			if left <= 0 {
				return c.abandonUnsent(areq, ErrBudget)
			}
			if timeout == 0 || left < timeout {
				timeout = left
			}
		}
		c.release() // the next attempt goes: the last response is done with

		resp, out, err := c.send(areq, timeout)
		if !c.hedging { // a race records each copy's outcome in its own scope
			if cp.learner != nil && c.ctx.Err() == nil {
				cp.learner.Record(c.scope, out.Kind)
			}
			if out.Kind == classify.Throttle {
				c.counters.throttles.Add(1)
			}
			if cp.penalty {
				c.notePenalty(resp, out, c.t.behaviour.get(c.scope, c.t.now))
			}
		}
		if out.Kind == classify.Success && err == nil {
			if c.attempt > 1 {
				c.refund()
			} else if cp.extras {
				c.succeeded()
			} else if cp.quota != nil {
				cp.quota.Success(c.scope)
			}
			if c.attempt > 1 || c.waited > 0 || t.final != nil {
				return c.end(resp, nil, out, nil)
			}
			return resp, nil
		}
		c.paid = paid{}
		if !out.Retryable() {
			return c.end(resp, err, out, finalReason(c.ctx))
		}
		if done := c.plan(resp, err, out, idempotent); done {
			return c.resp, c.err
		}
	}
}

// plan decides, after an attempt with a retryable outcome, whether a retry
// follows. If one does, it keeps the attempt's response, pays the quota,
// tells the observer and waits, and reports false. Otherwise it reports
// true with the caller's result in c.resp and c.err. It is apart from the
// loop so that the first attempt's path stays small.
func (c *call) plan(resp *http.Response, err error, out classify.Outcome, idempotent bool) (done bool) {
	t, cp := c.t, c.cp
	if c.attempt == 1 && c.max > 1 && !cp.p.IgnoreSDKAttempts && len(c.req.Header) > 0 {
		c.limitForSDK() // only now: the happy path never looks for the mark
	}
	ev := c.event(resp, err, out)
	if c.route != nil {
		c.routed(&ev)
	}
	var reason error
	switch {
	case !idempotent && !unprocessed(out, resp, err, c.watch, c.body),
		c.replay != nil && !c.replay.replayable(): // known already; decided for good when the retry is prepared
		reason = ErrNotRetryable
	case c.attempt >= c.max && c.sdk:
		reason = ErrSDKRetries
	case c.attempt >= c.max:
		reason = ErrExhausted
	}
	if reason == nil {
		c.moveOn()
		reason = c.planRetry(&ev, resp)
		if errors.Is(reason, ratelimit.ErrQuotaExceeded) {
			c.counters.quotaRefusals.Add(1)
		}
	}
	if reason != nil {
		c.resp, c.err = c.stop(ev, resp, err, reason)
		return true
	}
	t.emit(ev)
	c.resp, c.err, c.ev = resp, err, &ev
	if serr := t.sleep(c.ctx, ev.Delay); serr != nil {
		c.resp, c.err = c.abandon(serr)
		return true
	}
	c.waited = addSaturating(c.waited, ev.Delay)
	return false
}

// send sends areq as the next attempt, within timeout if it is positive,
// and classifies what came back.
func (c *call) send(areq *http.Request, timeout time.Duration) (*http.Response, classify.Outcome, error) {
	if c.watch != nil {
		c.watch.reset()
	}
	c.attempt++
	c.paced, c.turn = false, ratelimit.Reservation{} // the send tokens are spent
	c.counters.attempts.Add(1)
	if c.attempt > 1 {
		c.counters.retries.Add(1)
		c.mark.Waited = c.waited
	}
	if c.route != nil { // the attempt's result is its own until a copy's is taken (won)
		c.route.sentTo, c.route.other = c.route.current(), nil
	}
	if c.hedging && c.ownBody(&areq) {
		return c.sendHedged(areq, timeout)
	}
	if timeout > 0 {
		return c.sendTimed(areq, timeout)
	}
	resp, err := c.t.base.RoundTrip(areq)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	out, err := c.outcome(areq, resp, err)
	return resp, out, err
}

// sendTimed is send with an attempt timer.
func (c *call) sendTimed(areq *http.Request, timeout time.Duration) (*http.Response, classify.Outcome, error) {
	areq, timer := startAttemptTimer(areq, timeout)
	resp, err := c.t.base.RoundTrip(areq)
	if resp == nil && err == nil {
		err = errNoResponse
	}
	resp, fired := timer.end(resp)
	if fired { // the timer cancelled the attempt's context already
		if err := c.ctx.Err(); err != nil { // the caller's own end came too: it decides
			return nil, classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}, err
		}
		return nil, classify.Outcome{Kind: classify.Timeout, Reason: "attempt timeout"}, errAttemptTimeout
	}
	// The attempt's context stays alive while it is classified; classify
	// bounds its own reads of the body.
	out, err := c.outcome(areq, resp, err)
	timer.release(resp)
	return resp, out, err
}

// outcome classifies an attempt that got resp or err, and returns err,
// said more precisely where the attempt knows more than the base transport
// (see bodyLengthError).
func (c *call) outcome(areq *http.Request, resp *http.Response, err error) (classify.Outcome, error) {
	if resp != nil {
		if areq != c.req {
			resp.Request = c.req // the caller's request, not our per-attempt copy
		}
		out := c.classify(areq, resp)
		if c.route != nil && out.Kind != classify.Success && c.route.notReplicated(resp) {
			out = notReplicatedOutcome
		}
		return out, err
	}
	if err != errNoResponse && c.bodyLengthWrong() {
		return classify.Outcome{Kind: classify.Fatal, Reason: "request body length differs from ContentLength"},
			&bodyLengthError{declared: c.req.ContentLength, err: err}
	}
	return c.cp.errorOutcome(areq, err), err
}

// classify classifies an attempt that got resp, bounding in time the reads
// of its body that classification makes (Policy.ReadTimeout).
func (c *call) classify(areq *http.Request, resp *http.Response) classify.Outcome {
	p := &c.cp.p
	if !c.cp.mayBeRead(resp) {
		return p.Classify(areq, resp, nil)
	}
	tb := boundReads(resp, p.ReadTimeout)
	out := p.Classify(areq, resp, nil)
	tb.release(resp)
	return out
}

// rewindBody returns, before a retry, a fresh copy of the caller's body
// from its GetBody: nil when the request has no body, or a recorded one,
// which is only checked here and claimed by next. A GetBody
// that fails, or returns no body, ends the retries.
func (c *call) rewindBody() (io.ReadCloser, error) {
	switch {
	case c.replay != nil:
		if !c.replay.replayable() {
			return nil, errBodyNotReplayable
		}
	case c.req.GetBody != nil && hasBody(c.req):
		b, err := c.req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("%w: Request.GetBody: %w", ErrNotRetryable, err)
		}
		if b == nil {
			return nil, fmt.Errorf("%w: Request.GetBody returned a nil body", ErrNotRetryable)
		}
		return b, nil
	}
	return nil, nil
}

// prepare returns the request of the next attempt, its body rewound for a
// retry, after the WithBeforeRetry hook (if any) had its say, or why the
// attempt is not to be sent; a body it made is then closed.
func (c *call) prepare(ctx context.Context) (*http.Request, error) {
	var body io.ReadCloser
	if c.attempt > 0 {
		var err error
		if body, err = c.rewindBody(); err != nil {
			return nil, err
		}
	}
	areq, err := c.next(ctx, body)
	if err != nil {
		return nil, err // only a recorded body fails, and then there is no body
	}
	if c.attempt > 0 && c.t.beforeRetry != nil {
		if err := c.beforeRetry(areq); err != nil {
			closeReader(areq.Body)
			return nil, err
		}
	}
	return areq, nil
}

// next returns the request to send as the next attempt: a shallow copy of
// the caller's with the attempt's context and a body that yields the whole
// of the caller's (body, from rewindBody, for a retry with GetBody). A
// retry's context carries its Attempts (AttemptFromContext). The header is
// copied when the attempt sets one (Policy.AttemptHeader) or a
// WithBeforeRetry hook may change it, and so is the URL for the hook.
func (c *call) next(ctx context.Context, body io.ReadCloser) (*http.Request, error) {
	n := c.attempt + 1
	if n > 1 {
		c.mark = &Attempts{Count: n} // Waited is set when it is sent, after pacing
		ctx = context.WithValue(ctx, attemptKey{}, c.mark)
	}
	r := c.req.WithContext(ctx)
	h, hook := c.cp.p.AttemptHeader, n > 1 && c.t.beforeRetry != nil
	if h != "" || hook {
		r.Header = c.req.Header.Clone()
		if r.Header == nil {
			r.Header = make(http.Header)
		}
		if h != "" {
			r.Header.Set(h, strconv.Itoa(n))
		}
	}
	if i := c.endpoint(); i != 0 {
		c.cp.readdress(r, c.req, i)
	} else if hook {
		u := *c.req.URL
		r.URL = &u
	}
	c.body = nil
	switch {
	case c.replay != nil:
		cur, ok := c.replay.claim()
		if !ok {
			return nil, errBodyNotReplayable
		}
		// GetBody lets the base transport rewind by itself where it knows
		// that is safe (net/http: an HTTP/2 stream refused or a GOAWAY'd
		// connection), as it would for a caller's own GetBody.
		r.Body, r.GetBody = cur, c.replay.rewind
		c.body = cur
	case body != nil:
		r.Body = body
	}
	if c.watch != nil && c.replay == nil && hasBody(r) {
		if m, ok := inMemory(r.Body); ok {
			c.watch.mem = memBody{r: m, before: m.Len()} // kept in the watch, which is allocated already
			c.body = &c.watch.mem
		} else {
			wb := &watchedBody{rc: r.Body}
			r.Body, c.body = wb, wb
		}
	}
	return r, nil
}

// beforeRetry hands areq, the next attempt's request, to the
// WithBeforeRetry hook with the event that announced the retry, and
// returns why the retry is not to be sent if the hook refuses it. A hook
// that rewound a recorded body through areq.GetBody made the attempt's
// own copy stale; the attempt gets a fresh one.
func (c *call) beforeRetry(areq *http.Request) error {
	if err := c.t.beforeRetry(areq, *c.ev); err != nil {
		return fmt.Errorf("%w: %w", ErrRetryRefused, err)
	}
	if c.replay != nil && !c.replay.current(areq.Body) {
		cur, ok := c.replay.claim()
		if !ok {
			return errBodyNotReplayable
		}
		areq.Body, c.body = cur, cur
	}
	return nil
}

// errNoResponse is the error of an attempt whose base transport returned
// neither a response nor an error, which breaks the RoundTripper contract;
// net/http's Client reports the same.
var errNoResponse = errors.New("retrytransport: base RoundTripper returned a nil *Response with a nil error")

// errBodyNotReplayable is the reason a planned retry is not sent when the
// recorded body turned out not to be replayable when the retry was prepared.
var errBodyNotReplayable = fmt.Errorf("%w: the request body grew past Policy.MaxBodyBuffer or its reader failed", ErrNotRetryable)

// release drains and closes the last attempt's response, once the next
// attempt is certain to go. The drain ends at Policy.ReadTimeout, and
// within MaxTotalTime takes at most half of what is left, so that the
// attempt keeps the other half.
func (c *call) release() {
	if c.resp == nil {
		return
	}
	p := &c.cp.p
	d := p.ReadTimeout
	if !c.timeEnd.IsZero() {
		d = min(d, c.timeEnd.Sub(c.t.now())/2)
	}
	drain(c.resp, p.MaxDrain, d)
	c.resp = nil
}

// abandon ends the request before the attempt after c.attempt, for
// reason. Nothing is sent: the retry's quota cost is refunded, an adaptive
// send token it took is given back (see unpace), the observer learns why,
// and the caller gets what the last attempt produced. Before the first attempt there is
// none, and the caller gets an error that is not a *RetryError.
//
// The caller's own cancellation is the exception: it gets the context's
// error, as it would without this transport, and the response is closed.
func (c *call) abandon(reason error) (*http.Response, error) {
	c.unpace()
	if c.attempt == 0 {
		if c.replay == nil {
			closeReader(c.req.Body) // with a replay buffer, finish closes it
		}
		ev := c.event(nil, nil, classify.Outcome{})
		if c.route != nil {
			c.routed(&ev)
		}
		ev.Stop = reason
		c.t.emitFinal(c.cp, ev, true)
		return nil, fmt.Errorf("retrytransport: before the first attempt: %w", reason)
	}
	c.giveBack()
	if err := c.ctx.Err(); err != nil && errors.Is(reason, err) {
		if c.resp != nil && c.resp.Body != nil {
			c.resp.Body.Close() // not drained: its reads end with the context anyway
		}
		c.resp, c.err = nil, err
	}
	ev := *c.ev
	ev.Waited = c.waited
	return c.stop(ev, c.resp, c.err, reason)
}

// abandonUnsent is abandon for an attempt whose request areq was made: a
// retry's body, which the transport made, is closed; a first attempt's is
// the caller's, which abandon closes.
func (c *call) abandonUnsent(areq *http.Request, reason error) (*http.Response, error) {
	if c.attempt > 0 {
		closeReader(areq.Body)
	}
	return c.abandon(reason)
}

// stop ends the request after a retryable outcome that is not retried.
func (c *call) stop(ev Event, resp *http.Response, err error, reason error) (*http.Response, error) {
	return c.remember(c.t.stop(c.cp, ev, resp, err, reason))
}

// end ends the request with its last attempt's outcome out, which is not
// retried: Success (stop nil) or Fatal (stop says why). A request that took
// more than one attempt gets its final Event, and so does every request
// when there is a final observer. The caller gets the attempt's response,
// or its error in a *RetryError.
func (c *call) end(resp *http.Response, err error, out classify.Outcome, stop error) (*http.Response, error) {
	if c.attempt > 1 || c.t.final != nil {
		ev := c.event(resp, err, out)
		if c.route != nil {
			c.routed(&ev)
		}
		ev.Stop = stop
		c.t.emitFinal(c.cp, ev, c.attempt > 1)
	}
	return c.remember(giveUp(resp, err, c.attempt, c.waited, stop))
}

// remember records, for ResponseAttempts, what the request that resp ends
// took, if it took more than a first attempt without waiting.
func (c *call) remember(resp *http.Response, err error) (*http.Response, error) {
	if resp != nil && (c.attempt > 1 || c.waited > 0) {
		rememberAttempts(resp, Attempts{Count: c.attempt, Waited: c.waited})
	}
	return resp, err
}

// event returns the Event of the attempt that just ended (attempt 0: none
// yet) with resp or err, classified as out.
func (c *call) event(resp *http.Response, err error, out classify.Outcome) Event {
	ev := Event{Request: c.req, Scope: c.scope, Attempt: c.attempt, Hedges: int(c.hedges),
		Outcome: out, Err: err, Quota: -1, Waited: c.waited}
	if resp != nil {
		ev.StatusCode = resp.StatusCode
	}
	return ev
}

// routed sets ev's Endpoint, and Scope, to those of the endpoint that the
// result came from, for a request that may fail over (c.route is not nil).
// It is apart from event so that event stays small enough to be inlined.
func (c *call) routed(ev *Event) {
	r := c.route
	if r.sentTo == 0 {
		ev.Endpoint = c.req.URL.Host
	} else {
		ev.Endpoint = c.cp.endpoints.alt[r.sentTo-1].Host
	}
	if r.other != nil {
		ev.Scope = r.other.scope
	}
}

// setUpExtras sets the call up for the features that the happy path of a
// plain policy skips (compiled.extras): failover, hedging, and the
// retry quotas that count requests.
func (c *call) setUpExtras() {
	cp, req := c.cp, c.req
	if cp.endpoints != nil && cp.p.MayFailOver(req) {
		c.route = &route{e: cp.endpoints, home: c.scope}
		c.route.sentTo = c.route.current()
		c.scope = cp.endpointScope(req, c.route.sentTo, c.scope)
	}
	c.hedging = cp.mayHedge(req)
	cp.countRequest(c.home())
}

// succeeded tells the retry quotas that the request's first attempt
// succeeded, for a policy with extras.
func (c *call) succeeded() {
	cp := c.cp
	if cp.quota != nil {
		cp.quota.Success(c.successScope())
	}
	if cp.budget != nil {
		cp.budget.Success(c.home())
	}
}

// endpoint returns the endpoint of the current attempt: 0 for the
// request's own host.
func (c *call) endpoint() int {
	if c.route == nil {
		return 0
	}
	return c.route.current()
}

// home returns the request's own scope, its budget's: the scope of its URL,
// wherever its attempts go.
func (c *call) home() string {
	if c.route == nil {
		return c.scope
	}
	return c.route.home
}

// moveOn points the call at the endpoint of its next attempt, after the
// current one failed: a request that may fail over moves along its route,
// and its scope with it.
func (c *call) moveOn() {
	if c.route == nil {
		return
	}
	c.route.next()
	if s := c.cp.endpointScope(c.req, c.route.current(), c.route.home); s != c.scope {
		c.scope, c.counters = s, c.t.stats.get(s, c.cp)
	}
}
