package backoff

import "time"

const (
	// DefaultBase is the delay ceiling of retry 1 in [FullJitter]: the
	// first retry waits less than one second (docs/aws.md). [EqualJitter] and
	// [Decorrelated] use it as their default Base too.
	DefaultBase = time.Second

	// DefaultMaxBackoff is the largest delay ceiling of [FullJitter], the
	// MAX_BACKOFF of AWS standard mode (docs/aws.md): 20 seconds. It is also
	// the default cap of [EqualJitter], [Decorrelated], [ScaledJitter]
	// (the Kotlin SDK's maxBackoff, docs/aws.md) and [Capped].
	DefaultMaxBackoff = 20 * time.Second
)

// FullJitter is AWS standard-mode backoff: truncated binary exponential
// backoff with full jitter (docs/aws.md). For retry n, counted from 1,
//
//	Delay(n) = Rand() * min(Base * 2^(n-1), Max)
//
// The cap is applied before the jitter, as docs/aws.md explains: the AWS guide's
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
	return jitter(binaryCeiling(s.Base, s.Max, retry), draw(s.Rand))
}
