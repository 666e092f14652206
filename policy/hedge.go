package policy

import (
	"errors"
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
// A Policy's Hedge is a pointer, and nil means no hedging; a non-nil Hedge
// needs a positive Delay or Quantile. Validate rejects one with neither,
// which would hedge nothing and which the transport treats as nil.
type Hedge struct {
	// Delay is how long an attempt waits for its response headers before
	// the next copy is sent. With Quantile set, it is the delay used until
	// the scope has seen enough attempts to know the quantile. Zero means
	// no fixed delay, which needs a Quantile; Validate rejects a negative
	// one, which the transport treats as zero.
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
	// above HedgeLimit, which the transport treats as 1 and HedgeLimit.
	MaxHedges int
}

// HedgeLimit is the most copies a Hedge sends beside each attempt, five
// copies in flight at once, as gRPC's hedging policy allows at most five
// attempts (docs/hedging.md). More would multiply a slow server's load
// rather than cut the tail.
const HedgeLimit = 4

// normalised returns a copy of h with its out-of-range values as the
// transport treats them (see the fields): a negative Delay or MinDelay as
// zero, a negative or NaN Quantile as zero and one of 1 or more as the
// largest below 1, and MaxHedges within 0..HedgeLimit. It returns nil for
// a nil h, and for one that hedges nothing: no positive Delay or Quantile.
func (h *Hedge) normalised() *Hedge {
	if h == nil || !(h.Delay > 0 || h.Quantile > 0) { // NaN included
		return nil
	}
	c := *h
	c.Delay, c.MinDelay = max(c.Delay, 0), max(c.MinDelay, 0)
	switch {
	case !(c.Quantile > 0):
		c.Quantile = 0
	case c.Quantile >= 1:
		c.Quantile = math.Nextafter(1, 0)
	}
	c.MaxHedges = min(max(c.MaxHedges, 0), HedgeLimit)
	return &c
}

// validate reports h's settings that are out of range.
func (h *Hedge) validate() []error {
	if h == nil {
		return nil
	}
	var errs []error
	if h.Delay < 0 {
		errs = append(errs, fmt.Errorf("policy: Hedge.Delay = %v; want >= 0 (0: Quantile alone)", h.Delay))
	}
	if !below1(h.Quantile) { // NaN included
		errs = append(errs, fmt.Errorf("policy: Hedge.Quantile = %v; want 0 <= q < 1 (0: Delay alone)", h.Quantile))
	}
	if !(h.Delay > 0 || h.Quantile > 0) {
		errs = append(errs, errors.New("policy: Hedge has neither a Delay > 0 nor a Quantile > 0, so it would hedge nothing; want one of them, or a nil Hedge for no hedging"))
	}
	if h.MinDelay < 0 {
		errs = append(errs, fmt.Errorf("policy: Hedge.MinDelay = %v; want >= 0", h.MinDelay))
	}
	if h.MaxHedges < 0 || h.MaxHedges > HedgeLimit {
		errs = append(errs, fmt.Errorf("policy: Hedge.MaxHedges = %d; want 1..%d, or 0 for 1", h.MaxHedges, HedgeLimit))
	}
	return errs
}
