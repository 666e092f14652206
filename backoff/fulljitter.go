package backoff

import (
	"math/rand/v2"
	"time"
)

const (
	// DefaultBase is the delay ceiling of retry 1 in [FullJitter]: the
	// first retry waits less than one second (SPEC §1).
	DefaultBase = time.Second

	// DefaultMaxBackoff is the largest delay ceiling of [FullJitter], the
	// MAX_BACKOFF of AWS standard mode (SPEC §1): 20 seconds.
	DefaultMaxBackoff = 20 * time.Second
)

// FullJitter is AWS standard-mode backoff: truncated binary exponential
// backoff with full jitter (SPEC §1). For retry n, counted from 1,
//
//	Delay(n) = Rand() * min(Base * 2^(n-1), Max)
//
// The cap is applied before the jitter, as SPEC §1 specifies: the seed's
// literal formula, min(b * 2^i, MAX_BACKOFF) with b random, stops
// jittering once 2^i passes the cap, so clients then wait exactly the cap,
// in lockstep, which is the herd that jitter exists to break up.
//
// With the zero value (Base 1s, Max 20s) the delays are uniform below
// these ceilings:
//
//	retry n   1    2    3    4    5     6     7 and later
//	ceiling   1s   2s   4s   8s   16s   20s   20s
//
// Every result lies in [0, Max], for any retry number; retry numbers below
// 1 are treated as 1 and large ones do not overflow.
//
// FullJitter is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type FullJitter struct {
	// Base is the delay ceiling of retry 1; each later retry doubles it.
	// Zero or negative means DefaultBase (1s).
	Base time.Duration

	// Max caps the ceiling before the jitter is drawn, so a delay never
	// exceeds it. Zero or negative means DefaultMaxBackoff (20s).
	Max time.Duration

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use. Values outside [0, 1] are clamped into it, and NaN
	// counts as 0. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns the wait before retry number retry, counted from 1: a
// random duration in [0, min(Base*2^(retry-1), Max)]. A retry below 1 is
// treated as 1. Delay never returns a negative duration or one above the
// cap: Max, or DefaultMaxBackoff when Max is not positive.
func (s FullJitter) Delay(retry int) time.Duration {
	return jitter(s.ceiling(retry), s.rand())
}

// ceiling returns min(base * 2^(retry-1), max) with the defaults resolved,
// without overflow for any retry.
func (s FullJitter) ceiling(retry int) time.Duration {
	base, limit := s.Base, s.Max
	if base <= 0 {
		base = DefaultBase
	}
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	// Double until the cap is reached instead of shifting by retry-1: a
	// shift overflows for large retry numbers. base >= 1ns, so the loop
	// stops after at most 63 doublings whatever retry is.
	c := base
	for n := 1; n < retry && c < limit; n++ {
		if c > limit/2 {
			return limit
		}
		c *= 2
	}
	return min(c, limit)
}

// rand draws one number from s.Rand, or from math/rand/v2 if it is nil,
// and clamps it into [0, 1].
func (s FullJitter) rand() float64 {
	var r float64
	if s.Rand != nil {
		r = s.Rand()
	} else {
		r = rand.Float64()
	}
	switch {
	case r >= 1:
		return 1
	case r > 0:
		return r
	default: // zero, negative or NaN
		return 0
	}
}

// jitter returns r * ceiling for r in [0, 1], never above ceiling.
func jitter(ceiling time.Duration, r float64) time.Duration {
	if r >= 1 {
		return ceiling
	}
	// float64(ceiling) may round up past ceiling for ceilings above 2^53 ns
	// (about 104 days); the clamp keeps the result in range.
	return min(time.Duration(r*float64(ceiling)), ceiling)
}
