package policy

import (
	"errors"
	"strconv"
	"strings"
)

// FromEnv applies the retry settings of an environment onto p and returns
// the result. It never reads the environment itself: getenv does, and is
// normally os.Getenv. A nil getenv reads nothing and returns p.
//
// # Variables
//
// Two settings, each under a generic name and under the name the AWS SDKs
// use:
//
//	RETRY_MODE,   AWS_RETRY_MODE     standard, adaptive, legacy or off
//	MAX_ATTEMPTS, AWS_MAX_ATTEMPTS   an integer > 0, the first attempt
//	                                 included; 1 disables retries
//
// The generic name wins: when RETRY_MODE is set, AWS_RETRY_MODE is not
// read at all, so the transport can be given a mode other than the one the
// AWS SDKs in the same process read. Each setting falls back to its AWS
// name on its own. An empty variable, or one of only white space, counts
// as unset. Values are read without surrounding white space; modes in any
// case.
//
// # Modes
//
// The mode adjusts p rather than replacing it, so that what the
// environment cannot express (a classifier, time budgets, the quotas,
// endpoints, hedging) survives:
//
//	standard       Adaptive false and Limiter nil (Limiter implies adaptive)
//	adaptive       Adaptive true
//	legacy, off    MaxAttempts 1, and Adaptive false and Limiter nil
//
// standard and adaptive also turn retries back on for a p that makes one
// attempt (MaxAttempts 1, as [None]), with DefaultMaxAttempts. The attempt
// count is applied after the mode, so it overrides the mode's: "off" with
// MAX_ATTEMPTS=5 makes five attempts, as legacy mode does in the AWS SDKs.
//
// # Errors
//
// A bad value is a *[FieldError] naming the variable, its value and what
// is allowed:
//
//	policy: AWS_MAX_ATTEMPTS = "0"; want an integer > 0
//
// With an error, FromEnv returns p unchanged and every bad value it found,
// joined with errors.Join.
func FromEnv(p Policy, getenv func(string) string) (Policy, error) {
	if getenv == nil {
		return p, nil
	}
	q := p
	var errs []error
	if name, mode := lookupEnv(getenv, "RETRY_MODE", "AWS_RETRY_MODE"); mode != "" {
		switch strings.ToLower(mode) {
		case "standard":
			q.Adaptive, q.Limiter = false, nil
			q.MaxAttempts = retriesOn(q.MaxAttempts)
		case "adaptive":
			q.Adaptive = true
			q.MaxAttempts = retriesOn(q.MaxAttempts)
		case "legacy", "off":
			q.MaxAttempts, q.Adaptive, q.Limiter = 1, false, nil
		default:
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(mode), Want: "standard, adaptive, legacy or off"})
		}
	}
	if name, attempts := lookupEnv(getenv, "MAX_ATTEMPTS", "AWS_MAX_ATTEMPTS"); attempts != "" {
		n, err := strconv.Atoi(attempts)
		if err != nil || n <= 0 {
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(attempts), Want: "an integer > 0"})
		}
		q.MaxAttempts = n
	}
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	return q, nil
}

// retriesOn returns the attempt count of a retrying mode: attempts, or
// DefaultMaxAttempts instead of a single attempt.
func retriesOn(attempts int) int {
	if attempts == 1 {
		return DefaultMaxAttempts
	}
	return attempts
}

// lookupEnv returns the first of names whose variable is set to more than
// white space, and its value without surrounding white space.
func lookupEnv(getenv func(string) string, names ...string) (name, val string) {
	for _, name := range names {
		if val := strings.TrimSpace(getenv(name)); val != "" {
			return name, val
		}
	}
	return "", ""
}
