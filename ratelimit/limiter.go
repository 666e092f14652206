package ratelimit

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// RetryQuota decides, per scope, whether a client may retry: the circuit
// breaker that stops retries when most attempts fail. [Quota] implements
// it in process; an implementation may keep its buckets in a store that a
// fleet of replicas shares. The transport calls Acquire before each retry,
// Refund when a retry it paid for succeeds or is not sent after all (or,
// for one that is a [Canceler], Cancel when it is not sent),
// Success after each first attempt that succeeds, and Level for its
// events and snapshots.
//
// Success and Level are called on every request, so they should cost
// nothing while all is well: no lock, no allocation, no round trip. All
// methods must be safe for concurrent use.
type RetryQuota interface {
	// Acquire takes from scope's bucket the cost of a retry after an
	// outcome of kind k, and returns the tokens taken and how long to wait
	// before the retry. With ok false nothing was taken and the retry must
	// not happen; the transport then stops with ErrQuotaExceeded.
	Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool)
	// Refund gives cost tokens back to scope's bucket.
	Refund(scope string, cost int)
	// Success records that a first attempt to scope succeeded.
	Success(scope string)
	// Level returns the tokens in scope's bucket, as best known.
	Level(scope string) float64
}

// Limiter paces the attempts of each scope. The transport calls Reserve
// before every attempt, first ones included. When the wait is not zero it
// sleeps, in parts, and asks the reservation again ([Reservation.Delay])
// until that returns 0; if it gives up first, it cancels the reservation.
// With ok false nothing was taken and the attempt is not sent: the
// transport stops with an error wrapping [ErrRateLimited].
//
// [Adaptive] and [Fixed] implement it in process. A Limiter that also
// implements [Recorder] hears the outcome of every attempt. Reserve is
// called on every request, so it should cost nothing while the scope is
// not limited. It must be safe for concurrent use.
type Limiter interface {
	Reserve(scope string) (r Reservation, wait time.Duration, ok bool)
}

// Recorder is implemented by a [Limiter] that learns from outcomes, such as
// [Adaptive]: the transport calls Record after every attempt of scope with
// the attempt's outcome, except when the caller's context ended first.
// Since such a limiter slows every attempt of a throttled scope, a retry
// after a throttle then costs nothing from the retry quota, unless the
// limiter also has a ChargesThrottles method that returns true, as
// [Adaptive.ChargesThrottles] does in reference mode.
type Recorder interface {
	Record(scope string, k classify.Kind)
}

// Queue is implemented by a [Limiter] that issues reservations which wait:
// a [Reservation]'s Delay and Cancel call it back with the reservation. An
// implementation tells its reservations apart by their scope and [Ticket].
type Queue interface {
	// Delay returns how long the holder of r must still wait before
	// sending: 0 when it may send now.
	Delay(r Reservation) time.Duration
	// Cancel gives back the send token of r, whose attempt will not be
	// sent, as far as the queue can.
	Cancel(r Reservation)
}

// A Ticket identifies a [Reservation] within its scope, in numbers whose
// meaning is the issuing [Queue]'s own. [Adaptive] puts the scope's
// generation in Gen and the reservation's place in Seq; [Fixed] puts the
// instant the reservation is due in Seq.
type Ticket struct {
	Gen, Seq uint64
}

// RequestCounter is implemented by a [RetryQuota] that bounds retries by
// the number of requests, such as [Budget]: the transport calls Request
// once per request, before its first attempt, so that failed requests
// count as well as successful ones.
type RequestCounter interface {
	Request(scope string)
}

// Canceler is implemented by a [RetryQuota] whose Refund is not for a
// retry that was never sent, such as [Budget], whose Refund does nothing
// because a retry that was sent costs the server whether it succeeds or
// not. The transport calls Cancel, instead of Refund, with the cost of a
// retry or hedge it paid for and then did not send.
type Canceler interface {
	Cancel(scope string, cost int)
}

// FallbackCounter is implemented by a [RetryQuota] or [Limiter] whose state
// lives in a store shared by several processes: Fallbacks counts the
// decisions for scope it made from local state because the store did not
// answer in time. The transport reports it in its per-scope statistics.
type FallbackCounter interface {
	Fallbacks(scope string) uint64
}

var (
	_ RetryQuota     = (*Quota)(nil)
	_ RetryQuota     = (*Budget)(nil)
	_ RequestCounter = (*Budget)(nil)
	_ Canceler       = (*Budget)(nil)
	_ Limiter        = (*Adaptive)(nil)
	_ Recorder       = (*Adaptive)(nil)
	_ Queue          = (*Adaptive)(nil)
	_ Limiter        = (*Fixed)(nil)
	_ Queue          = (*Fixed)(nil)
)

// NoQuota is the retry quota of a policy that wants none: it grants every
// retry at no cost, and the transport treats it as no quota at all. It is
// a value, not a nil, because a nil quota in a policy means the default.
var NoQuota RetryQuota = noQuota{}

type noQuota struct{}

func (noQuota) Acquire(string, classify.Kind) (int, time.Duration, bool) { return 0, 0, true }
func (noQuota) Refund(string, int)                                       {}
func (noQuota) Success(string)                                           {}
func (noQuota) Level(string) float64                                     { return -1 }
