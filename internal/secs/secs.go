// Package secs converts the float seconds in which the quotas and rate
// limiters do their arithmetic to time.Duration, saturating instead of
// overflowing.
package secs

import (
	"math"
	"time"
)

// Ceil converts s >= 0 seconds to a Duration, rounded up so that waiting it
// out covers the whole wait (or repays the whole deficit), and saturated at
// the largest Duration.
func Ceil(s float64) time.Duration {
	if ns := math.Ceil(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}

// Round converts s >= 0 seconds to the nearest Duration, saturated at the
// largest Duration.
func Round(s float64) time.Duration {
	if ns := math.Round(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}
