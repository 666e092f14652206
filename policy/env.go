package policy

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/retrytransport/retrytransport/ratelimit"
)

// The environment variables FromEnv reads. This package's own carry
// envPrefix, which FromEnviron reserves; the AWS names are those the AWS
// SDKs define.
const (
	envPrefix      = "RETRYTRANSPORT_"
	envMode        = envPrefix + "RETRY_MODE"
	envAttempts    = envPrefix + "MAX_ATTEMPTS"
	envAWSMode     = "AWS_RETRY_MODE"
	envAWSAttempts = "AWS_MAX_ATTEMPTS"
)

// envNames returns the names of the variables of envPrefix that FromEnv
// reads.
func envNames() []string { return []string{envMode, envAttempts} }

// retryModes are the values of a retry mode variable.
func retryModes() []string { return []string{"standard", "adaptive", "legacy", "off"} }

// FromEnv applies the retry settings of an environment onto p and returns
// the result. It never reads the environment itself: getenv does, and is
// normally os.Getenv. A nil getenv reads nothing and returns p.
//
// # Variables
//
// Two settings, each under this package's name and under the name the AWS
// SDKs read:
//
//	RETRYTRANSPORT_RETRY_MODE,   AWS_RETRY_MODE     standard, adaptive, legacy or off
//	RETRYTRANSPORT_MAX_ATTEMPTS, AWS_MAX_ATTEMPTS   an integer > 0, the first attempt
//	                                                included; 1 disables retries
//
// The AWS names are kept without the prefix because the AWS SDKs define
// them: a transport that carries AWS requests then retries as the SDKs in
// the same process are told to. The RETRYTRANSPORT_ name wins: when it is
// set, the AWS name is not read at all, so the transport can be given a
// mode other than the one the SDKs read. Each setting falls back to its AWS
// name on its own. An empty variable, or one of only white space, counts as
// unset. Values are read without surrounding white space; modes in any
// case. FromEnv reads no other variable: RETRY_MODE and MAX_ATTEMPTS, which
// it read before they were given the prefix, belong to no one and are
// ignored.
//
// FromEnv sees only the variables it asks getenv for, so it cannot tell a
// misspelt one (RETRYTRANSPORT_MAX_ATTEMPT) from an absent one; use
// [FromEnviron] with os.Environ() for that.
//
// # Modes
//
// The mode adjusts p rather than replacing it, so that what the
// environment cannot express (a classifier, time limits, the quotas,
// failover, hedging) survives:
//
//	standard       Limiter nil: standard mode has no client-side pacing,
//	               so it clears any limiter p holds, a *ratelimit.Adaptive
//	               or another
//	adaptive       Limiter a new *ratelimit.Adaptive with the default
//	               parameters when p has none (nil, or a nil pointer such
//	               as a nil *ratelimit.Adaptive); a Limiter p holds is kept
//	legacy, off    MaxAttempts 1, and Limiter nil
//
// No mode touches RateLimit, the fixed rate an API publishes.
//
// standard and adaptive also turn retries back on for a p that makes one
// attempt (MaxAttempts 1, as [None]), with DefaultMaxAttempts. The attempt
// count is applied after the mode, so it overrides the mode's: "off" with
// RETRYTRANSPORT_MAX_ATTEMPTS=5 makes five attempts, as legacy mode does
// in the AWS SDKs.
//
// # Errors
//
// A bad value is a *[FieldError] naming the variable, its value and what
// is allowed, or the mode it was probably meant to be:
//
//	policy: AWS_MAX_ATTEMPTS = "0"; want an integer > 0
//	policy: RETRYTRANSPORT_RETRY_MODE = "adaptiv"; did you mean "adaptive"?
//
// With an error, FromEnv returns p unchanged and every bad value it found,
// joined with errors.Join.
func FromEnv(p Policy, getenv func(string) string) (Policy, error) {
	if getenv == nil {
		return p, nil
	}
	q := p
	var errs []error
	if name, mode := lookupEnv(getenv, envMode, envAWSMode); mode != "" {
		switch strings.ToLower(mode) {
		case "standard":
			q.Limiter = nil
			q.MaxAttempts = retriesOn(q.MaxAttempts)
		case "adaptive":
			if orNil(q.Limiter) == nil {
				q.Limiter = &ratelimit.Adaptive{}
			}
			q.MaxAttempts = retriesOn(q.MaxAttempts)
		case "legacy", "off":
			q.MaxAttempts, q.Limiter = 1, nil
		default:
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(mode), Want: "standard, adaptive, legacy or off", Suggestion: closest(mode, retryModes())})
		}
	}
	if name, attempts := lookupEnv(getenv, envAttempts, envAWSAttempts); attempts != "" {
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

// FromEnviron is [FromEnv] for an environment given whole, as os.Environ
// returns it: a list of "NAME=value" entries, in which the first entry of
// a name counts, as os.Getenv reads it. Seeing every name, it also reports
// each variable whose name starts with RETRYTRANSPORT_, in any case, but
// is none that FromEnv reads: a *[FieldError] for the variable, with the
// name it was probably meant to be, or else the list of names:
//
//	policy: RETRYTRANSPORT_MAX_ATTEMPT: unknown variable; did you mean "RETRYTRANSPORT_MAX_ATTEMPTS"?
//
// Other variables are ignored, those that start with AWS_ included: the
// AWS SDKs read many. With an error, FromEnviron returns p unchanged and
// every error it found, the unknown variables first, in environ's order.
func FromEnviron(p Policy, environ []string) (Policy, error) {
	vars := make(map[string]string)
	var errs []error
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if _, seen := vars[name]; seen {
			continue
		}
		vars[name] = val
		if strings.HasPrefix(strings.ToUpper(name), envPrefix) && !slices.Contains(envNames(), name) {
			errs = append(errs, unknownName(name, name, "variable", envNames()))
		}
	}
	q, err := FromEnv(p, func(name string) string { return vars[name] })
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = append(errs, j.Unwrap()...)
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
