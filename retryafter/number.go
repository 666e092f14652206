package retryafter

import (
	"math"
	"time"
)

// parseUint parses v as one or more ASCII digits: a non-negative decimal
// integer, the 1*DIGIT of delay-seconds (RFC 9110 §10.2.3). Signs,
// fractions, exponents, spaces and empty input make it malformed. A value
// too large for an int64 saturates at math.MaxInt64; scanning goes on after
// saturating, so a later non-digit still makes the value malformed.
func parseUint(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
		} else {
			n = n*10 + d
		}
	}
	return n, true
}

// parseFixed parses v as digits with an optional fraction: 1*DIGIT
// ["." 1*DIGIT]. It returns the integer part, saturated as by [parseUint],
// and the fraction in billionths (nanoseconds of a second), truncated after
// the ninth digit. Signs, exponents, a bare "." and a "." without digits on
// both sides make it malformed.
func parseFixed(v string) (n, frac int64, ok bool) {
	dot := len(v)
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			dot = i
			break
		}
	}
	if n, ok = parseUint(v[:dot]); !ok {
		return 0, 0, false
	}
	if dot == len(v) {
		return n, 0, true
	}
	f := v[dot+1:]
	if f == "" {
		return 0, 0, false
	}
	scale := int64(1e8)
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		frac += int64(c-'0') * scale
		scale /= 10 // zero after the ninth digit: the rest is below a nanosecond
	}
	return n, frac, true
}

// scale returns n units as a Duration, saturating at [MaxDelay]. n must not
// be negative.
func scale(n int64, unit time.Duration) time.Duration {
	if n > int64(MaxDelay/unit) {
		return MaxDelay
	}
	return time.Duration(n) * unit
}

// until returns the time from now to t, clamped to [0, MaxDelay]: a t at
// or before now gives 0.
func until(t, now time.Time) time.Duration {
	// Time.Sub saturates at the largest Duration instead of overflowing.
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0
	case d > MaxDelay:
		return MaxDelay
	}
	return d
}
