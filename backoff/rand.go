package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// This file holds the randomness shared by every jittered strategy: one
// way to draw, one way to scale a duration by a draw, and one way to read
// a jitter fraction, so that no strategy converts floats to durations on
// its own.

// draw returns one number from f, or from math/rand/v2 if f is nil,
// clamped into [0, 1]. NaN counts as 0 and +Inf as 1, so a broken hook
// can neither panic a strategy nor push a delay out of its range.
func draw(f func() float64) float64 {
	var r float64
	if f != nil {
		r = f()
	} else {
		r = rand.Float64()
	}
	return unit(r)
}

// unit clamps x into [0, 1]; NaN and negatives become 0.
func unit(x float64) float64 {
	switch {
	case x >= 1:
		return 1
	case x > 0:
		return x
	default: // zero, negative or NaN
		return 0
	}
}

// fraction resolves a jitter fraction field: values in (0, 1] are kept,
// values above 1 become 1, and zero, negatives and NaN become def.
func fraction(x, def float64) float64 {
	if x > 0 {
		return min(x, 1)
	}
	return def
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

// shorten returns d reduced by the fraction r of room, the AWS SDK for
// Kotlin's form of jitter (docs/aws.md): d - r*room, for r in [0, 1] and
// 0 <= room <= d. The result lies in [d-room, d] and cannot overflow.
func shorten(d, room time.Duration, r float64) time.Duration {
	return d - jitter(room, r)
}

// fromFloat converts a non-negative nanosecond count to a Duration,
// rounding to the nearest nanosecond and saturating at limit: values at
// or above limit, +Inf and NaN all give limit, which also keeps float64
// values above math.MaxInt64 from being converted at all.
func fromFloat(ns float64, limit time.Duration) time.Duration {
	if !(ns < float64(limit)) {
		return limit
	}
	if ns <= 0 {
		return 0
	}
	// float64(limit) may exceed limit by rounding, hence the second clamp.
	return min(time.Duration(math.Round(ns)), limit)
}
