package quota

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// Quota decides, per scope, whether a client may retry. [Bucket] (the
// circuit breaker that stops retries when most attempts fail) and [Budget]
// (retries in proportion to requests) implement it in process; an
// implementation may keep its state in a store that a fleet of replicas
// shares. The transport calls Acquire before each retry, Refund when a
// retry it paid for succeeds or is not sent after all (or, for one that is
// a [Canceler], Cancel when it is not sent), Success after each first
// attempt that succeeds, and Level for its events and snapshots. A nil
// Quota must not be called; in a policy it means the default quota, and
// [None] means none.
//
// Success and Level are called on every request, so they should cost
// nothing while all is well: no lock, no allocation, no round trip. All
// methods must be safe for concurrent use.
type Quota interface {
	// Acquire takes from scope's share the cost of a retry after an
	// outcome of kind k, and returns the tokens taken and how long to wait
	// before the retry. With ok false nothing was taken and the retry must
	// not happen; the transport then stops with ErrExceeded when the quota
	// is a policy's Quota, or ErrOverBudget when it is its Budget.
	Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool)
	// Refund gives cost tokens back to scope's share.
	Refund(scope string, cost int)
	// Success records that a first attempt to scope succeeded.
	Success(scope string)
	// Level returns the tokens, or retries, scope has left, as best known.
	Level(scope string) float64
}

// RequestCounter is implemented by a [Quota] that bounds retries by the
// number of requests, such as [Budget]: the transport calls Request once
// per request, before its first attempt, so that failed requests count as
// well as successful ones. It belongs in a policy's Budget, which is
// charged in the request's own scope, where the requests are counted.
type RequestCounter interface {
	Request(scope string)
}

// Canceler is implemented by a [Quota] whose Refund is not for a retry
// that was never sent, such as [Budget], whose Refund does nothing because
// a retry that was sent costs the server whether it succeeds or not. The
// transport calls Cancel, instead of Refund, with the cost of a retry or
// hedge it paid for and then did not send.
type Canceler interface {
	Cancel(scope string, cost int)
}

var (
	_ Quota          = (*Bucket)(nil)
	_ Quota          = (*Budget)(nil)
	_ RequestCounter = (*Budget)(nil)
	_ Canceler       = (*Budget)(nil)
)

// None is the quota of a policy that wants none: it grants every retry at
// no cost, and the transport treats it as no quota at all. It is a value,
// not a nil, because a nil quota in a policy means the default. Its Level
// is -1 for every scope, since it keeps no count.
var None Quota = none{}

type none struct{}

func (none) Acquire(string, classify.Kind) (int, time.Duration, bool) { return 0, 0, true }
func (none) Refund(string, int)                                       {}
func (none) Success(string)                                           {}
func (none) Level(string) float64                                     { return -1 }
