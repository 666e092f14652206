package main

import (
	"math"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// randLow and randHigh are the two extremes of a Rand hook: 0, and the
// largest float64 below 1, so that a jittered strategy returns each end of
// its range (to within a nanosecond) while the hook keeps its [0, 1)
// contract.
func randLow() float64  { return 0 }
func randHigh() float64 { return math.Nextafter(1, 0) }

// bounds holds two strategies that give the shortest and the longest wait
// that a strategy can give before each retry, whatever its jitter draws.
type bounds struct {
	lo, hi backoff.Strategy
	// exact is false for a strategy whose jitter this program does not
	// know (a backoff.Func or a type of its own): hi then gives one sample
	// of its delay, and lo is not used.
	exact bool
}

// boundsOf returns the bounds of s. Every jittered strategy of package
// backoff draws from its Rand hook, and each delay moves one way as a draw
// grows, so copies with Rand fixed at randLow and randHigh give the two
// ends; which copy gives which end depends on the strategy (ScaledJitter
// and Schedule shorten a delay as the draw grows), so either orders them.
// Capped and Jittered are bounded through their inner strategy. A nil s is
// backoff.FullJitter{}, as in Policy.Backoff and in the wrappers.
func boundsOf(s backoff.Strategy) bounds {
	switch v := s.(type) {
	case nil:
		return boundsOf(backoff.FullJitter{})
	case backoff.Constant, backoff.Incremental:
		return bounds{lo: s, hi: s, exact: true}
	case backoff.FullJitter:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.EqualJitter:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.Decorrelated:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.ScaledJitter:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.Exponential:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.Schedule:
		lo, hi := v, v
		lo.Rand, hi.Rand = randLow, randHigh
		return either(lo, hi)
	case backoff.Capped:
		in := boundsOf(v.Strategy)
		return bounds{
			lo:    backoff.Capped{Strategy: in.lo, Max: v.Max},
			hi:    backoff.Capped{Strategy: in.hi, Max: v.Max},
			exact: in.exact,
		}
	case backoff.Jittered:
		// Jittered takes off more as its draw grows: the longest wait is
		// the inner one's longest with nothing taken off.
		in := boundsOf(v.Strategy)
		return bounds{
			lo:    backoff.Jittered{Strategy: in.lo, Fraction: v.Fraction, Rand: randHigh},
			hi:    backoff.Jittered{Strategy: in.hi, Fraction: v.Fraction, Rand: randLow},
			exact: in.exact,
		}
	default:
		return bounds{lo: s, hi: s}
	}
}

// either returns the bounds of a strategy whose two extreme copies are a
// and b, in either order.
func either(a, b backoff.Strategy) bounds {
	return bounds{
		lo:    backoff.Func(func(n int) time.Duration { return min(a.Delay(n), b.Delay(n)) }),
		hi:    backoff.Func(func(n int) time.Duration { return max(a.Delay(n), b.Delay(n)) }),
		exact: true,
	}
}
