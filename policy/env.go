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

	envBreaker            = envPrefix + "BREAKER"
	envBreakerFailures    = envPrefix + "BREAKER_FAILURES"
	envBreakerOpenFor     = envPrefix + "BREAKER_OPEN_FOR"
	envConcurrency        = envPrefix + "CONCURRENCY"
	envConcurrencyMaxWait = envPrefix + "CONCURRENCY_MAX_WAIT"
)

// envNames returns the names of the variables of envPrefix that FromEnv
// reads.
func envNames() []string {
	return []string{envMode, envAttempts, envBreaker, envBreakerFailures, envBreakerOpenFor, envConcurrency, envConcurrencyMaxWait}
}

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
// and the circuit breaker and the concurrency limit, under this package's
// names alone (see Breaker and concurrency below):
//
//	RETRYTRANSPORT_BREAKER               on or off
//	RETRYTRANSPORT_BREAKER_FAILURES      an integer > 0: Failures
//	RETRYTRANSPORT_BREAKER_OPEN_FOR      a duration > 0, such as "1.5s": OpenFor
//	RETRYTRANSPORT_CONCURRENCY           adaptive, fixed:N (N an integer > 0), or off
//	RETRYTRANSPORT_CONCURRENCY_MAX_WAIT  a duration >= 0, such as "10ms": MaxWait
//
// The AWS names are kept without the prefix because the AWS SDKs define
// them: a transport that carries AWS requests then retries as the SDKs in
// the same process are told to. The RETRYTRANSPORT_ name wins: when it is
// set, the AWS name is not read at all, so the transport can be given a
// mode other than the one the SDKs read. Each setting falls back to its AWS
// name on its own. An empty variable, or one of only white space, counts as
// unset. Values are read without surrounding white space; modes, on and
// off in any case. FromEnv reads no other variable: RETRY_MODE and
// MAX_ATTEMPTS, which it read before they were given the prefix, belong to
// no one and are ignored.
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
// No mode touches RateLimit, the fixed rate an API publishes, Breaker or
// Concurrency.
//
// standard and adaptive also turn retries back on for a p that makes one
// attempt (MaxAttempts 1, as [None]), with DefaultMaxAttempts. The attempt
// count is applied after the mode, so it overrides the mode's: "off" with
// RETRYTRANSPORT_MAX_ATTEMPTS=5 makes five attempts, as legacy mode does
// in the AWS SDKs.
//
// # Breaker and concurrency
//
// RETRYTRANSPORT_BREAKER=on gives Breaker a new *breaker.Circuit with the
// default settings when p has none (nil, or a nil pointer); a Breaker p
// holds is kept. RETRYTRANSPORT_CONCURRENCY=adaptive does the same with a
// new *concurrency.Adaptive, except that it replaces a *concurrency.Fixed;
// fixed:N sets a new *concurrency.Fixed whose Max is N. off sets either
// field to nil.
//
// The other variables each set one field of the breaker or the limit
// that p holds after those two, which must be a value of package breaker
// or concurrency: a variable with none to set is an error. A new value
// with the settings of p's and the variable's then takes the place of
// p's, which is never changed. A new limit that RETRYTRANSPORT_CONCURRENCY
// puts in place of a *concurrency.Adaptive or *concurrency.Fixed keeps its
// MaxWait, MaxScopes and After. For example,
// RETRYTRANSPORT_BREAKER=on with RETRYTRANSPORT_BREAKER_OPEN_FOR=5s opens
// circuits for 5 s at first, and RETRYTRANSPORT_CONCURRENCY=fixed:8 with
// RETRYTRANSPORT_CONCURRENCY_MAX_WAIT=10ms lets 8 attempts of a scope be
// in flight, a ninth waiting up to 10 ms for a place.
//
// # Errors
//
// A bad value is a *[FieldError] naming the variable, its value and what
// is allowed, or the mode it was probably meant to be:
//
//	policy: AWS_MAX_ATTEMPTS = "0"; want an integer > 0
//	policy: RETRYTRANSPORT_RETRY_MODE = "adaptiv"; did you mean "adaptive"?
//	policy: RETRYTRANSPORT_CONCURRENCY = "fixed"; want fixed:N, with N an integer > 0, the most attempts of a scope in flight at once
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
	errs = append(errs, breakerFromEnv(&q, getenv)...)
	errs = append(errs, concurrencyFromEnv(&q, getenv)...)
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
