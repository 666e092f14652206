package backoff

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// FieldError reports a [Schedule] setting outside the values SNS accepts.
// [Schedule.Validate], [ParseCurve] and [Curve.UnmarshalText] return it,
// always as a pointer; find it with errors.As.
type FieldError struct {
	// Field names the Schedule field at fault, such as "MinDelay", or the
	// fields whose sum is, joined by "+".
	Field string

	// Value is the value found, as text: "500ms", "101", `"fast"`.
	Value string

	// Want describes the values allowed, such as "1s to MaxDelay (20s)".
	Want string
}

// Error returns "backoff: Schedule.<Field> is <Value>, want <Want>".
func (e *FieldError) Error() string {
	return "backoff: Schedule." + e.Field + " is " + e.Value + ", want " + e.Want
}

// Validate reports the fields of s that lie outside the ranges SNS
// accepts for an HTTP/S delivery policy (docs/sns.md), each as a
// *[FieldError], joined with errors.Join; it returns nil if there are
// none. Zero fields are checked as the defaults they stand for. The
// ranges are:
//
//	NumRetries           0 to 100 (0 means 3)
//	NumNoDelayRetries,
//	NumMinDelayRetries,
//	NumMaxDelayRetries   0 or more, together at most NumRetries
//	MinDelay             1s to MaxDelay (0 means 20s)
//	MaxDelay             MinDelay to 3600s (0 means 20s)
//	BackoffFunction      one of the four Curve constants
//	Jitter               0 to 1
//
// SNS counts delays in whole seconds; Validate accepts fractions. It does
// not check SNS's 3,600s limit on the total retry time of an HTTP/S
// policy: compare [Schedule.Total] with it where that limit applies. SNS's
// own AWS-managed policy, with 100,015 retries, is outside these ranges.
//
// Delay and Total never need Validate: they normalise any field as its
// doc says. Validate is for checking a configuration at startup.
func (s Schedule) Validate() error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Want: want})
	}

	n := s.NumRetries
	if n == 0 {
		n = snsDefaultRetries
	}
	if n < 0 || n > snsMaxRetries {
		bad("NumRetries", strconv.Itoa(s.NumRetries), "0 to 100")
	}
	counts := []struct {
		field string
		v     int
	}{
		{"NumNoDelayRetries", s.NumNoDelayRetries},
		{"NumMinDelayRetries", s.NumMinDelayRetries},
		{"NumMaxDelayRetries", s.NumMaxDelayRetries},
	}
	sum := 0
	for _, c := range counts {
		if c.v < 0 {
			bad(c.field, strconv.Itoa(c.v), "0 or more")
			continue
		}
		sum += min(c.v, math.MaxInt-sum) // saturating
	}
	if n >= 0 && sum > n {
		bad("NumNoDelayRetries+NumMinDelayRetries+NumMaxDelayRetries",
			strconv.Itoa(sum), "at most NumRetries ("+strconv.Itoa(n)+")")
	}

	lo, hi := s.MinDelay, s.MaxDelay
	if lo == 0 {
		lo = snsDefaultDelay
	}
	if hi == 0 {
		hi = snsDefaultDelay
	}
	if lo < snsMinDelay || lo > hi {
		bad("MinDelay", shown(s.MinDelay, lo), "1s to MaxDelay ("+hi.String()+")")
	}
	if hi < snsMinDelay || hi > snsMaxDelay {
		bad("MaxDelay", shown(s.MaxDelay, hi), "MinDelay to 3600s")
	}

	if !s.BackoffFunction.valid() {
		bad("BackoffFunction", s.BackoffFunction.String(), "one of the four Curve constants")
	}
	if !(s.Jitter >= 0 && s.Jitter <= 1) { // also catches NaN
		bad("Jitter", strconv.FormatFloat(s.Jitter, 'g', -1, 64), "0 to 1")
	}
	return errors.Join(errs...)
}

// shown formats the value of a duration field for a FieldError, naming
// the default that a zero stands for.
func shown(field, resolved time.Duration) string {
	if field == 0 {
		return "0s (meaning " + resolved.String() + ")"
	}
	return field.String()
}
