package retrytransport

import (
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// penaltyConfig is a policy.Penalty as the transport runs it, normalised
// by policy.Policy.WithDefaults: it has a positive Delay, and a code or a
// status that starts it.
type penaltyConfig policy.Penalty

// period returns how long p lasts after a signal: For, or Delay when For
// is zero.
func (p *penaltyConfig) period() time.Duration {
	if p.For > 0 {
		return p.For
	}
	return p.Delay
}

// signals reports whether resp, an attempt's response, retried or not,
// starts p: its status is one of Statuses, or its error code, as
// classify.Code finds it, one of Codes. A nil resp signals nothing. It
// reads the body only when p has Codes, at most classify.MaxPeek bytes of
// it, and leaves the body readable from its start.
func (p *penaltyConfig) signals(resp *http.Response) bool {
	if resp == nil {
		return false
	}
	if slices.Contains(p.Statuses, resp.StatusCode) {
		return true
	}
	return len(p.Codes) > 0 && slices.Contains(p.Codes, classify.Code(resp))
}

// notePenalty starts, or starts again, the Policy.Penalty of a's scope, as
// of now(), if a's response signals it. Every response is noted, retried
// or not, and for a hedged attempt every copy's, the losers' included,
// those that answer after the race was decided too: the server said it is
// busy whichever result the attempt took. A response classified Success
// is not read for a code, nor noted: its body is the caller's to stream.
func (cp *compiled) notePenalty(now func() time.Time, a *attempt) {
	if a.out.Kind == classify.Success || !cp.signals(a.resp) {
		return
	}
	a.behaviour.penalise(now(), cp.penalty.period())
}

// signals reports whether resp signals the policy's Penalty, reading its
// error code, if need be, within ReadTimeout, as classification does.
func (cp *compiled) signals(resp *http.Response) bool {
	pen := cp.penalty
	if resp == nil || !hasReadableBody(resp) || len(pen.Codes) == 0 {
		return pen.signals(resp) // the status alone: no body to read
	}
	tb := boundReads(resp, cp.p.ReadTimeout)
	ok := pen.signals(resp)
	tb.release(resp)
	return ok
}

// penaltyPeriod is when a scope's penalty began and when it ends.
type penaltyPeriod struct{ start, end time.Time }

// penalise starts the scope's penalty period at now, for d, or, when it
// overlaps the current period, makes that period the union of the two: a
// signal within the period renews it, from the period's start to now + d,
// and a signal noted out of order (read at the same time as a later one,
// whose code took longer to read) moves its start back to now. Either
// way, a retry that read the clock in between and checks after both finds
// the scope penalised, as it was all along. A signal after the period
// ended starts a new one; one that ended before the period began (noted
// late) changes nothing. The end keeps now's monotonic clock reading, if
// it has one, so that a step of the wall clock does not move it.
func (b *scopeBehaviour) penalise(now time.Time, d time.Duration) {
	end := now.Add(d)
	if end.Before(now) { // d overflowed
		end = now.Add(math.MaxInt64)
	}
	for {
		old := b.penalty.Load()
		p := &penaltyPeriod{start: now, end: end}
		if old != nil && !now.After(old.end) {
			if end.Before(old.start) {
				return
			}
			longer := false
			if old.start.Before(now) {
				p.start = old.start
			} else {
				longer = now.Before(old.start)
			}
			if !old.end.Before(end) {
				p.end = old.end
			} else {
				longer = true
			}
			if !longer {
				return
			}
		}
		if b.penalty.CompareAndSwap(old, p) {
			return
		}
	}
}

// penalised returns delay if the scope's penalty period has not ended at
// now, and 0 otherwise. A clock read before the period began, one without
// a monotonic reading (WithClock) stepped back, ends it: how much of it
// went by is not known, and a step back must not make it longer.
func (b *scopeBehaviour) penalised(now time.Time, delay time.Duration) time.Duration {
	if p := b.penalty.Load(); p != nil && !now.Before(p.start) && now.Before(p.end) {
		return delay
	}
	return 0
}
