package retrytransport

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// planRetry decides the wait before the retry that ev's outcome calls for
// and pays for it (see compiled.pay), in the scope the retry goes to. It
// sets ev.Delay, ev.ServerDelay and ev.Quota, and c.paid to what was paid;
// or, with nothing paid, it returns why there is to be no retry: the
// server asked for more than MaxDelay, a quota cannot pay within MaxDelay,
// or the wait would end past the context's deadline or the policy's
// MaxTotalTime (less its TerminationBuffer), or take the request's waits
// past MaxTotalWait. The penalty of the scope the retry goes to
// (Policy.Penalty) adds to the wait. A server's delay binds only a retry
// that goes back to the endpoint that asked for it (see backToSender); a
// retry that fails over to another endpoint waits its backoff.
func (c *call) planRetry(ev *Event, resp *http.Response) (reason error) {
	cp := c.cp
	p := &cp.p
	now := c.t.now()
	if !c.backToSender() {
		resp = nil // its delay headers speak for an endpoint the retry does not go to
	}
	delay, server := cp.delay(ev.Attempt, ev.Outcome.Kind, resp, now)
	ev.ServerDelay = server
	if server && delay > p.MaxDelay {
		return ErrServerDelay
	}
	k := ev.Outcome.Kind
	pd, wait, ok := cp.pay(k, c.quotaScope(), c.home(), !cp.pacesThrottles(k))
	if !ok {
		return ratelimit.ErrQuotaExceeded
	}
	c.paid, delay = pd, addSaturating(delay, wait)
	// Wait mode: a bucket that refills too slowly for a retry within
	// MaxDelay refuses, as waiting longer would break the policy's cap.
	// (The delay alone is within MaxDelay.)
	if delay > p.MaxDelay {
		c.giveBack()
		return ratelimit.ErrQuotaExceeded
	}
	if cp.penalty {
		delay = addSaturating(delay, c.t.behaviour.get(c.scope, c.t.now).penalised(now, p.Penalty.Delay))
	}
	if reason := c.tooLate(now, delay, true); reason != nil {
		c.giveBack()
		return reason
	}
	ev.Delay = delay
	ev.Quota = cp.quotaLevel(c.quotaScope())
	return nil
}

// backToSender reports whether the retry goes to the endpoint whose answer
// it follows (an attempt's or a hedge's): always, but for a request that
// fails over, once c.moveOn has pointed it at another endpoint.
func (c *call) backToSender() bool {
	return c.route == nil || c.route.sentTo == c.route.current()
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

// tooLate returns why a wait of d from now may not be started, or nil: it
// would end past the context's deadline (ErrDeadline) or the end of
// MaxTotalTime (ErrBudget), or, for the wait before a retry, less than
// TerminationBuffer before either; or it would take the request's waits
// past MaxTotalWait (ErrBudget).
func (c *call) tooLate(now time.Time, d time.Duration, retry bool) error {
	p := &c.cp.p
	if p.MaxTotalWait > 0 && addSaturating(c.waited, d) > p.MaxTotalWait {
		return ErrBudget
	}
	end := now.Add(d)
	if retry {
		end = end.Add(p.TerminationBuffer)
	}
	if dl, ok := c.ctx.Deadline(); ok && end.After(dl) {
		return ErrDeadline
	}
	if !c.timeEnd.IsZero() && end.After(c.timeEnd) {
		return ErrBudget
	}
	return nil
}

// quotaScope returns the scope whose retry quota pays for the current
// attempt's retry (see compiled.quotaScope).
func (c *call) quotaScope() string { return c.cp.quotaScope(c.scope, c.home()) }

// quotaScope returns the scope whose retry quota pays for a retry or hedge
// sent to scope, for a request whose own scope is home: scope, so that a
// dead primary does not drain a healthy secondary's bucket; but, for a
// quota that counts requests (a ratelimit.Budget), home, where the
// requests are counted.
func (cp *compiled) quotaScope(scope, home string) string {
	if cp.requests != nil {
		return home
	}
	return scope
}

// successScope returns the scope whose retry quota a first attempt's
// success credits: the quota scope of the copy whose result it took.
func (c *call) successScope() string {
	if c.route != nil && c.route.other != nil { // a hedge to another endpoint won
		return c.route.other.qscope
	}
	return c.quotaScope()
}

// refund refunds c.paid, for a retry that succeeded.
func (c *call) refund() { c.cp.refund(&c.paid, c.quotaScope(), c.home()) }

// giveBack gives c.paid back, for a retry that will not be sent.
func (c *call) giveBack() { c.cp.giveBack(&c.paid, c.quotaScope(), c.home()) }

// paid is what the retry quotas were paid for one retry or hedge: cost
// tokens of Quota and budget tokens of Budget.
type paid struct{ cost, budget int }

// pay takes from the retry quotas what a retry after an outcome of kind k
// costs: Quota's cost in qscope, unless charge is false, and Budget's in
// home, the request's own scope. It returns what was paid and the longest
// wait the quotas ask for (their refills run at the same time; a negative
// wait counts as none); with ok false, nothing is kept.
func (cp *compiled) pay(k classify.Kind, qscope, home string, charge bool) (pd paid, wait time.Duration, ok bool) {
	if cp.quota != nil && charge {
		if pd.cost, wait, ok = cp.quota.Acquire(qscope, k); !ok {
			return paid{}, 0, false
		}
	}
	if cp.budget != nil {
		cost, w, ok := cp.budget.Acquire(home, k)
		if !ok {
			cp.giveBack(&pd, qscope, home)
			return paid{}, 0, false
		}
		pd.budget, wait = cost, max(wait, w)
	}
	return pd, max(wait, 0), true
}

// refund refunds pd, paid in qscope and home, for a retry or hedge that
// was sent and succeeded, and clears it.
func (cp *compiled) refund(pd *paid, qscope, home string) {
	if pd.cost > 0 {
		cp.quota.Refund(qscope, pd.cost)
	}
	if pd.budget > 0 {
		cp.budget.Refund(home, pd.budget)
	}
	*pd = paid{}
}

// giveBack gives pd, paid in qscope and home, back for a retry or hedge
// that is not sent, and clears it.
func (cp *compiled) giveBack(pd *paid, qscope, home string) {
	if pd.cost > 0 {
		cancelCost(cp.quota, qscope, pd.cost)
	}
	if pd.budget > 0 {
		cancelCost(cp.budget, home, pd.budget)
	}
	*pd = paid{}
}

// cancelCost returns to q the cost it was paid for a retry or hedge that
// is not sent: through Cancel, for a quota whose Refund is for retries that
// were sent (ratelimit.Canceler), else through Refund.
func cancelCost(q ratelimit.RetryQuota, scope string, cost int) {
	if cq, ok := q.(ratelimit.Canceler); ok {
		cq.Cancel(scope, cost)
		return
	}
	q.Refund(scope, cost)
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

// throttleCharger is a limiter that says whether the retry quota should
// still pay for retries after throttles while it paces a scope, as
// ratelimit.Adaptive does in reference mode.
type throttleCharger interface {
	ChargesThrottles() bool
}

// pace waits until the scope's client-side rate limiters let the next
// attempt go, and records that it holds their send tokens. The adaptive
// limiter is asked first, and its reservation asked again after each wait,
// because a throttle recorded meanwhile may have lowered the rate; then the
// fixed rate, whose reservation is held while waiting, as x/time/rate's
// Wait does. A wait is not started that would end after the context's
// deadline (ErrDeadline) or the policy's MaxTotalTime (ErrBudget); a
// limiter that refuses to wait gives an error wrapping
// ratelimit.ErrRateLimited. Either way no token is kept.
func (c *call) pace() error {
	err := c.reserve()
	if errors.Is(err, ratelimit.ErrRateLimited) {
		c.counters.rateLimited.Add(1)
	}
	return err
}

// reserve is pace without the counting.
func (c *call) reserve() error {
	cp := c.cp
	if cp.limiter != nil {
		r, err := c.reserveFrom(cp.limiter, "adaptive rate", recheckAfter)
		if err != nil {
			return err
		}
		c.turn = r
	}
	if cp.fixed != nil {
		if _, err := c.reserveFrom(cp.fixed, "fixed rate", wholeWait); err != nil {
			c.giveBackAdaptive()
			return err
		}
	}
	c.paced = true
	return nil
}

// reserveFrom takes a send token from l and waits until it is due: it
// sleeps part(w) of a wait w, then asks the reservation again, as its
// queue may have moved it, until it is due. A reservation it does not
// return is cancelled.
func (c *call) reserveFrom(l ratelimit.Limiter, what string, part func(time.Duration) time.Duration) (ratelimit.Reservation, error) {
	r, w, ok := l.Reserve(c.scope)
	if !ok {
		return ratelimit.Reservation{}, fmt.Errorf("%s of scope %q needs a %v wait: %w", what, c.scope, w, ratelimit.ErrRateLimited)
	}
	for w > 0 {
		if err := c.waitPart(part(w), w); err != nil {
			r.Cancel()
			return ratelimit.Reservation{}, err
		}
		w = r.Delay()
	}
	return r, nil
}

// recheckShortest is the shortest wait for an adaptive reservation that is
// asked again before its end.
const recheckShortest = 10 * time.Millisecond

// recheckAfter returns how long to sleep when the adaptive limiter says the
// reservation is due after w: half of a long wait, so that a rate that
// rises meanwhile (each answer moves it along the CUBIC curve) brings the
// turn forward, as a fall pushes it back. A queue of 16 callers against a
// server of 20 req/s waits 0.8 s at the back; sleeping it whole, the queue
// sends at the rate of the moment it formed, and in the simulations gets 16
// of the 20 req/s through instead of 19.
func recheckAfter(w time.Duration) time.Duration {
	if w > recheckShortest {
		return max(w/2, recheckShortest)
	}
	return w
}

// wholeWait sleeps a fixed rate's wait whole: its turn does not move, so
// its reservation is asked again only once it is due (a rate kept in a
// store may then say to wait longer).
func wholeWait(w time.Duration) time.Duration { return w }

// unpace gives back what pace took for an attempt that will not be sent
// after all: the adaptive limiter's send token. A fixed-rate token is not
// given back, since x/time/rate cannot restore a reservation whose time
// has come without letting a later one send early. Everything else that
// may refuse an attempt (GetBody, claiming a recorded body, the
// WithBeforeRetry hook) comes before pacing, so this happens only when
// MaxTotalTime runs out in the moment between pacing and sending, and then
// costs the scope's next send at most 1/Rate.
func (c *call) unpace() {
	if c.paced {
		c.paced = false
		c.giveBackAdaptive()
	}
}

func (c *call) giveBackAdaptive() {
	c.turn.Cancel()
	c.turn = ratelimit.Reservation{}
}

// waitPart sleeps for part of a wait of whole, unless the whole wait would
// end after the context's deadline or the end of the policy's MaxTotalTime:
// a wait slept in parts is refused as soon as it is known to end too late,
// not after its first parts.
func (c *call) waitPart(part, whole time.Duration) error {
	if part <= 0 {
		return c.ctx.Err()
	}
	if reason := c.tooLate(c.t.now(), whole, c.attempt > 0); reason != nil {
		return reason
	}
	if err := c.t.sleep(c.ctx, part); err != nil {
		return err
	}
	c.waited = addSaturating(c.waited, part)
	return nil
}

// delay is the wait before retry n after an outcome of kind k: the server's
// (reported by server) if the response carries a trusted delay header, else
// the backoff capped at MaxDelay. A server delay is never jittered; with a
// ServerDelayBound it is kept between the backoff and the backoff plus the
// bound. The caller refuses a server delay above MaxDelay.
func (cp *compiled) delay(n int, k classify.Kind, resp *http.Response, now time.Time) (d time.Duration, server bool) {
	p := &cp.p
	strategy := p.Backoff
	if k == classify.Throttle && p.ThrottleBackoff != nil {
		strategy = p.ThrottleBackoff
	}
	if resp != nil && !p.IgnoreDelayHeaders {
		d, _, server = retryafter.ParseSources(resp.Header, now, p.DelayHeaders)
	}
	if server && p.ServerDelayBound <= 0 {
		return d, true
	}
	b := min(max(strategy.Delay(n), 0), p.MaxDelay)
	if !server {
		return b, false
	}
	hi := b + p.ServerDelayBound
	if hi < b { // overflow: the bound is effectively none
		hi = d
	}
	return max(b, min(d, hi)), true
}
