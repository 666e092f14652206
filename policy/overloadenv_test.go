package policy_test

// The environment variables of the circuit breaker and the concurrency
// limit.

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
)

func TestFromEnvBreaker(t *testing.T) {
	circuit := &breaker.Circuit{Failures: 3, Probes: 2}
	tests := []struct {
		name string
		p    policy.Policy
		vars map[string]string
		want breaker.Breaker
	}{
		{"On", policy.Standard(), map[string]string{"RETRYTRANSPORT_BREAKER": "on"}, &breaker.Circuit{}},
		{"OnAnyCase", policy.Standard(), map[string]string{"RETRYTRANSPORT_BREAKER": " ON "}, &breaker.Circuit{}},
		{"OnKeepsCircuit", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_BREAKER": "on"}, circuit},
		{"OnKeepsOtherBreaker", policy.Policy{Breaker: otherBreaker{}}, map[string]string{"RETRYTRANSPORT_BREAKER": "on"}, otherBreaker{}},
		{"OnReplacesNilPointer", policy.Policy{Breaker: (*breaker.Circuit)(nil)}, map[string]string{"RETRYTRANSPORT_BREAKER": "on"}, &breaker.Circuit{}},
		{"Off", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_BREAKER": "Off"}, nil},
		{"Failures", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_BREAKER_FAILURES": "10"}, &breaker.Circuit{Failures: 10, Probes: 2}},
		{"OpenFor", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_BREAKER_OPEN_FOR": " 5s "}, &breaker.Circuit{Failures: 3, Probes: 2, OpenFor: 5 * time.Second}},
		{"OnWithSettings", policy.Standard(), map[string]string{"RETRYTRANSPORT_BREAKER": "on", "RETRYTRANSPORT_BREAKER_FAILURES": "2", "RETRYTRANSPORT_BREAKER_OPEN_FOR": "250ms"},
			&breaker.Circuit{Failures: 2, OpenFor: 250 * time.Millisecond}},
		{"EmptyValues", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_BREAKER": " ", "RETRYTRANSPORT_BREAKER_FAILURES": "", "RETRYTRANSPORT_BREAKER_OPEN_FOR": "\t"}, circuit},
		{"ModeLeavesBreaker", policy.Policy{Breaker: circuit}, map[string]string{"RETRYTRANSPORT_RETRY_MODE": "off"}, circuit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.FromEnv(tt.p, env(tt.vars))
			if err != nil {
				t.Fatalf("FromEnv(%v) error = %v; want nil", tt.vars, err)
			}
			if diff := cmp.Diff(tt.want, got.Breaker, policyOpts); diff != "" {
				t.Errorf("FromEnv(%v).Breaker mismatch (-want +got):\n%s", tt.vars, diff)
			}
			// p's breaker is kept as it is, the same value, unless a setting
			// changes it: then a new one takes its place, and p's is not
			// changed.
			if keep := tt.want == tt.p.Breaker; keep != (got.Breaker == tt.p.Breaker) {
				t.Errorf("FromEnv(%v).Breaker = %p; want p's, %p, exactly when nothing changes it", tt.vars, got.Breaker, tt.p.Breaker)
			}
			if circuit.Failures != 3 || circuit.OpenFor != 0 {
				t.Errorf("FromEnv(%v) changed p's Circuit: %+v", tt.vars, circuit)
			}
		})
	}
}

func TestFromEnvConcurrency(t *testing.T) {
	adaptive := &concurrency.Adaptive{Max: 50, MaxWait: time.Millisecond}
	fixed := &concurrency.Fixed{Max: 4, MaxWait: 2 * time.Millisecond, MaxScopes: 9}
	tests := []struct {
		name string
		p    policy.Policy
		vars map[string]string
		want concurrency.Limiter
	}{
		{"Adaptive", policy.Standard(), map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive"}, &concurrency.Adaptive{}},
		{"AdaptiveAnyCase", policy.Standard(), map[string]string{"RETRYTRANSPORT_CONCURRENCY": " Adaptive"}, &concurrency.Adaptive{}},
		{"AdaptiveKeepsAdaptive", policy.Policy{Concurrency: adaptive}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive"}, adaptive},
		{"AdaptiveKeepsOther", policy.Policy{Concurrency: otherConcurrency{}}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive"}, otherConcurrency{}},
		{"AdaptiveReplacesFixed", policy.Policy{Concurrency: fixed}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive"}, &concurrency.Adaptive{MaxWait: 2 * time.Millisecond, MaxScopes: 9}},
		{"AdaptiveReplacesNilPointer", policy.Policy{Concurrency: (*concurrency.Fixed)(nil)}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive"}, &concurrency.Adaptive{}},
		{"Fixed", policy.Standard(), map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:8"}, &concurrency.Fixed{Max: 8}},
		{"FixedSpaces", policy.Standard(), map[string]string{"RETRYTRANSPORT_CONCURRENCY": " FIXED : 8 "}, &concurrency.Fixed{Max: 8}},
		{"FixedReplacesFixed", policy.Policy{Concurrency: fixed}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:16"}, &concurrency.Fixed{Max: 16, MaxWait: 2 * time.Millisecond, MaxScopes: 9}},
		{"FixedReplacesAdaptive", policy.Policy{Concurrency: adaptive}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:2"}, &concurrency.Fixed{Max: 2, MaxWait: time.Millisecond}},
		{"Off", policy.Policy{Concurrency: adaptive}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "OFF"}, nil},
		{"MaxWaitAdaptive", policy.Policy{Concurrency: adaptive}, map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "20ms"}, &concurrency.Adaptive{Max: 50, MaxWait: 20 * time.Millisecond}},
		{"MaxWaitZero", policy.Policy{Concurrency: fixed}, map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "0"}, &concurrency.Fixed{Max: 4, MaxScopes: 9}},
		{"FixedWithMaxWait", policy.Standard(), map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:8", "RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "10ms"}, &concurrency.Fixed{Max: 8, MaxWait: 10 * time.Millisecond}},
		{"EmptyValues", policy.Policy{Concurrency: fixed}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "", "RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": " "}, fixed},
		{"ModeLeavesConcurrency", policy.Policy{Concurrency: fixed}, map[string]string{"AWS_RETRY_MODE": "adaptive"}, fixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.FromEnv(tt.p, env(tt.vars))
			if err != nil {
				t.Fatalf("FromEnv(%v) error = %v; want nil", tt.vars, err)
			}
			if diff := cmp.Diff(tt.want, got.Concurrency, policyOpts); diff != "" {
				t.Errorf("FromEnv(%v).Concurrency mismatch (-want +got):\n%s", tt.vars, diff)
			}
			if keep := tt.want == tt.p.Concurrency; keep != (got.Concurrency == tt.p.Concurrency) {
				t.Errorf("FromEnv(%v).Concurrency = %p; want p's, %p, exactly when nothing changes it", tt.vars, got.Concurrency, tt.p.Concurrency)
			}
			if adaptive.MaxWait != time.Millisecond || fixed.Max != 4 || fixed.MaxWait != 2*time.Millisecond {
				t.Errorf("FromEnv(%v) changed p's limit: %+v, %+v", tt.vars, adaptive, fixed)
			}
		})
	}
}

func TestFromEnvBreakerAndConcurrencyErrors(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Policy
		vars map[string]string
		want string
	}{
		{"BreakerWord", policy.Policy{}, map[string]string{"RETRYTRANSPORT_BREAKER": "true"}, `policy: RETRYTRANSPORT_BREAKER = "true"; want on or off`},
		{"FailuresZero", policy.Policy{Breaker: &breaker.Circuit{}}, map[string]string{"RETRYTRANSPORT_BREAKER_FAILURES": "0"}, `policy: RETRYTRANSPORT_BREAKER_FAILURES = "0"; want an integer > 0`},
		{"FailuresNotInteger", policy.Policy{Breaker: &breaker.Circuit{}}, map[string]string{"RETRYTRANSPORT_BREAKER_FAILURES": "5x"}, `policy: RETRYTRANSPORT_BREAKER_FAILURES = "5x"; want an integer > 0`},
		{"OpenForWithoutUnit", policy.Policy{Breaker: &breaker.Circuit{}}, map[string]string{"RETRYTRANSPORT_BREAKER_OPEN_FOR": "5"}, `policy: RETRYTRANSPORT_BREAKER_OPEN_FOR = "5"; want a duration > 0, such as "1.5s"`},
		{"OpenForZero", policy.Policy{Breaker: &breaker.Circuit{}}, map[string]string{"RETRYTRANSPORT_BREAKER_OPEN_FOR": "0s"}, `policy: RETRYTRANSPORT_BREAKER_OPEN_FOR = "0s"; want a duration > 0, such as "1.5s"`},
		{"FailuresWithoutBreaker", policy.Policy{}, map[string]string{"RETRYTRANSPORT_BREAKER_FAILURES": "3"},
			`policy: RETRYTRANSPORT_BREAKER_FAILURES = "3"; want a circuit breaker to set it on: RETRYTRANSPORT_BREAKER=on, or a policy with a Breaker`},
		{"OpenForWithBreakerOff", policy.Policy{Breaker: &breaker.Circuit{}}, map[string]string{"RETRYTRANSPORT_BREAKER": "off", "RETRYTRANSPORT_BREAKER_OPEN_FOR": "1s"},
			`policy: RETRYTRANSPORT_BREAKER_OPEN_FOR = "1s"; want a circuit breaker to set it on: RETRYTRANSPORT_BREAKER=on, or a policy with a Breaker`},
		{"FailuresOnOtherBreaker", policy.Policy{Breaker: otherBreaker{}}, map[string]string{"RETRYTRANSPORT_BREAKER_FAILURES": "3"},
			`policy: RETRYTRANSPORT_BREAKER_FAILURES = "3"; want a policy whose Breaker is a *breaker.Circuit, not a policy_test.otherBreaker`},
		{"ConcurrencyWord", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "on"}, `policy: RETRYTRANSPORT_CONCURRENCY = "on"; want adaptive, fixed:N with N an integer > 0, or off`},
		{"ConcurrencyMisspelt", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptiv"}, `policy: RETRYTRANSPORT_CONCURRENCY = "adaptiv"; did you mean "adaptive"?`},
		{"ConcurrencyMisspeltFixed", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixd:8"}, `policy: RETRYTRANSPORT_CONCURRENCY = "fixd:8"; did you mean "fixed:8"?`},
		{"ConcurrencyAdaptiveWithNumber", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "adaptive:8"}, `policy: RETRYTRANSPORT_CONCURRENCY = "adaptive:8"; did you mean "adaptive"?`},
		{"FixedWithoutNumber", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed"},
			`policy: RETRYTRANSPORT_CONCURRENCY = "fixed"; want fixed:N, with N an integer > 0, the most attempts of a scope in flight at once`},
		{"FixedZero", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:0"},
			`policy: RETRYTRANSPORT_CONCURRENCY = "fixed:0"; want fixed:N, with N an integer > 0, the most attempts of a scope in flight at once`},
		{"FixedNotInteger", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY": "fixed:eight"},
			`policy: RETRYTRANSPORT_CONCURRENCY = "fixed:eight"; want fixed:N, with N an integer > 0, the most attempts of a scope in flight at once`},
		{"MaxWaitNegative", policy.Policy{Concurrency: &concurrency.Fixed{Max: 1}}, map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "-1ms"},
			`policy: RETRYTRANSPORT_CONCURRENCY_MAX_WAIT = "-1ms"; want a duration >= 0, such as "10ms" (0: no wait)`},
		{"MaxWaitWithoutLimit", policy.Policy{}, map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "10ms"},
			`policy: RETRYTRANSPORT_CONCURRENCY_MAX_WAIT = "10ms"; want a concurrency limit to set it on: RETRYTRANSPORT_CONCURRENCY=adaptive or fixed:N, or a policy with a Concurrency`},
		{"MaxWaitOnOtherLimit", policy.Policy{Concurrency: otherConcurrency{}}, map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "10ms"},
			`policy: RETRYTRANSPORT_CONCURRENCY_MAX_WAIT = "10ms"; want a policy whose Concurrency is a *concurrency.Adaptive or *concurrency.Fixed, not a policy_test.otherConcurrency`},
		{"Several", policy.Policy{}, map[string]string{"RETRYTRANSPORT_BREAKER": "yes", "RETRYTRANSPORT_CONCURRENCY": "fixed:-1", "RETRYTRANSPORT_MAX_ATTEMPTS": "0"},
			"policy: RETRYTRANSPORT_MAX_ATTEMPTS = \"0\"; want an integer > 0\npolicy: RETRYTRANSPORT_BREAKER = \"yes\"; want on or off\n" +
				"policy: RETRYTRANSPORT_CONCURRENCY = \"fixed:-1\"; want fixed:N, with N an integer > 0, the most attempts of a scope in flight at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.FromEnv(tt.p, env(tt.vars))
			if err == nil || err.Error() != tt.want {
				t.Errorf("FromEnv(%v) error = %v; want %s", tt.vars, err, tt.want)
			}
			for _, e := range unwrapAll(err) {
				var fe *policy.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("FromEnv(%v) error %q is a %T; want a *policy.FieldError", tt.vars, e, e)
				}
			}
			if diff := cmp.Diff(tt.p, got, policyOpts); diff != "" {
				t.Errorf("FromEnv(%v) with an error changed p (-want +got):\n%s", tt.vars, diff)
			}
		})
	}
}

// A setting from the environment makes a new breaker or limit that keeps
// every other setting of p's, its hooks included.
func TestFromEnvSettingKeepsTheOtherFields(t *testing.T) {
	now := func() time.Time { return time.Time{} }
	rnd := func() float64 { return 0.5 }
	onChange := func(string, breaker.Phase, breaker.State) {}
	after := func(time.Duration) <-chan time.Time { return nil }
	c := &breaker.Circuit{Failures: 1, Stalls: 2, StallFor: 3, Trips: onlyTimeouts, OpenFor: 4, MaxOpenFor: 5, Probes: 6, ProbeLease: 7,
		MaxScopes: 8, Now: now, Rand: rnd, OnChange: onChange}
	a := &concurrency.Adaptive{Initial: 1, Min: 2, Max: 3, Tolerance: 4, Backoff: 0.5, MaxWait: 6, MaxScopes: 7, After: after}
	f := &concurrency.Fixed{Max: 1, MaxWait: 2, MaxScopes: 3, After: after}
	for _, v := range []any{c, a, f} {
		checkEveryFieldSet(t, reflect.ValueOf(v).Elem())
	}

	got, err := policy.FromEnv(policy.Policy{Breaker: c}, env(map[string]string{"RETRYTRANSPORT_BREAKER_OPEN_FOR": "1s"}))
	if err != nil {
		t.Fatalf("FromEnv(BREAKER_OPEN_FOR) error = %v; want nil", err)
	}
	gc := got.Breaker.(*breaker.Circuit)
	wantC := &breaker.Circuit{Failures: 1, Stalls: 2, StallFor: 3, Trips: onlyTimeouts, OpenFor: time.Second, MaxOpenFor: 5, Probes: 6, ProbeLease: 7, MaxScopes: 8}
	if diff := cmp.Diff(wantC, gc, policyOpts, cmp.FilterPath(isHook, cmp.Ignore())); diff != "" {
		t.Errorf("FromEnv(BREAKER_OPEN_FOR).Breaker mismatch (-want +got):\n%s", diff)
	}
	if gc.Now == nil || gc.Rand == nil || gc.OnChange == nil || gc.Rand() != 0.5 {
		t.Errorf("FromEnv(BREAKER_OPEN_FOR).Breaker lost a hook: Now %t, Rand %t, OnChange %t", gc.Now != nil, gc.Rand != nil, gc.OnChange != nil)
	}

	for _, l := range []concurrency.Limiter{a, f} {
		got, err := policy.FromEnv(policy.Policy{Concurrency: l}, env(map[string]string{"RETRYTRANSPORT_CONCURRENCY_MAX_WAIT": "1s"}))
		if err != nil {
			t.Fatalf("FromEnv(CONCURRENCY_MAX_WAIT) error = %v; want nil", err)
		}
		var want concurrency.Limiter
		var hook func(time.Duration) <-chan time.Time
		switch g := got.Concurrency.(type) {
		case *concurrency.Adaptive:
			want, hook = &concurrency.Adaptive{Initial: 1, Min: 2, Max: 3, Tolerance: 4, Backoff: 0.5, MaxWait: time.Second, MaxScopes: 7}, g.After
		case *concurrency.Fixed:
			want, hook = &concurrency.Fixed{Max: 1, MaxWait: time.Second, MaxScopes: 3}, g.After
		}
		if diff := cmp.Diff(want, got.Concurrency, policyOpts, cmp.FilterPath(isHook, cmp.Ignore())); diff != "" || hook == nil {
			t.Errorf("FromEnv(CONCURRENCY_MAX_WAIT) on %T: After set %t, mismatch (-want +got):\n%s", l, hook != nil, diff)
		}
	}
}

// checkEveryFieldSet fails t if an exported field of the struct v is
// zero: a test that copies settings must set them all, so that a field
// added later is copied too.
func checkEveryFieldSet(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.IsExported() && v.Field(i).IsZero() {
			t.Errorf("%s.%s is zero; set it, so that copying it is checked", v.Type(), f.Name)
		}
	}
}

// isHook reports whether path ends at a hook field (a func other than
// Trips), which cmp cannot compare.
func isHook(path cmp.Path) bool {
	sf, ok := path.Last().(cmp.StructField)
	if !ok {
		return false
	}
	switch sf.Name() {
	case "Now", "Rand", "OnChange", "After":
		return true
	}
	return false
}
