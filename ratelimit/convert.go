package ratelimit

import (
	"cmp"
	"math"
	"time"
)

// orDefault returns v, or def when v is zero or negative.
func orDefault(v, def int) int { return cmp.Or(max(v, 0), def) }

// seconds converts s >= 0 seconds to a Duration, rounded up so that waiting
// it out covers the whole wait, and saturated at the largest Duration.
func seconds(s float64) time.Duration {
	if ns := math.Ceil(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}

// roundSeconds converts s >= 0 seconds to the nearest Duration, saturated
// at the largest Duration.
func roundSeconds(s float64) time.Duration {
	if ns := math.Round(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}
