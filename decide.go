package retrytransport

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/retryafter"
)

// decide is the one place that says, after attempt a was sent and
// settled, whether another attempt follows, and after what wait (a.wait),
// before anything is announced. A success settles the request's payments
// (its retry's and its winning hedge's are refunded; a first attempt's
// success credits the quotas) and ends it with stop nil. Otherwise stop
// says why the request ends: the outcome is final (ErrNotRetryable, or the
// caller's cancellation), the request may not be sent again
// (ErrNotRetryable), no attempt is left (ErrExhausted, ErrSDKRetries;
// retries after throttles the limiter paced may not count, see
// throttleRetrier), or
// the retry cannot be scheduled (see schedule). A retry that is decided
// is paid for (r.paid).
func (r *request) decide(a *attempt) (retry bool, stop error) {
	switch {
	case a.out.Kind == classify.Success && a.err == nil:
		if !a.unclassified {
			r.succeeded(a)
		}
		return false, nil
	case !a.out.Retryable():
		return false, finalReason(r.ctx)
	}
	if a.n == 1 && r.max > 1 && !r.cp.p.IgnoreSDKAttempts && len(r.req.Header) > 0 {
		r.limitForSDK() // only now: the happy path never looks for the mark
	}
	if r.extra > 0 && r.cp.pacesThrottles(a.out.Kind) && r.max > 1 {
		r.extra-- // the limiter's retry, not one of the policy's attempts
		r.max++
	}
	switch {
	case !r.idempotent && !unprocessed(a.out, a.resp, a.err, r.watch, a.body),
		r.replay != nil && !r.replay.replayable(): // known already; decided for good when the retry is prepared
		return false, ErrNotRetryable
	case a.n >= r.max && r.sdk:
		return false, ErrSDKRetries
	case a.n >= r.max:
		return false, ErrExhausted
	}
	if stop := r.schedule(a); stop != nil {
		return false, stop
	}
	return true, nil
}

// succeeded settles the payments of the request, whose attempt a
// succeeded: a retry's cost, and a winning hedge's, are refunded; a first
// attempt's success is credited to the retry quotas, in the scope of the
// copy whose result it took.
func (r *request) succeeded(a *attempt) {
	a.pay.refund()
	a.hedgePay.refund()
	if a.n > 1 {
		return
	}
	if cp := r.cp; cp.quota != nil {
		cp.quota.Success(a.scope)
	}
	if r.cp.budget != nil {
		r.cp.budget.Success(r.home)
	}
}

// finalReason is why a Fatal outcome ends a request: the caller's own
// cancellation, if the context is done, else ErrNotRetryable.
func finalReason(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrNotRetryable
}

// schedule moves the request along its route to the next attempt's
// endpoint, decides the wait before that attempt and pays for it, in the
// scope it goes to: a.wait, a.server and r.paid are set. Or, with nothing
// paid, it returns why there is to be no retry: the server asked for more
// than MaxDelay (ErrServerDelay), the retry quota cannot pay within
// MaxDelay (quota.ErrExceeded), the retry budget cannot
// (quota.ErrOverBudget; each counted where it is kept, see refusal), or
// the wait would end past the context's deadline or the policy's
// MaxTotalTime (less its TerminationBuffer), or take the request's waits
// past MaxTotalWait. The penalty of the scope
// the retry goes to (Policy.Penalty) adds to the wait. A server's delay
// binds only a retry that goes back to the endpoint that answered; a retry
// that fails over to another endpoint waits its backoff.
func (r *request) schedule(a *attempt) error {
	cp, p, now := r.cp, &r.cp.p, r.t.now()
	var next attempt
	if r.route != nil {
		r.route.next()
		r.place(&next, r.route.current())
	} else {
		next.scope, next.stats, next.behaviour = a.scope, a.stats, a.behaviour
	}
	resp := a.resp
	if next.endpoint != a.endpoint {
		resp = nil // its delay headers speak for an endpoint the retry does not go to
	}
	k := a.out.Kind
	delay, server := cp.delay(r.n, k, resp, now)
	a.server = server
	if server && delay > p.MaxDelay {
		return ErrServerDelay
	}
	pay, wait, refused := cp.pay(k, next.scope, r.home, !cp.pacesThrottles(k))
	if refused != nil {
		return r.refusal(&next, refused == quota.ErrOverBudget)
	}
	// Wait mode: a bucket that refills too slowly for a retry within
	// MaxDelay refuses, as waiting longer would break the policy's cap.
	// (The delay alone is within MaxDelay.) The refusal is that of the
	// quota or budget whose wait the retry would have waited: the longer,
	// or the quota's if they are equal.
	if delay = addSaturating(delay, wait); delay > p.MaxDelay {
		byBudget := pay.budget.wait > pay.quota.wait
		pay.cancel()
		return r.refusal(&next, byBudget)
	}
	if cp.penalty != nil {
		delay = addSaturating(delay, next.behaviour.penalised(now, cp.penalty.Delay))
	}
	if stop := r.tooLate(now, delay, true); stop != nil {
		pay.cancel()
		return stop
	}
	a.wait, r.paid = delay, pay
	return nil
}

// refusal counts a retry refused by the request's retry budget
// (byBudget) or by the retry quota of next, the attempt it would have
// been, and returns the reason: the budget's refusal in the request's own
// scope, where the budget is kept (quota.ErrOverBudget), the quota's in
// next's, whose bucket pays for the retry (quota.ErrExceeded).
func (r *request) refusal(next *attempt, byBudget bool) error {
	if byBudget {
		r.t.stats.get(r.home, r.cp).budgetRefusals.Add(1)
		return quota.ErrOverBudget
	}
	next.stats.quotaRefusals.Add(1)
	return quota.ErrExceeded
}

// delay is the wait before retry n after an outcome of kind k: the server's
// (reported by server) if the response carries a header that
// Policy.ServerDelay.Headers trusts, else the backoff capped at MaxDelay. A
// server delay is never jittered; with a ServerDelay.Bound it is kept
// between the backoff and the backoff plus the bound. The caller refuses a
// server delay above MaxDelay.
//
// A throttle that the scope's limiter paces (pacesThrottles) has no
// backoff: the limiter decreased the scope's rate for it, and the retry
// waits for its send token at that rate, as every other attempt of the
// scope does. A backoff on top slowed the request twice for one throttle:
// one that met four throttles in a row, on a client sending one request at
// a time, took 13 s where standard mode gave up after 2.1 s; the limiter's
// pace alone takes 1.1 s (a fresh client, whose cold-start rate is 10
// req/s) or a few milliseconds (one that already sent fast).
func (cp *compiled) delay(n int, k classify.Kind, resp *http.Response, now time.Time) (d time.Duration, server bool) {
	p := &cp.p
	strategy := p.Backoff
	if k == classify.Throttle && p.ThrottleBackoff != nil {
		strategy = p.ThrottleBackoff
	}
	if resp != nil { // retryafter.None finds no delay
		d, _, server = retryafter.ParseSources(resp.Header, now, p.ServerDelay.Headers)
	}
	bound := p.ServerDelay.Bound
	if server && bound <= 0 {
		return d, true
	}
	var b time.Duration
	if !cp.pacesThrottles(k) {
		b = min(max(strategy.Delay(n), 0), p.MaxDelay)
	}
	if !server {
		return b, false
	}
	hi := b + bound
	if hi < b { // overflow: the bound is effectively none
		hi = d
	}
	return max(b, min(d, hi)), true
}

// tooLate returns why a wait of d from now may not be started, or nil: it
// would end past the context's deadline (ErrDeadline) or the end of
// MaxTotalTime (ErrTimeLimit), or, for the wait before a retry, less than
// TerminationBuffer before either; or it would take the request's waits
// past MaxTotalWait (ErrTimeLimit).
func (r *request) tooLate(now time.Time, d time.Duration, retry bool) error {
	p := &r.cp.p
	if p.MaxTotalWait > 0 && addSaturating(r.waited, d) > p.MaxTotalWait {
		return ErrTimeLimit
	}
	end := now.Add(d)
	if retry {
		end = end.Add(p.TerminationBuffer)
	}
	if dl, ok := r.ctx.Deadline(); ok && end.After(dl) {
		return ErrDeadline
	}
	if !r.timeEnd.IsZero() && end.After(r.timeEnd) {
		return ErrTimeLimit
	}
	return nil
}

// addSaturating returns a + b, or the longest (shortest) duration if that
// overflows.
func addSaturating(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// pacesThrottles reports whether a retry after an outcome of kind k is
// free of the retry quota because the scope's adaptive limiter paces it: k
// is a throttle and the limiter learns from outcomes (ratelimit.Recorder)
// without asking to be charged for throttles (throttleCharger). The quota guards
// against retries multiplying the load on a failing server; after a
// throttle the limiter has already slowed the scope's every attempt, first
// ones included, so the retry adds no load the server did not ask for. In a
// fleet, a replica charged for throttles would otherwise drain its quota
// while the others keep getting through, and fail requests the server
// would admit a moment later. The AWS SDKs charge throttles, and so does
// ratelimit.Adaptive in reference mode.
func (cp *compiled) pacesThrottles(k classify.Kind) bool {
	return k == classify.Throttle && cp.freeThrottles
}

// throttleRetrier is a limiter that paces throttled scopes and says how
// many retries after throttles it paced a request may make beyond the
// policy's MaxAttempts, as ratelimit.Adaptive does: once the limiter has
// slowed a scope, a throttle there is the limiter's to prevent, not the
// request's to pay for with one of its attempts, so that a logical request
// does not fail while the limiter is still finding the server's new rate.
// The extra retries are bounded, because a server that throttles every
// attempt must still end the request. They count only where
// pacesThrottles does (a limiter that charges throttles, as the AWS SDKs
// do, gives none), and never for a request an SDK marked, whose attempts
// per call the SDK's count bounds.
type throttleRetrier interface {
	ExtraThrottleRetries() int
}

// throttleCharger is a limiter that says whether the retry quota should
// still pay for retries after throttles while it paces a scope, as
// ratelimit.Adaptive does in reference mode.
type throttleCharger interface {
	ChargesThrottles() bool
}
