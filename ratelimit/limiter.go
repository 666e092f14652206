package ratelimit

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// DefaultMaxScopes is the most scopes an [Adaptive] or a [Fixed] stores at
// once when its MaxScopes is zero.
const DefaultMaxScopes = 10000

// Limiter paces the attempts of each scope. The transport calls Reserve
// before every attempt, first ones included. When the wait is not zero it
// sleeps, in parts, and asks the reservation again ([Reservation.Delay])
// until that returns 0; if it gives up first, it cancels the reservation.
// With ok false nothing was taken and the attempt is not sent: the
// transport stops with an error wrapping [ErrRateLimited].
//
// [Adaptive] and [Fixed] implement it in process. A Limiter that also
// implements [Recorder] hears the outcome of every attempt, and one that
// implements [Releaser] of every attempt that ended without one. Reserve is
// called on every request, so it should cost nothing while the scope is
// not limited. It must be safe for concurrent use.
type Limiter interface {
	Reserve(scope string) (r Reservation, wait time.Duration, ok bool)
}

// Recorder is implemented by a [Limiter] that learns from outcomes, such as
// [Adaptive]: the transport calls Record after every attempt of scope with
// the attempt's outcome, except when the caller's context ended first or
// the attempt was a hedged copy cancelled before it answered (see
// [Releaser]), and when the response publishes a quota that a
// [QuotaRecorder] records with the outcome in one call (RecordQuota, in
// place of Record). A hedged copy that answers after its race was decided
// is recorded too, from the copy's own goroutine, which may be after its
// request's RoundTrip returned.
// Since such a limiter slows every attempt of a throttled scope, a retry
// after a throttle then costs nothing from the retry quota, unless the
// limiter also has a ChargesThrottles method that returns true, as
// [Adaptive.ChargesThrottles] does in reference mode.
type Recorder interface {
	Record(scope string, k classify.Kind)
}

// Releaser is implemented by a [Limiter] that counts the attempts in
// flight, such as [Adaptive] (its cold start reads the concurrency from
// them): the transport calls Release once for each attempt of scope that
// was sent and ended without an outcome the limiter should learn from, and
// so is not given to Record: the caller's context ended while the attempt
// was in flight or being classified, or the attempt was a hedged copy that
// its race cancelled before it answered. With [Recorder], every attempt
// sent is thus recorded (by Record, or by RecordQuota, see
// [QuotaRecorder]) or released, exactly once, when it ends; a hedged copy
// may end after its request's RoundTrip returned. A Limiter that is not a
// Recorder hears Release for every attempt sent, except an attempt whose
// response publishes a quota that it records: RecordQuota then ends the
// attempt in place of Release. Release gives back
// no send token, since the attempt was sent: [Reservation.Cancel] is for
// attempts that were not. It must be safe for concurrent use.
type Releaser interface {
	Release(scope string)
}

// QuotaRecorder is implemented by a [Limiter] that paces a scope by the
// quota its server publishes, such as [Adaptive]. For an attempt of scope
// whose response publishes one (retryafter.ParseQuota: the IETF RateLimit
// fields or X-RateLimit-*), successful or not, the transport calls
// RecordQuota in place of Record (or of Release, for a limiter that is not
// a [Recorder]), with the attempt's outcome kind k, the requests left in
// the server's window and the time until it resets, read from the fields
// the policy trusts (policy.ServerDelay's Headers). RecordQuota records k
// as Record does, then the quota, in one call: it is the attempt's one
// record (see [Releaser]). An attempt whose caller's context ended first
// is released, and its quota not read.
type QuotaRecorder interface {
	RecordQuota(scope string, k classify.Kind, remaining int64, reset time.Duration)
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
// instant the reservation is due in Seq. The zero Ticket is the zero
// Reservation's.
type Ticket struct {
	Gen, Seq uint64
}

// FallbackCounter is implemented by a [Limiter], or a retry quota (package
// quota), whose state lives in a store shared by several processes:
// Fallbacks counts the decisions for scope it made from local state because
// the store did not answer in time. The transport reports it in its
// per-scope statistics, for limiters and quotas alike.
type FallbackCounter interface {
	Fallbacks(scope string) uint64
}

var (
	_ Limiter       = (*Adaptive)(nil)
	_ Recorder      = (*Adaptive)(nil)
	_ Releaser      = (*Adaptive)(nil)
	_ QuotaRecorder = (*Adaptive)(nil)
	_ Queue         = (*Adaptive)(nil)
	_ Limiter       = (*Fixed)(nil)
	_ Queue         = (*Fixed)(nil)
)
