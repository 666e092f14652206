package backoff

import (
	"math"
	"time"
)

// Defaults of [ScaledJitter], those of the AWS SDK for Kotlin's delay
// provider (docs/aws.md). Its maxBackoff default is [DefaultMaxBackoff].
const (
	defaultInitialDelay = 10 * time.Millisecond
	defaultScaleFactor  = 1.5
	defaultJitter       = 1.0
)

// ScaledJitter is the AWS SDK for Kotlin's exponential delay provider
// (docs/aws.md): a ceiling that grows by ScaleFactor per retry, capped by
// MaxBackoff before the jitter, then reduced by a random part of up to
// the fraction Jitter of itself. For retry n, counted from 1,
//
//	c        = min(InitialDelay * ScaleFactor^(n-1), MaxBackoff)
//	Delay(n) = c * (1 - Jitter * Rand())
//
// With the full jitter of the default (Jitter 1) the delay is uniform in
// [0, c], as in [FullJitter] but with another base and factor; Jitter 0.5
// keeps at least half of c; NoJitter waits exactly c. Note the direction:
// Rand 0 gives the ceiling c and Rand near 1 the shortest delay.
//
// With the zero value (InitialDelay 10ms, ScaleFactor 1.5, MaxBackoff 20s,
// Jitter 1) the ceilings are:
//
//	retry n   1      2      3        4         5          6           7           8
//	ceiling   10ms   15ms   22.5ms   33.75ms   50.625ms   75.9375ms   113.9ms     170.9ms
//	retry n   9      10     11       12        13         14          15          16
//	ceiling   256ms  384ms  577ms    865ms     1.297s     1.946s      2.919s      4.379s
//	retry n   17     18     19       20 and later
//	ceiling   6.568s 9.853s 14.779s  20s
//
// and each delay is uniform in [0, ceiling]; with Rand 0.5 it is half the
// ceiling (5ms, 7.5ms, 11.25ms, ...).
//
// Every result lies in [0, MaxBackoff], for any retry number; retry
// numbers below 1 are treated as 1 and large ones do not overflow.
//
// ScaledJitter is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type ScaledJitter struct {
	// InitialDelay is the ceiling of retry 1, the Kotlin SDK's
	// initialDelay. Zero or negative means 10ms.
	InitialDelay time.Duration

	// ScaleFactor multiplies the ceiling at each retry, the Kotlin SDK's
	// scaleFactor. Zero, negative and NaN mean 1.5; a value between 0 and
	// 1 counts as 1, so delays never shrink as retries go on.
	ScaleFactor float64

	// MaxBackoff caps the ceiling before the jitter is applied, so a delay
	// never exceeds it. Zero or negative means DefaultMaxBackoff (20s).
	MaxBackoff time.Duration

	// Jitter is the largest fraction of the ceiling the jitter may take
	// off: 1 lets a delay drop to zero, 0.5 to half the ceiling. Zero,
	// negative and NaN mean 1 (the Kotlin default, full jitter), and
	// values above 1 count as 1. Use NoJitter for none.
	Jitter float64

	// NoJitter turns the jitter off, so each delay is its ceiling and Rand
	// is not called; it overrides Jitter. This is the Kotlin SDK's
	// jitter = 0.
	NoJitter bool

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use. Values outside [0, 1] are clamped into it, and NaN
	// counts as 0. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns the wait before retry number retry, counted from 1:
// c*(1 - Jitter*Rand()) with c = min(InitialDelay*ScaleFactor^(retry-1),
// MaxBackoff). A retry below 1 is treated as 1. Delay never returns a
// negative duration or one above the cap: MaxBackoff, or DefaultMaxBackoff
// when MaxBackoff is not positive.
func (s ScaledJitter) Delay(retry int) time.Duration {
	c := s.ceiling(retry)
	if s.NoJitter {
		return c
	}
	return shorten(c, c, fraction(s.Jitter, defaultJitter)*draw(s.Rand))
}

// ceiling returns min(InitialDelay*ScaleFactor^(retry-1), MaxBackoff) with
// the defaults resolved.
func (s ScaledJitter) ceiling(retry int) time.Duration {
	initial := orDefault(s.InitialDelay, defaultInitialDelay)
	limit := orDefault(s.MaxBackoff, DefaultMaxBackoff)
	factor := s.ScaleFactor
	switch {
	case math.IsNaN(factor) || factor <= 0:
		factor = defaultScaleFactor
	case factor < 1:
		factor = 1
	}
	return grow(initial, factor, max(retry, 1)-1, limit)
}
