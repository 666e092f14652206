package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
)

// This file reads the variables of the circuit breaker and the concurrency
// limit for FromEnv (see its section Breaker and concurrency). A variable
// that changes a setting puts a new *breaker.Circuit, *concurrency.Adaptive
// or *concurrency.Fixed in the policy, with the settings of the one the
// policy held and the variable's, so that the caller's, which may be in
// use, is never changed.

// Descriptions of the values of the breaker and concurrency variables.
const (
	wantOnOff           = "on or off"
	wantEnvCount        = "an integer > 0"
	wantEnvOpenFor      = `a duration > 0, such as "1.5s"`
	wantEnvMaxWait      = `a duration >= 0, such as "10ms" (0: no wait)`
	wantEnvConcurrency  = "adaptive, fixed:N with N an integer > 0, or off"
	wantEnvFixed        = "fixed:N, with N an integer > 0, the most attempts of a scope in flight at once"
	wantEnvBreakerToSet = "a circuit breaker to set it on: " + envBreaker + "=on, or a policy with a Breaker"
	wantEnvLimitToSet   = "a concurrency limit to set it on: " + envConcurrency + "=adaptive or fixed:N, or a policy with a Concurrency"
)

// concurrencyModes are the words of a concurrency variable, for
// suggestions.
func concurrencyModes() []string { return []string{"adaptive", "fixed", "off"} }

// envSetting is a valid value of the variable name, val, and how it sets a
// T.
type envSetting[T any] struct {
	name, val string
	apply     func(T)
}

// breakerFromEnv applies envBreaker, then the breaker's settings, onto q,
// and returns the errors of their values.
func breakerFromEnv(q *Policy, getenv func(string) string) []error {
	var errs []error
	if name, val := lookupEnv(getenv, envBreaker); val != "" {
		switch strings.ToLower(val) {
		case "on":
			if orNil(q.Breaker) == nil {
				q.Breaker = &breaker.Circuit{}
			}
		case "off":
			q.Breaker = nil
		default:
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantOnOff})
		}
	}
	var sets []envSetting[*breaker.Circuit]
	if name, val := lookupEnv(getenv, envBreakerFailures); val != "" {
		if n, err := strconv.Atoi(val); err != nil || n <= 0 {
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvCount})
		} else {
			sets = append(sets, envSetting[*breaker.Circuit]{name, val, func(c *breaker.Circuit) { c.Failures = n }})
		}
	}
	if name, val := lookupEnv(getenv, envBreakerOpenFor); val != "" {
		if d, err := time.ParseDuration(val); err != nil || d <= 0 {
			errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvOpenFor})
		} else {
			sets = append(sets, envSetting[*breaker.Circuit]{name, val, func(c *breaker.Circuit) { c.OpenFor = d }})
		}
	}
	if len(sets) == 0 {
		return errs
	}
	c, ok := orNil(q.Breaker).(*breaker.Circuit)
	if !ok {
		want := wantEnvBreakerToSet
		if orNil(q.Breaker) != nil {
			want = fmt.Sprintf("a policy whose Breaker is a *breaker.Circuit, not a %T", q.Breaker)
		}
		for _, s := range sets {
			errs = append(errs, &FieldError{Field: s.name, Value: strconv.Quote(s.val), Want: want})
		}
		return errs
	}
	c = copyCircuit(c)
	for _, s := range sets {
		s.apply(c)
	}
	q.Breaker = c
	return errs
}

// concurrencyFromEnv applies envConcurrency, then envConcurrencyMaxWait,
// onto q, and returns the errors of their values.
func concurrencyFromEnv(q *Policy, getenv func(string) string) []error {
	var errs []error
	if name, val := lookupEnv(getenv, envConcurrency); val != "" {
		if l, err := concurrencyMode(orNil(q.Concurrency), name, val); err != nil {
			errs = append(errs, err)
		} else {
			q.Concurrency = l
		}
	}
	name, val := lookupEnv(getenv, envConcurrencyMaxWait)
	if val == "" {
		return errs
	}
	d, err := time.ParseDuration(val)
	if err != nil || d < 0 {
		return append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvMaxWait})
	}
	switch c := orNil(q.Concurrency).(type) {
	case *concurrency.Adaptive:
		c = copyAdaptive(c)
		c.MaxWait = d
		q.Concurrency = c
	case *concurrency.Fixed:
		c = copyFixed(c)
		c.MaxWait = d
		q.Concurrency = c
	case nil:
		errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvLimitToSet})
	default:
		errs = append(errs, &FieldError{Field: name, Value: strconv.Quote(val), Want: fmt.Sprintf("a policy whose Concurrency is a *concurrency.Adaptive or *concurrency.Fixed, not a %T", c)})
	}
	return errs
}

// concurrencyMode returns the Concurrency that val, the value of the
// variable name, makes of l, a policy's Concurrency that is not a nil
// pointer: nil for off; l itself for adaptive, unless l is nil or a
// *concurrency.Fixed, which a new *concurrency.Adaptive replaces; a new
// *concurrency.Fixed for fixed:N. A new limit keeps l's MaxWait,
// MaxScopes and After when l is one of the module's.
func concurrencyMode(l concurrency.Limiter, name, val string) (concurrency.Limiter, error) {
	kind, arg, hasArg := strings.Cut(val, ":")
	kind, arg = strings.ToLower(strings.TrimSpace(kind)), strings.TrimSpace(arg)
	var wait time.Duration
	var scopes int
	var after func(time.Duration) <-chan time.Time
	switch c := l.(type) {
	case *concurrency.Adaptive:
		wait, scopes, after = c.MaxWait, c.MaxScopes, c.After
	case *concurrency.Fixed:
		wait, scopes, after = c.MaxWait, c.MaxScopes, c.After
	}
	switch {
	case kind == "off" && !hasArg:
		return nil, nil
	case kind == "adaptive" && !hasArg:
		if _, fixed := l.(*concurrency.Fixed); l != nil && !fixed {
			return l, nil
		}
		return &concurrency.Adaptive{MaxWait: wait, MaxScopes: scopes, After: after}, nil
	case kind == "fixed":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n <= 0 {
			return nil, &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvFixed}
		}
		return &concurrency.Fixed{Max: n, MaxWait: wait, MaxScopes: scopes, After: after}, nil
	}
	fe := &FieldError{Field: name, Value: strconv.Quote(val), Want: wantEnvConcurrency}
	switch s := closest(kind, concurrencyModes()); {
	case s == "fixed" && hasArg:
		fe.Suggestion = s + ":" + arg
	case s != "" && s != "fixed":
		fe.Suggestion = s
	}
	return nil, fe
}

// copyCircuit, copyAdaptive and copyFixed return a new value with the
// settings of c, without its state.
func copyCircuit(c *breaker.Circuit) *breaker.Circuit {
	return &breaker.Circuit{
		Failures: c.Failures, Stalls: c.Stalls, StallFor: c.StallFor, Trips: c.Trips,
		OpenFor: c.OpenFor, MaxOpenFor: c.MaxOpenFor, Probes: c.Probes, ProbeLease: c.ProbeLease,
		MaxScopes: c.MaxScopes, Now: c.Now, Rand: c.Rand, OnChange: c.OnChange,
	}
}

func copyAdaptive(c *concurrency.Adaptive) *concurrency.Adaptive {
	return &concurrency.Adaptive{
		Initial: c.Initial, Min: c.Min, Max: c.Max, Tolerance: c.Tolerance, Backoff: c.Backoff,
		MaxWait: c.MaxWait, MaxScopes: c.MaxScopes, After: c.After,
	}
}

func copyFixed(c *concurrency.Fixed) *concurrency.Fixed {
	return &concurrency.Fixed{Max: c.Max, MaxWait: c.MaxWait, MaxScopes: c.MaxScopes, After: c.After}
}
