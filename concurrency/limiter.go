package concurrency

import (
	"context"
	"errors"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// ErrLimited records that a scope's concurrency limit refused an attempt:
// every place was taken and none came free at once (MaxWait zero) or
// within MaxWait. The attempt was not sent. [Adaptive.Acquire] and
// [Fixed.Acquire] return ErrLimited itself, unwrapped and without
// allocating, since refusals are the common path of an overloaded scope;
// match it with errors.Is, as callers that wrap it must let them. A caller
// should not send the attempt again into the same scope at once: the
// refusal means that scope already has as many attempts in flight as it
// can serve without queueing.
var ErrLimited = errors.New("concurrency: scope's concurrency limit reached")

// DefaultMaxScopes is the most scopes an [Adaptive] or a [Fixed] stores at
// once when its MaxScopes is zero.
const DefaultMaxScopes = 10000

// Limiter decides how many attempts of each scope may be in flight at
// once. [Adaptive] learns the number from latency; [Fixed] keeps it
// constant. Implementations must be safe for concurrent use.
type Limiter interface {
	// Acquire takes a place for one attempt of scope. It returns at once
	// when a place is free; otherwise it waits as the implementation
	// allows (at most until ctx ends) and returns an error wrapping
	// ErrLimited, or ctx's error, when no place came. The caller ends a
	// Permit it got with exactly one call of Done or Drop.
	Acquire(ctx context.Context, scope string) (Permit, error)
}

// Permit is a place an attempt took in its scope, handed out by a
// [Limiter]. It is a small value that calls back the limiter it came from;
// copying it copies the place, which must still be given back only once.
// The zero Permit is a no-op: Done and Drop do nothing, so a limiter with
// nothing to track may hand it out.
type Permit struct {
	g     *gate  // nil for the zero Permit
	seq   uint64 // which place its scope handed out, counting from 1
	in    int    // attempts of the scope in flight when it was taken, itself included
	timed bool   // Done learns from its latency (LearnsLatency)
}

// Done gives the place back, with what the attempt taught: its latency,
// from the moment it was sent until its response headers arrived (or its
// error did), and the kind of its outcome. An [Adaptive] learns from a
// Success's latency and from a Timeout; see its doc for which outcomes it
// learns nothing from. Call Done or Drop exactly once per Permit: a second
// call gives back a place some other attempt holds.
func (p Permit) Done(latency time.Duration, k classify.Kind) {
	if p.g != nil {
		p.g.release(p, latency, k, true)
	}
}

// LearnsLatency reports whether Done learns from the latency it is given:
// true for a place an [Adaptive] will learn from, false for the others,
// whose Done may be given 0: a [Fixed]'s, the zero Permit, and an
// Adaptive's that falls outside the round it measures, or in a round that
// follows a quiet one (see Adaptive). A caller that reads the clock only
// to measure the latency may skip it when this is false.
func (p Permit) LearnsLatency() bool { return p.timed }

// Drop gives the place back without learning anything: the attempt was not
// sent, or the caller gave up on it before it ended (its context ended, or
// it was a hedged copy that lost its race), so its latency says nothing of
// the server. Call Done or Drop exactly once per Permit.
func (p Permit) Drop() {
	if p.g != nil {
		p.g.release(p, 0, 0, false)
	}
}

// State is a snapshot of one scope of an [Adaptive] or a [Fixed]. The
// zero State is that of a scope not stored: nothing in flight, nothing
// learned.
type State struct {
	Limit    int    // places: attempts that may be in flight at once
	InFlight int    // places taken and not yet given back
	Waiting  int    // callers waiting for a place
	Refused  uint64 // acquisitions refused with ErrLimited since the scope was stored

	// What an Adaptive learned; zero for a Fixed, and until the scope's
	// first round closes.
	MinLatency time.Duration // the no-load latency: what an attempt takes that meets no queue
	Latency    time.Duration // the mean latency of the successes of the last round timed (see Adaptive)
}
