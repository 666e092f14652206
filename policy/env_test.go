package policy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// withAttempts returns p with MaxAttempts n.
func withAttempts(p policy.Policy, n int) policy.Policy {
	p.MaxAttempts = n
	return p
}

// env returns a getenv over vars; a missing variable reads as "".
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestFromEnv(t *testing.T) {
	limiter := &ratelimit.Adaptive{Beta: 0.5}
	fixed := &ratelimit.Fixed{Rate: 1}
	budget := policy.Policy{MaxAttempts: 5, MaxTotalTime: time.Minute}
	tests := []struct {
		name string
		p    policy.Policy
		vars map[string]string
		want policy.Policy
	}{
		{"Nothing", policy.Standard(), nil, policy.Standard()},
		{"EmptyValues", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "", "RETRYTRANSPORT_MAX_ATTEMPTS": " \t", "AWS_RETRY_MODE": "", "AWS_MAX_ATTEMPTS": ""}, policy.Standard()},
		{"Adaptive", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "adaptive"}, policy.Adaptive()},
		{"AdaptiveAnyCase", policy.Standard(), map[string]string{"AWS_RETRY_MODE": " Adaptive "}, policy.Adaptive()},
		{"StandardClearsAdaptive", policy.Policy{Limiter: limiter, MaxTotalTime: time.Minute}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "STANDARD"}, policy.Policy{MaxTotalTime: time.Minute}},
		{"StandardClearsAnyLimiter", policy.Policy{Limiter: fixed}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "standard"}, policy.Policy{}},
		{"StandardKeepsRateLimit", policy.Policy{RateLimit: fixed}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "standard"}, policy.Policy{RateLimit: fixed}},
		{"AdaptiveKeepsLimiter", policy.Policy{Limiter: limiter}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "adaptive"}, policy.Policy{Limiter: limiter}},
		{"AdaptiveKeepsOtherLimiter", policy.Policy{Limiter: fixed}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "adaptive"}, policy.Policy{Limiter: fixed}},
		{"Legacy", policy.Adaptive(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "legacy"}, policy.Policy{MaxAttempts: 1, Backoff: backoff.FullJitter{}}},
		{"OffClearsLimiter", policy.Policy{Limiter: limiter, RateLimit: fixed}, map[string]string{"AWS_RETRY_MODE": "OFF"}, policy.Policy{MaxAttempts: 1, RateLimit: fixed}},
		{"Off", budget, map[string]string{"AWS_RETRY_MODE": "off"}, policy.Policy{MaxAttempts: 1, MaxTotalTime: time.Minute}},
		{"StandardTurnsRetriesOn", policy.None(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "standard"}, policy.Policy{MaxAttempts: 3}},
		{"AdaptiveTurnsRetriesOn", policy.None(), map[string]string{"AWS_RETRY_MODE": "adaptive"}, policy.Policy{MaxAttempts: 3, Limiter: &ratelimit.Adaptive{}}},
		{"StandardKeepsAttempts", budget, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "standard"}, budget},
		{"Attempts", policy.Standard(), map[string]string{"RETRYTRANSPORT_MAX_ATTEMPTS": "10"}, withAttempts(policy.Standard(), 10)},
		{"AWSAttempts", budget, map[string]string{"AWS_MAX_ATTEMPTS": " 1 "}, policy.Policy{MaxAttempts: 1, MaxTotalTime: time.Minute}},
		{"AttemptsAfterMode", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "off", "RETRYTRANSPORT_MAX_ATTEMPTS": "5"}, withAttempts(policy.Standard(), 5)},
		{"GenericModeWins", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "standard", "AWS_RETRY_MODE": "adaptive"}, policy.Standard()},
		{"GenericAttemptsWin", policy.Standard(), map[string]string{"RETRYTRANSPORT_MAX_ATTEMPTS": "2", "AWS_MAX_ATTEMPTS": "7"}, withAttempts(policy.Standard(), 2)},
		{"ShadowedBadValueIgnored", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "adaptive", "AWS_RETRY_MODE": "bogus", "RETRYTRANSPORT_MAX_ATTEMPTS": "4", "AWS_MAX_ATTEMPTS": "x"}, withAttempts(policy.Adaptive(), 4)},
		{"EmptyGenericFallsBack", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": " ", "AWS_RETRY_MODE": "adaptive", "RETRYTRANSPORT_MAX_ATTEMPTS": "", "AWS_MAX_ATTEMPTS": "6"}, withAttempts(policy.Adaptive(), 6)},
		{"MixedNames", policy.Standard(), map[string]string{"RETRYTRANSPORT_RETRY_MODE": "adaptive", "AWS_MAX_ATTEMPTS": "8"}, withAttempts(policy.Adaptive(), 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.FromEnv(tt.p, env(tt.vars))
			if err != nil {
				t.Fatalf("FromEnv(%v) error = %v; want nil", tt.vars, err)
			}
			if diff := cmp.Diff(tt.want, got, policyOpts); diff != "" {
				t.Errorf("FromEnv(%v) mismatch (-want +got):\n%s", tt.vars, diff)
			}
			// A limiter p holds is kept as it is, the same pointer; one the
			// mode sets is new, so that no two calls share one.
			switch {
			case tt.want.Limiter == tt.p.Limiter && got.Limiter != tt.p.Limiter:
				t.Errorf("FromEnv(%v).Limiter = %p; want p's, %p", tt.vars, got.Limiter, tt.p.Limiter)
			case tt.want.Limiter != tt.p.Limiter && got.Limiter == tt.p.Limiter:
				t.Errorf("FromEnv(%v).Limiter = p's, %p; want another", tt.vars, got.Limiter)
			}
			if got.RateLimit != tt.want.RateLimit {
				t.Errorf("FromEnv(%v).RateLimit = %p; want %p", tt.vars, got.RateLimit, tt.want.RateLimit)
			}
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"Mode", map[string]string{"RETRYTRANSPORT_RETRY_MODE": "fast"}, `policy: RETRYTRANSPORT_RETRY_MODE = "fast"; want standard, adaptive, legacy or off`},
		{"AWSMode", map[string]string{"AWS_RETRY_MODE": "Standard2"}, `policy: AWS_RETRY_MODE = "Standard2"; did you mean "standard"?`},
		{"Zero", map[string]string{"AWS_MAX_ATTEMPTS": "0"}, `policy: AWS_MAX_ATTEMPTS = "0"; want an integer > 0`},
		{"Negative", map[string]string{"RETRYTRANSPORT_MAX_ATTEMPTS": "-3"}, `policy: RETRYTRANSPORT_MAX_ATTEMPTS = "-3"; want an integer > 0`},
		{"NotInteger", map[string]string{"RETRYTRANSPORT_MAX_ATTEMPTS": "3.5"}, `policy: RETRYTRANSPORT_MAX_ATTEMPTS = "3.5"; want an integer > 0`},
		{"TooBig", map[string]string{"RETRYTRANSPORT_MAX_ATTEMPTS": "99999999999999999999"}, `policy: RETRYTRANSPORT_MAX_ATTEMPTS = "99999999999999999999"; want an integer > 0`},
		{"Both", map[string]string{"RETRYTRANSPORT_RETRY_MODE": "x", "AWS_MAX_ATTEMPTS": "y"},
			"policy: RETRYTRANSPORT_RETRY_MODE = \"x\"; want standard, adaptive, legacy or off\npolicy: AWS_MAX_ATTEMPTS = \"y\"; want an integer > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Policy{MaxAttempts: 7, Limiter: &ratelimit.Adaptive{}}
			got, err := policy.FromEnv(p, env(tt.vars))
			if err == nil || err.Error() != tt.want {
				t.Errorf("FromEnv(%v) error = %v; want %s", tt.vars, err, tt.want)
			}
			var fe *policy.FieldError
			if !errors.As(err, &fe) {
				t.Errorf("FromEnv(%v) error is %T; want it to hold a *policy.FieldError", tt.vars, err)
			}
			if diff := cmp.Diff(p, got, policyOpts); diff != "" {
				t.Errorf("FromEnv(%v) with an error changed p (-want +got):\n%s", tt.vars, diff)
			}
		})
	}
}

func TestFromEnvNilGetenv(t *testing.T) {
	p := policy.Policy{MaxAttempts: 2}
	if got, err := policy.FromEnv(p, nil); err != nil || got.MaxAttempts != 2 {
		t.Errorf("FromEnv(p, nil) = MaxAttempts %d, %v; want 2, nil", got.MaxAttempts, err)
	}
}

// FromEnv reads only the nine variables it documents.
func TestFromEnvReadsOnlyItsVariables(t *testing.T) {
	var read []string
	_, _ = policy.FromEnv(policy.Policy{}, func(name string) string {
		read = append(read, name)
		return ""
	})
	want := []string{"RETRYTRANSPORT_RETRY_MODE", "AWS_RETRY_MODE", "RETRYTRANSPORT_MAX_ATTEMPTS", "AWS_MAX_ATTEMPTS",
		"RETRYTRANSPORT_BREAKER", "RETRYTRANSPORT_BREAKER_FAILURES", "RETRYTRANSPORT_BREAKER_OPEN_FOR",
		"RETRYTRANSPORT_CONCURRENCY", "RETRYTRANSPORT_CONCURRENCY_MAX_WAIT"}
	if diff := cmp.Diff(want, read); diff != "" {
		t.Errorf("FromEnv read variables mismatch (-want +got):\n%s", diff)
	}
}

// The names RETRY_MODE and MAX_ATTEMPTS, which FromEnv read before its
// variables took the RETRYTRANSPORT_ prefix, are not read.
func TestFromEnvIgnoresUnprefixedNames(t *testing.T) {
	vars := map[string]string{"RETRY_MODE": "off", "MAX_ATTEMPTS": "9"}
	got, err := policy.FromEnv(policy.Standard(), env(vars))
	if err != nil || got.MaxAttempts != 3 {
		t.Errorf("FromEnv(%v) = MaxAttempts %d, %v; want 3 (unchanged), nil", vars, got.MaxAttempts, err)
	}
}

func TestFromEnvSuggestsTheMode(t *testing.T) {
	for mode, want := range map[string]string{
		"adaptiv":  `policy: RETRYTRANSPORT_RETRY_MODE = "adaptiv"; did you mean "adaptive"?`,
		"Standrad": `policy: RETRYTRANSPORT_RETRY_MODE = "Standrad"; did you mean "standard"?`,
		"fast":     `policy: RETRYTRANSPORT_RETRY_MODE = "fast"; want standard, adaptive, legacy or off`,
	} {
		_, err := policy.FromEnv(policy.Standard(), env(map[string]string{"RETRYTRANSPORT_RETRY_MODE": mode}))
		if err == nil || err.Error() != want {
			t.Errorf("FromEnv(RETRYTRANSPORT_RETRY_MODE=%q) error = %v; want %s", mode, err, want)
		}
	}
}

func TestFromEnviron(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    policy.Policy
	}{
		{"Nothing", nil, policy.Standard()},
		{"Others", []string{"PATH=/bin", "HOME=/root", "AWS_REGION=eu-west-1", "=C:=C:\\", "NOEQUALS"}, policy.Standard()},
		{"Prefixed", []string{"RETRYTRANSPORT_RETRY_MODE=adaptive", "RETRYTRANSPORT_MAX_ATTEMPTS=5"}, withAttempts(policy.Adaptive(), 5)},
		{"AWS", []string{"AWS_RETRY_MODE=adaptive", "AWS_MAX_ATTEMPTS=4"}, withAttempts(policy.Adaptive(), 4)},
		{"PrefixedWins", []string{"AWS_MAX_ATTEMPTS=4", "RETRYTRANSPORT_MAX_ATTEMPTS=2"}, withAttempts(policy.Standard(), 2)},
		{"FirstEntryCounts", []string{"RETRYTRANSPORT_MAX_ATTEMPTS=2", "RETRYTRANSPORT_MAX_ATTEMPTS=7"}, withAttempts(policy.Standard(), 2)},
		{"ValueWithEquals", []string{"RETRYTRANSPORT_MAX_ATTEMPTS=6", "OTHER=a=b"}, withAttempts(policy.Standard(), 6)},
		{"Unprefixed", []string{"RETRY_MODE=off", "MAX_ATTEMPTS=9"}, policy.Standard()},
		{"BreakerAndConcurrency", []string{"RETRYTRANSPORT_BREAKER=on", "RETRYTRANSPORT_BREAKER_FAILURES=3", "RETRYTRANSPORT_BREAKER_OPEN_FOR=2s",
			"RETRYTRANSPORT_CONCURRENCY=fixed:8", "RETRYTRANSPORT_CONCURRENCY_MAX_WAIT=10ms"},
			policy.Policy{MaxAttempts: 3, Backoff: backoff.FullJitter{}, Breaker: &breaker.Circuit{Failures: 3, OpenFor: 2 * time.Second},
				Concurrency: &concurrency.Fixed{Max: 8, MaxWait: 10 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.FromEnviron(policy.Standard(), tt.environ)
			if err != nil {
				t.Fatalf("FromEnviron(%q) error = %v; want nil", tt.environ, err)
			}
			if diff := cmp.Diff(tt.want, got, policyOpts); diff != "" {
				t.Errorf("FromEnviron(%q) mismatch (-want +got):\n%s", tt.environ, diff)
			}
		})
	}
}

func TestFromEnvironErrors(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    string
	}{
		{"Misspelt", []string{"RETRYTRANSPORT_MAX_ATTEMPT=5"}, `policy: RETRYTRANSPORT_MAX_ATTEMPT: unknown variable; did you mean "RETRYTRANSPORT_MAX_ATTEMPTS"?`},
		{"MisspeltBreaker", []string{"RETRYTRANSPORT_BREAKER_OPENFOR=5s"}, `policy: RETRYTRANSPORT_BREAKER_OPENFOR: unknown variable; did you mean "RETRYTRANSPORT_BREAKER_OPEN_FOR"?`},
		{"MisspeltConcurrency", []string{"RETRYTRANSPORT_CONCURENCY=adaptive"}, `policy: RETRYTRANSPORT_CONCURENCY: unknown variable; did you mean "RETRYTRANSPORT_CONCURRENCY"?`},
		{"WrongCase", []string{"retrytransport_retry_mode=off"}, `policy: retrytransport_retry_mode: unknown variable; did you mean "RETRYTRANSPORT_RETRY_MODE"?`},
		{"Short", []string{"RETRYTRANSPORT_MODE=off"}, `policy: RETRYTRANSPORT_MODE: unknown variable; want one of RETRYTRANSPORT_RETRY_MODE, RETRYTRANSPORT_MAX_ATTEMPTS, RETRYTRANSPORT_BREAKER, RETRYTRANSPORT_BREAKER_FAILURES, RETRYTRANSPORT_BREAKER_OPEN_FOR, RETRYTRANSPORT_CONCURRENCY, RETRYTRANSPORT_CONCURRENCY_MAX_WAIT`},
		{"NothingClose", []string{"RETRYTRANSPORT_TIMEOUT=5s"}, `policy: RETRYTRANSPORT_TIMEOUT: unknown variable; want one of RETRYTRANSPORT_RETRY_MODE, RETRYTRANSPORT_MAX_ATTEMPTS, RETRYTRANSPORT_BREAKER, RETRYTRANSPORT_BREAKER_FAILURES, RETRYTRANSPORT_BREAKER_OPEN_FOR, RETRYTRANSPORT_CONCURRENCY, RETRYTRANSPORT_CONCURRENCY_MAX_WAIT`},
		{"EmptyUnknown", []string{"RETRYTRANSPORT_DEBUG="}, `policy: RETRYTRANSPORT_DEBUG: unknown variable; want one of RETRYTRANSPORT_RETRY_MODE, RETRYTRANSPORT_MAX_ATTEMPTS, RETRYTRANSPORT_BREAKER, RETRYTRANSPORT_BREAKER_FAILURES, RETRYTRANSPORT_BREAKER_OPEN_FOR, RETRYTRANSPORT_CONCURRENCY, RETRYTRANSPORT_CONCURRENCY_MAX_WAIT`},
		{"UnknownAndBadValue", []string{"RETRYTRANSPORT_MAX_ATTEMPTS=0", "RETRYTRANSPORT_MAXATTEMPTS=5"},
			"policy: RETRYTRANSPORT_MAXATTEMPTS: unknown variable; did you mean \"RETRYTRANSPORT_MAX_ATTEMPTS\"?\npolicy: RETRYTRANSPORT_MAX_ATTEMPTS = \"0\"; want an integer > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Policy{MaxAttempts: 7, Limiter: &ratelimit.Adaptive{}}
			got, err := policy.FromEnviron(p, tt.environ)
			if err == nil || err.Error() != tt.want {
				t.Errorf("FromEnviron(%q) error = %v; want %s", tt.environ, err, tt.want)
			}
			for _, e := range unwrapAll(err) {
				var fe *policy.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("FromEnviron(%q) error %q is a %T; want a *policy.FieldError", tt.environ, e, e)
				}
			}
			if diff := cmp.Diff(p, got, policyOpts); diff != "" {
				t.Errorf("FromEnviron(%q) with an error changed p (-want +got):\n%s", tt.environ, diff)
			}
		})
	}
}

// The adaptive mode's limiter is new on every call, so that two policies
// read from the same environment pace their transports apart.
func TestFromEnvAdaptiveMakesANewLimiter(t *testing.T) {
	vars := env(map[string]string{"AWS_RETRY_MODE": "adaptive"})
	a, errA := policy.FromEnv(policy.Standard(), vars)
	b, errB := policy.FromEnv(policy.Standard(), vars)
	if errA != nil || errB != nil {
		t.Fatalf("FromEnv(adaptive) errors = %v, %v; want nil", errA, errB)
	}
	la, okA := a.Limiter.(*ratelimit.Adaptive)
	lb, okB := b.Limiter.(*ratelimit.Adaptive)
	if !okA || !okB || la == nil || la == lb {
		t.Errorf("FromEnv(adaptive).Limiter = %p, %p; want two different *ratelimit.Adaptive", a.Limiter, b.Limiter)
	}
}

// The adaptive mode gives a policy whose Limiter is a nil pointer, which
// means none, a new limiter, as it does a policy without one.
func TestFromEnvAdaptiveReplacesNilLimiterPointer(t *testing.T) {
	vars := env(map[string]string{"AWS_RETRY_MODE": "adaptive"})
	for _, nilLimiter := range []ratelimit.Limiter{(*ratelimit.Adaptive)(nil), (*ratelimit.Fixed)(nil)} {
		p := policy.Standard()
		p.Limiter = nilLimiter
		got, err := policy.FromEnv(p, vars)
		if err != nil {
			t.Fatalf("FromEnv(Limiter %T(nil), adaptive) error = %v; want nil", nilLimiter, err)
		}
		if a, ok := got.Limiter.(*ratelimit.Adaptive); !ok || a == nil {
			t.Errorf("FromEnv(Limiter %T(nil), adaptive).Limiter = %#v; want a new *ratelimit.Adaptive", nilLimiter, got.Limiter)
		}
	}
}
