package ratelimit

import (
	"time"

	"github.com/retrytransport/retrytransport/internal/secs"
)

// DelayAt returns how long, as of now, the holder of r, a reservation a
// took, must still wait before sending: 0 when it may send. A caller waits
// the delay ReserveAt returned, then asks again, and waits again if the
// answer is not 0, because a throttle recorded meanwhile may have lowered
// the rate.
func (a *Adaptive) DelayAt(now time.Time, r Reservation) time.Duration {
	if r.q != Queue(a) {
		return 0
	}
	p := a.params()
	s := a.reserved(r)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return secs.Ceil(s.sendDelay(s.at(now), r.ticket.Seq, &p))
}

// Delay is DelayAt at a.Now(), or the wall clock if a.Now is nil; it is
// what [Reservation.Delay] calls.
func (a *Adaptive) Delay(r Reservation) time.Duration { return a.DelayAt(a.now(), r) }

// CancelAt gives back, as of now, the send token of r, a reservation a
// took whose attempt will not be sent: the caller gave up waiting, for
// example because its context ended. If it was the scope's latest
// reservation, it just leaves the queue; otherwise its token goes to the
// first reservation still waiting, and every later one moves up a place.
// Call it at most once per reservation. Cancelling one that did not wait
// credits a token that may not have been taken, which is harmless.
func (a *Adaptive) CancelAt(now time.Time, r Reservation) {
	if r.q != Queue(a) {
		return
	}
	p := a.params()
	if s := a.reserved(r); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sendGiveBack(s.at(now), r.ticket.Seq, &p)
	}
}

// Cancel is CancelAt at a.Now(), or the wall clock if a.Now is nil; it is
// what [Reservation.Cancel] calls.
func (a *Adaptive) Cancel(r Reservation) { a.CancelAt(a.now(), r) }

// ChargesThrottles reports whether the retry quota should still pay for a
// retry after a throttle while a paces the scope: in reference mode, as
// the AWS SDKs charge them; otherwise not, since the limiter already
// slows every attempt of a throttled scope. The transport asks it once per
// policy.
func (a *Adaptive) ChargesThrottles() bool { return a.Reference }

// ExtraThrottleRetries returns how many retries after throttles a request
// may make beyond its policy's MaxAttempts while a paces the scope:
// ThrottleRetries resolved (DefaultThrottleRetries for zero, none for a
// negative value, at most MaxThrottleRetries), and none in reference mode.
// The transport asks it once per policy.
func (a *Adaptive) ExtraThrottleRetries() int {
	switch {
	case a.Reference || a.ThrottleRetries < 0:
		return 0
	case a.ThrottleRetries == 0:
		return DefaultThrottleRetries
	}
	return min(a.ThrottleRetries, MaxThrottleRetries)
}

// MaxThrottleRetries bounds [Adaptive]'s ThrottleRetries, so that a
// request against a server that throttles every attempt still ends after
// a bounded number of waits, each at most the policy's MaxDelay: a larger
// value means MaxThrottleRetries.
const MaxThrottleRetries = 100

// reserved returns the scope r was taken from, or nil if it has been
// evicted since (a scope of the same name created later has another
// generation). It takes no lock, and does not mark the scope used.
func (a *Adaptive) reserved(r Reservation) *adaptiveScope {
	if s := a.scopes.Peek(r.scope); s != nil && s.gen == r.ticket.Gen {
		return s
	}
	return nil
}
