package policy

import (
	"fmt"
	"math"
	"time"
)

// Hedge says when an attempt that is slow to answer gets company: a copy
// of the request sent while the first is still in flight, so that the
// first response to come back is used (hedged requests, docs/hedging.md).
// Only requests that are safe to send twice at once are hedged: an
// idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE), with no body
// or a body that GetBody can produce again. Neither RetryNonIdempotent nor
// an Idempotency-Key extends to hedges (why: docs/hedging.md). Each copy
// pays from the retry quotas (Quota and Budget) as a retry after a Timeout
// would, and none is sent once they cannot pay.
//
// The zero Hedge sends no copies.
type Hedge struct {
	// Delay is how long an attempt waits for its response headers before
	// the next copy is sent. With Quantile set, it is the delay used until
	// the scope has seen enough attempts to know the quantile. Zero means
	// no fixed delay; Validate rejects a negative one, which the transport
	// treats as zero.
	Delay time.Duration

	// Quantile, between 0 and 1, makes the delay the scope's observed
	// quantile of the time attempts take to their response headers: 0.95
	// hedges the slowest 5 %. Zero means Delay alone. Validate rejects a
	// value outside [0, 1); the transport treats a negative or NaN one as
	// zero, and one of 1 or more as the largest quantile below 1: the
	// longest time observed.
	Quantile float64

	// MinDelay is the shortest delay a Quantile may give, so that a scope
	// whose answers are all fast does not send a copy of every request.
	// Zero means none; Validate rejects a negative one, which the
	// transport treats as zero.
	MinDelay time.Duration

	// MaxHedges is the most copies sent beside each attempt, at most
	// HedgeLimit. Zero means 1; Validate rejects a negative value or one
	// above HedgeLimit, and Copies treats them as 1 and HedgeLimit.
	MaxHedges int
}

// HedgeLimit is the most copies a Hedge sends beside each attempt, five
// copies in flight at once, as gRPC's hedging policy allows at most five
// attempts (docs/hedging.md). More would multiply a slow server's load
// rather than cut the tail.
const HedgeLimit = 4

// Enabled reports whether h sends copies at all: it has a Delay or a
// Quantile.
func (h Hedge) Enabled() bool { return h.Delay > 0 || h.Quantile > 0 }

// Copies returns how many copies h may send beside each attempt:
// MaxHedges, 1 when MaxHedges is zero or negative, and HedgeLimit when it
// is above HedgeLimit.
func (h Hedge) Copies() int { return min(max(h.MaxHedges, 1), HedgeLimit) }

// normalised returns h with its out-of-range values as the transport
// treats them (see the fields): a negative Delay or MinDelay as zero, a
// negative or NaN Quantile as zero and one of 1 or more as the largest
// below 1, and MaxHedges within 0..HedgeLimit.
func (h Hedge) normalised() Hedge {
	h.Delay, h.MinDelay = max(h.Delay, 0), max(h.MinDelay, 0)
	switch {
	case !(h.Quantile > 0): // NaN included
		h.Quantile = 0
	case h.Quantile >= 1:
		h.Quantile = math.Nextafter(1, 0)
	}
	h.MaxHedges = min(max(h.MaxHedges, 0), HedgeLimit)
	return h
}

// validate reports h's settings that are out of range.
func (h Hedge) validate() []error {
	var errs []error
	if h.Delay < 0 {
		errs = append(errs, fmt.Errorf("policy: Hedge.Delay = %v; want >= 0 (0: none)", h.Delay))
	}
	if !below1(h.Quantile) { // NaN included
		errs = append(errs, fmt.Errorf("policy: Hedge.Quantile = %v; want 0 <= q < 1 (0: Delay alone)", h.Quantile))
	}
	if h.MinDelay < 0 {
		errs = append(errs, fmt.Errorf("policy: Hedge.MinDelay = %v; want >= 0", h.MinDelay))
	}
	if h.MaxHedges < 0 || h.MaxHedges > HedgeLimit {
		errs = append(errs, fmt.Errorf("policy: Hedge.MaxHedges = %d; want 1..%d, or 0 for 1", h.MaxHedges, HedgeLimit))
	}
	return errs
}
