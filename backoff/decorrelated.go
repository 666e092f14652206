package backoff

import "time"

// decorrelatedMaxDraws bounds the chain that [Decorrelated.Delay] replays,
// and so the cost of one call: 64 draws from Rand at most.
const decorrelatedMaxDraws = 64

// Decorrelated is "decorrelated jitter" from the AWS Architecture Blog post
// on backoff and jitter that the SNS guide cites (docs/sns.md). The blog
// defines it as a chain in which each sleep is drawn from a range set by
// the sleep before it:
//
//	sleep_0 = Base
//	sleep_i = min(Max, Base + Rand() * (3*sleep_(i-1) - Base))
//
// that is, uniform between Base and three times the previous sleep, then
// capped.
//
// # Stateless form
//
// A [Strategy] keeps no state between calls, so Delay(n) replays the chain
// on every call: it draws n numbers from Rand and returns sleep_n. The
// marginal distribution of Delay(n) is therefore exactly that of the n-th
// decorrelated sleep, but two calls make independent chains, so
// consecutive delays of one request are not linked the way the blog's
// stateful loop links them. With a fixed Rand the chain is deterministic.
//
// A call costs O(n) draws and float operations. The chain is bounded:
// retries beyond 64 are treated as retry 64, so one call never draws more
// than 64 numbers. The chain has long settled by then: it is a random
// walk on a logarithmic scale that climbs by ln 3 - 1 ≈ 0.1 per draw on
// average (each draw multiplies the range by 3*Rand), reflected at Base
// and stopped at Max. Simulated, the distribution of a sleep stops
// changing after about 10 draws for the defaults, and by draw 64 it is
// within a few percent of its limit for Max/Base ratios up to about 10^3;
// more extreme ratios (a 1ms Base under a 20s Max) still drift somewhat
// past draw 64.
//
// With the zero value (Base 1s, Max 20s) the delays are:
//
//	retry n      1          2          3          4           5          6 and later
//	range        [1s, 3s)   [1s, 9s)   [1s, 20s]  [1s, 20s]   [1s, 20s]  [1s, 20s]
//	Rand 0.5     2s         3.5s       5.75s      9.125s      14.1875s   20s
//
// Every result lies in [min(Base, Max), Max], for any retry number; retry
// numbers below 1 are treated as 1.
//
// Decorrelated is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type Decorrelated struct {
	// Base is the smallest delay and the start of the chain; retry 1
	// waits between Base and 3*Base. Zero or negative means DefaultBase
	// (1s).
	Base time.Duration

	// Max caps every sleep of the chain, so a delay never exceeds it.
	// Zero or negative means DefaultMaxBackoff (20s). A Max below Base
	// makes every delay Max.
	Max time.Duration

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use; Delay(n) calls it min(n, 64) times. Values outside
	// [0, 1] are clamped into it, and NaN counts as 0. Nil means
	// math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns the wait before retry number retry, counted from 1: the
// retry-th sleep of a decorrelated-jitter chain replayed from Base, with
// retries above 64 treated as 64. A retry below 1 is treated as 1. Delay
// never returns a negative duration or one above the cap: Max, or
// DefaultMaxBackoff when Max is not positive.
func (s Decorrelated) Delay(retry int) time.Duration {
	base, limit := orDefault(s.Base, DefaultBase), orDefault(s.Max, DefaultMaxBackoff)
	if base >= limit {
		return limit
	}
	// The chain runs in float64: 3*sleep overflows a Duration for sleeps
	// above a third of math.MaxInt64, and every sleep stays in
	// [base, limit], so nothing grows without bound.
	lo, hi := float64(base), float64(limit)
	sleep := lo
	for range min(max(retry, 1), decorrelatedMaxDraws) {
		sleep = min(hi, lo+draw(s.Rand)*(3*sleep-lo))
	}
	return fromFloat(sleep, limit)
}
