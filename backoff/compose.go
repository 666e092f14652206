package backoff

import "time"

// Capped bounds another strategy: Delay(n) = min(Strategy.Delay(n), Max).
// It adds a cap to a strategy that has none, such as [Incremental] or a
// [Func], or lowers the cap of one that has.
//
// For example, Capped{Strategy: Incremental{}, Max: 5 * time.Second}
// waits 1s, 2s, 3s, 4s, 5s, 5s, ...
//
// Capped is safe for concurrent use if its Strategy is.
type Capped struct {
	// Strategy gives the delays to cap. Nil means FullJitter{}, the
	// package default.
	Strategy Strategy

	// Max is the largest delay returned. Zero or negative means
	// DefaultMaxBackoff (20s).
	Max time.Duration
}

// Delay returns Strategy.Delay(retry) clamped into [0, Max]; retry is
// passed through unchanged. It never exceeds Max, or DefaultMaxBackoff when
// Max is not positive, even if Strategy breaks the non-negative contract.
func (s Capped) Delay(retry int) time.Duration {
	return min(max(inner(s.Strategy).Delay(retry), 0), orDefault(s.Max, DefaultMaxBackoff))
}

// Jittered adds the AWS SDK for Kotlin's form of jitter (docs/aws.md) to
// another strategy: it takes off a random part of up to the fraction
// Fraction of each delay,
//
//	Delay(n) = Strategy.Delay(n) * (1 - Fraction * Rand())
//
// so the result lies in [(1-Fraction)*d, d] for the inner delay d and
// never exceeds it: any cap of the inner strategy still holds. Jittering
// a deterministic strategy such as [Constant] or [Incremental] keeps
// clients that failed together from retrying together.
//
// For example, with Rand 0.5 and the default full jitter,
// Jittered{Strategy: Constant{Interval: time.Second}} waits 500ms.
//
// Jittered draws once from Rand per call. It is safe for concurrent use
// if its Strategy and Rand are.
type Jittered struct {
	// Strategy gives the delays to jitter. Nil means FullJitter{}, the
	// package default.
	Strategy Strategy

	// Fraction is the largest fraction of a delay that the jitter may
	// take off: 1 lets a delay drop to zero, 0.1 keeps at least 90% of
	// it. Zero, negative and NaN mean 1 (full jitter); values above 1
	// count as 1. To have no jitter, use the inner strategy on its own.
	Fraction float64

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use. Values outside [0, 1] are clamped into it, and NaN
	// counts as 0. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns Strategy.Delay(retry) reduced by a random fraction of at
// most Fraction; retry is passed through unchanged. The result is never
// negative and never exceeds the inner delay, which is raised to zero
// first if the inner strategy returns a negative one.
func (s Jittered) Delay(retry int) time.Duration {
	d := max(inner(s.Strategy).Delay(retry), 0)
	return shorten(d, d, fraction(s.Fraction, 1)*draw(s.Rand))
}

// inner resolves a nil Strategy field of a wrapper to the package default.
func inner(s Strategy) Strategy {
	if s == nil {
		return FullJitter{}
	}
	return s
}
