package backoff

import (
	"math"
	"time"
)

// grow returns min(base * factor^steps, limit), the exponential core of
// [FullJitter], [EqualJitter] and [ScaledJitter], for base and limit >= 0,
// factor >= 1 and any steps (steps <= 0 means no growth).
//
// It never overflows: a factor of exactly 2 doubles in integers and stops
// at the limit, which is exact for every base and takes at most 63 steps
// because base >= 1ns; any other factor is computed in float64 and
// saturates at limit before it is converted back to a Duration, so a
// product above math.MaxInt64 or an infinite power is never converted.
func grow(base time.Duration, factor float64, steps int, limit time.Duration) time.Duration {
	switch {
	case base <= 0:
		return 0
	case base >= limit:
		return limit
	case steps <= 0:
		return base
	}
	if factor == 2 {
		c := base
		for ; steps > 0 && c < limit; steps-- {
			if c > limit/2 {
				return limit
			}
			c *= 2
		}
		return min(c, limit)
	}
	// math.Pow of a huge steps is +Inf, which fromFloat saturates.
	return fromFloat(float64(base)*math.Pow(factor, float64(steps)), limit)
}

// binaryCeiling returns min(base * 2^(retry-1), limit) with FullJitter's
// defaults resolved: base DefaultBase and limit DefaultMaxBackoff when not
// positive. A retry below 1 counts as 1.
func binaryCeiling(base, limit time.Duration, retry int) time.Duration {
	base, limit = orDefault(base, DefaultBase), orDefault(limit, DefaultMaxBackoff)
	// max first: retry-1 would overflow for math.MinInt.
	return grow(base, 2, max(retry, 1)-1, limit)
}
