package backoff

import "time"

// Strategy gives the delay before a retry.
//
// Delay(retry) is the wait before retry number retry, counted from 1:
// Delay(1) is the wait before the second attempt. Implementations return a
// non-negative duration for any int without panicking, and are safe for
// concurrent use, so one Strategy can serve every request. The strategies
// in this package treat a retry below 1 as 1.
type Strategy interface {
	Delay(retry int) time.Duration
}

// Func adapts a plain function to [Strategy]: Func(f).Delay(n) calls f(n).
// A nil Func has no delay.
type Func func(retry int) time.Duration

// Delay returns f(retry), with a negative result raised to zero so that the
// [Strategy] contract holds whatever f does. A nil f returns 0.
// Delay is safe for concurrent use if f is.
func (f Func) Delay(retry int) time.Duration {
	if f == nil {
		return 0
	}
	return max(f(retry), 0)
}

// orDefault resolves a duration field by the package's rule: zero or
// negative means def.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
