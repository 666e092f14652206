package ratelimit

import "time"

// A Reservation is a place in the queue of one scope of an [Adaptive]: the
// send token that [Adaptive.ReserveAt] took. Unlike a reservation of
// x/time/rate, its time to send is not fixed when it is taken: the tokens
// ahead of it accrue at the scope's current fill rate, so a throttle that
// lowers the rate moves every waiting reservation later, and reservations
// still come due in the order they were taken. It is a small value that
// holds no resources; copying it copies the place.
//
// The zero Reservation, which ReserveAt returns when it refuses, is due at
// once and cancelling it does nothing. A reservation whose scope has been
// evicted since is also due at once.
type Reservation struct {
	a     *Adaptive
	scope string
	gen   uint64 // the scope's generation when taken
	place uint64 // the n-th reservation of the scope
}

// DelayAt returns how long, as of now, the holder must still wait before
// sending: 0 when it may send. A caller waits the delay ReserveAt returned,
// then asks again, and waits again if the answer is not 0, because a
// throttle recorded meanwhile may have lowered the rate.
func (r Reservation) DelayAt(now time.Time) time.Duration {
	if r.a == nil {
		return 0
	}
	p := r.a.params()
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	s := r.scopeLocked()
	if s == nil {
		return 0
	}
	return seconds(s.delay(s.at(now), r.place, &p))
}

// Delay is DelayAt at the Adaptive's Now, or the wall clock if it is nil.
func (r Reservation) Delay() time.Duration {
	if r.a == nil {
		return 0
	}
	return r.DelayAt(r.a.now())
}

// CancelAt gives back, as of now, the send token of a reservation whose
// attempt will not be sent: the caller gave up waiting, for example because
// its context ended. If it was the scope's latest reservation, it just
// leaves the queue; otherwise its token goes to the first reservation still
// waiting, and every later one moves up a place. Call it at most once per
// reservation. Cancelling one that did not wait credits a token that may
// not have been taken, which is harmless.
func (r Reservation) CancelAt(now time.Time) {
	if r.a == nil {
		return
	}
	p := r.a.params()
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	if s := r.scopeLocked(); s != nil {
		s.giveBack(s.at(now), r.place, &p)
	}
}

// scopeLocked returns the scope r was taken from, or nil if it has been
// evicted since (a scope of the same name created later has another
// generation). r.a.mu must be held.
func (r Reservation) scopeLocked() *adaptiveScope {
	if s := r.a.scopes.peek(r.scope); s != nil && s.gen == r.gen {
		return s
	}
	return nil
}

// Cancel is CancelAt at the Adaptive's Now, or the wall clock if it is nil.
func (r Reservation) Cancel() {
	if r.a != nil {
		r.CancelAt(r.a.now())
	}
}
