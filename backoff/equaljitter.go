package backoff

import "time"

// EqualJitter is truncated binary exponential backoff with "equal
// jitter", from the AWS Architecture Blog post on backoff and jitter that
// SNS cites (docs/sns.md): half of each ceiling is kept and only the other
// half is random. For retry n, counted from 1,
//
//	c        = min(Base * 2^(n-1), Max)
//	Delay(n) = c/2 + Rand() * c/2
//
// so every delay lies in [c/2, c]. Compared with [FullJitter] it never
// retries almost at once, at the cost of a narrower spread between
// clients. As in FullJitter, the cap is applied before the jitter.
//
// With the zero value (Base 1s, Max 20s) the delays are:
//
//	retry n   1            2         3         4         5          6 and later
//	ceiling   1s           2s        4s        8s        16s        20s
//	range     [0.5s, 1s]   [1s, 2s]  [2s, 4s]  [4s, 8s]  [8s, 16s]  [10s, 20s]
//	Rand 0.5  750ms        1.5s      3s        6s        12s        15s
//
// Every result lies in [0, Max], for any retry number; retry numbers below
// 1 are treated as 1 and large ones do not overflow.
//
// EqualJitter is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type EqualJitter struct {
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
// random duration in [c/2, c] with c = min(Base*2^(retry-1), Max). A retry
// below 1 is treated as 1. Delay never returns a negative duration or one
// above the cap: Max, or DefaultMaxBackoff when Max is not positive.
func (s EqualJitter) Delay(retry int) time.Duration {
	c := binaryCeiling(s.Base, s.Max, retry)
	// For an odd c, half rounds down and the random part gets the extra
	// nanosecond, so Rand 1 still reaches c exactly.
	half := c / 2
	return half + jitter(c-half, draw(s.Rand))
}
