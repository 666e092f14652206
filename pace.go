package retrytransport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// pace readies attempt a to be sent: its scope's breaker must let it
// through (see admit), then it waits for a's send tokens (see reserve) and
// for a place under the scope's concurrency limit (see acquire), then sets
// a's timer, AttemptTimeout bounded by what is left of MaxTotalTime, and
// refuses a when nothing is left (ErrTimeLimit). The breaker is asked
// first, so that an open circuit fails the request before any wait. What a
// took before a refusal, unsend gives back.
func (r *request) pace(a *attempt) error {
	if err := r.admit(a); err != nil {
		return err
	}
	if err := r.reserve(a, true); err != nil {
		return err
	}
	if err := r.acquire(a, false); err != nil {
		return err
	}
	a.timeout = r.cp.p.AttemptTimeout
	if !r.timeEnd.IsZero() {
		left := r.timeEnd.Sub(r.t.now())
		if left <= 0 {
			return ErrTimeLimit
		}
		if a.timeout == 0 || left < a.timeout {
			a.timeout = left
		}
	}
	return nil
}

// reserve takes a send token for copy a, an attempt or a hedge, from each
// of its scope's client-side rate limiters: the one path that paces. The
// adaptive limiter is asked first, and its reservation asked again after
// each wait, because a throttle recorded meanwhile may have lowered the
// rate; then the fixed rate, whose reservation is held while waiting, as
// x/time/rate's Wait does. An attempt waits (mayWait); a hedge is worth
// sending now or not at all, and is refused a wait (errHedgeWaits). A wait
// is not started that would end after the context's deadline
// (ErrDeadline) or the policy's MaxTotalTime (ErrTimeLimit); a limiter that
// refuses to wait gives an error wrapping ratelimit.ErrRateLimited, which
// the scope's statistics count. Either way no token is kept. The adaptive
// reservation is kept in a.turn until a is sent (see unsend).
func (r *request) reserve(a *attempt, mayWait bool) error {
	cp := r.cp
	if cp.limiter == nil && cp.fixed == nil {
		return nil
	}
	var err error
	if cp.limiter != nil {
		a.turn, err = r.reserveFrom(cp.limiter, a.scope, "adaptive rate", recheckAfter, mayWait)
	}
	if err == nil && cp.fixed != nil {
		if _, err = r.reserveFrom(cp.fixed, a.scope, "fixed rate", wholeWait, mayWait); err != nil {
			a.turn.Cancel()
			a.turn = ratelimit.Reservation{}
		}
	}
	if errors.Is(err, ratelimit.ErrRateLimited) {
		a.stats.rateLimited.Add(1)
	}
	return err
}

// admit asks the breaker of a's scope, if the policy has one, to let a
// through, and keeps its pass in a; an open circuit's refusal, which
// matches breaker.ErrOpen and carries the last failure, is counted and
// returned.
func (r *request) admit(a *attempt) error {
	if r.cp.breaker == nil {
		return nil
	}
	var err error
	if a.pass, err = r.cp.breaker.Allow(a.scope); err != nil { // the zero Pass
		a.stats.breakerRefusals.Add(1)
	}
	return err
}

// acquire takes a place for a under the concurrency limit of its scope, if
// the policy has one, waiting as the limiter allows (its MaxWait, within
// the request's context), and keeps it in a. A refusal is counted and
// returned wrapping concurrency.ErrLimited; the request is not retried
// into the same overload. A hedge asks with a context that has ended: a
// free place or none; a hedge without one is simply not sent, which
// refuses the caller nothing, and is not counted.
func (r *request) acquire(a *attempt, hedge bool) error {
	if r.cp.conc == nil {
		return nil
	}
	ctx := r.ctx
	if hedge {
		ctx = ended
	}
	permit, err := r.cp.conc.Acquire(ctx, a.scope)
	if err != nil {
		if !errors.Is(err, concurrency.ErrLimited) {
			return err
		}
		if !hedge {
			a.stats.concurrencyRefusals.Add(1)
		}
		return fmt.Errorf("retrytransport: concurrency limit of scope %q: %w", a.scope, err)
	}
	a.permit = permit
	return nil
}

// ended is a context that has ended, for asking a concurrency limit for a
// place that is free now or not at all.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// errHedgeWaits is why a hedge is not sent when a rate limiter would make
// it wait.
var errHedgeWaits = errors.New("retrytransport: a hedge would wait for its send token")

// reserveFrom takes a send token of scope from l and, if mayWait, waits
// until it is due: it sleeps part(w) of a wait w, then asks the
// reservation again, as its queue may have moved it, until it is due. A
// reservation it does not return is cancelled.
func (r *request) reserveFrom(l ratelimit.Limiter, scope, what string, part func(time.Duration) time.Duration, mayWait bool) (ratelimit.Reservation, error) {
	res, w, ok := l.Reserve(scope)
	if !ok {
		return ratelimit.Reservation{}, fmt.Errorf("%s of scope %q needs a %v wait: %w", what, scope, w, ratelimit.ErrRateLimited)
	}
	if w > 0 && !mayWait {
		res.Cancel()
		return ratelimit.Reservation{}, errHedgeWaits
	}
	for w > 0 {
		if err := r.waitPart(part(w), w); err != nil {
			res.Cancel()
			return ratelimit.Reservation{}, err
		}
		w = res.Delay()
	}
	return res, nil
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
// store may then say to wait longer). A fixed-rate token is not given
// back once its time has come, since x/time/rate cannot restore it without
// letting a later one send early: an attempt refused after pacing (only
// when MaxTotalTime runs out between pacing and sending; everything else
// that may refuse it comes before) costs the scope's next send at most
// 1/Rate.
func wholeWait(w time.Duration) time.Duration { return w }

// waitPart sleeps for part of a wait of whole, unless the whole wait would
// end after the context's deadline or the end of the policy's MaxTotalTime:
// a wait slept in parts is refused as soon as it is known to end too late,
// not after its first parts.
func (r *request) waitPart(part, whole time.Duration) error {
	if part <= 0 {
		return r.ctx.Err()
	}
	if reason := r.tooLate(r.t.now(), whole, r.n > 0); reason != nil {
		return reason
	}
	if err := r.t.sleep(r.ctx, part); err != nil {
		return err
	}
	r.waited = addSaturating(r.waited, part)
	return nil
}
