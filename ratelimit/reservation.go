package ratelimit

import "time"

// A Reservation is a send token that a [Limiter] handed out, and the place
// in its queue that the holder waits in. Ask it how long is left with
// Delay, after each sleep, and Cancel it if the attempt will not be sent.
// It is a small value that holds no resources; copying it copies the
// place.
//
// The zero Reservation, which limiters return when they refuse or when no
// wait can arise, is due at once, and cancelling it does nothing.
type Reservation struct {
	q      Queue // nil for the zero Reservation
	scope  string
	ticket Ticket
}

// NewReservation returns a reservation of q for scope, known to q by t.
// Implementations of [Limiter] call it; a nil q gives the zero Reservation.
func NewReservation(q Queue, scope string, t Ticket) Reservation {
	if q == nil {
		return Reservation{}
	}
	return Reservation{q: q, scope: scope, ticket: t}
}

// Scope returns the scope r was taken for.
func (r Reservation) Scope() string { return r.scope }

// Ticket returns what r's queue knows it by.
func (r Reservation) Ticket() Ticket { return r.ticket }

// Delay returns how long the holder must still wait before sending: 0 when
// it may send. A caller waits the delay Reserve returned, then asks again,
// and waits again if the answer is not 0: a queue whose rate changes (an
// [Adaptive] that records a throttle meanwhile) moves its reservations.
func (r Reservation) Delay() time.Duration {
	if r.q == nil {
		return 0
	}
	return r.q.Delay(r)
}

// Cancel gives back, as far as its queue can, the send token of a
// reservation whose attempt will not be sent. Call it at most once.
func (r Reservation) Cancel() {
	if r.q != nil {
		r.q.Cancel(r)
	}
}
