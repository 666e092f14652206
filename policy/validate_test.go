package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

func TestValidateAcceptsPresetsAndZero(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"Policy{}", policy.Policy{}},
		{"Standard()", policy.Standard()},
		{"Adaptive()", policy.Adaptive()},
		{"None()", policy.None()},
		{"Policy{}.WithDefaults()", policy.Policy{}.WithDefaults()},
		{"Quota with Wait and refill", policy.Policy{Quota: &quota.Bucket{Wait: true, RefillPerSecond: 0.5}}},
		{"Quota without Wait", policy.Policy{Quota: &quota.Bucket{}}},
		{"quota.None", policy.Policy{Quota: quota.None}},
		{"Budget with quota.None", policy.Policy{Quota: quota.None, Budget: &quota.Budget{}}},
	} {
		if err := tt.p.Validate(); err != nil {
			t.Errorf("%s.Validate() = %v; want nil", tt.name, err)
		}
	}
}

func TestValidateNamesNegativeFieldAndValue(t *testing.T) {
	tests := []struct {
		p     policy.Policy
		field string
		value string
	}{
		{policy.Policy{MaxAttempts: -1}, "MaxAttempts", "-1"},
		{policy.Policy{AttemptTimeout: -time.Second}, "AttemptTimeout", "-1s"},
		{policy.Policy{MaxTotalTime: -1500 * time.Millisecond}, "MaxTotalTime", "-1.5s"},
		{policy.Policy{MaxTotalWait: -time.Second}, "MaxTotalWait", "-1s"},
		{policy.Policy{TerminationBuffer: -time.Second}, "TerminationBuffer", "-1s"},
		{policy.Policy{ServerDelay: policy.ServerDelay{Bound: -time.Second}}, "ServerDelay.Bound", "-1s"},
		{policy.Policy{AttemptHeader: "X Attempt"}, "AttemptHeader", `"X Attempt"`},
		{policy.Policy{AttemptHeader: "X-Attempt:"}, "AttemptHeader", `"X-Attempt:"`},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if err == nil {
			t.Errorf("Policy{%s: %s}.Validate() = nil; want an error", tt.field, tt.value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.field) || !strings.Contains(msg, tt.value) {
			t.Errorf("Policy{%s: %s}.Validate() = %q; want it to name %s and %s", tt.field, tt.value, msg, tt.field, tt.value)
		}
	}
}

func TestValidateAcceptsHeaderNames(t *testing.T) {
	for _, h := range []string{"X-Attempt", "x-envoy-attempt-count", "amz-sdk-request", "A!#$%&'*+-.^_`|~9"} {
		if err := (policy.Policy{AttemptHeader: h}).Validate(); err != nil {
			t.Errorf("Policy{AttemptHeader: %q}.Validate() = %v; want nil", h, err)
		}
	}
}

func TestValidateRejectsQuotaWaitWithoutRefill(t *testing.T) {
	p := policy.Policy{Quota: &quota.Bucket{Wait: true}}
	err := p.Validate()
	if err == nil {
		t.Fatalf("Policy{Quota: {Wait: true}}.Validate() = nil; want an error")
	}
	for _, want := range []string{"Quota.Wait", "RefillPerSecond"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Policy{Quota: {Wait: true}}.Validate() = %q; want it to name %s", err, want)
		}
	}
}

func TestValidateNamesNegativeRefillRate(t *testing.T) {
	p := policy.Policy{Quota: &quota.Bucket{Wait: true, RefillPerSecond: -2}}
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "-2") {
		t.Errorf("Policy{Quota: {Wait: true, RefillPerSecond: -2}}.Validate() = %v; want an error naming -2", err)
	}
}

func TestValidateJoinsEveryError(t *testing.T) {
	p := policy.Policy{
		AttemptTimeout:    -1,
		MaxTotalWait:      -time.Second,
		TerminationBuffer: -2,
		ServerDelay:       policy.ServerDelay{Bound: -3},
		Quota:             &quota.Bucket{Wait: true},
	}
	err := p.Validate()
	if err == nil {
		t.Fatalf("Validate() of five bad settings = nil; want five errors")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate() of five bad settings = %T; want a joined error (errors.Join)", err)
	}
	if got := len(joined.Unwrap()); got != 5 {
		t.Errorf("Validate() of five bad settings joined %d errors; want 5:\n%v", got, err)
	}
	for _, field := range []string{"AttemptTimeout", "MaxTotalWait", "TerminationBuffer", "ServerDelay.Bound", "Quota.Wait"} {
		found := false
		for _, e := range joined.Unwrap() {
			found = found || strings.Contains(e.Error(), field)
		}
		if !found {
			t.Errorf("Validate() of five bad settings = %q; want an error naming %s", err, field)
		}
	}
}

// A policy that fails Validate still works: WithDefaults normalises it.
func TestInvalidPolicyStillNormalises(t *testing.T) {
	p := policy.Policy{
		AttemptTimeout: -1, MaxTotalTime: -1, MaxTotalWait: -1, TerminationBuffer: -1,
		ServerDelay: policy.ServerDelay{Headers: retryafter.None | retryafter.RetryAfter, Bound: -1},
		Penalty:     &policy.Penalty{Delay: -1, For: -1},
		Hedge:       &policy.Hedge{Delay: -1, Quantile: 2, MinDelay: -1, MaxHedges: -1},
		Failover:    &policy.Failover{Mode: policy.SecondaryOnly},
	}
	if p.Validate() == nil {
		t.Fatalf("Validate() of negative settings = nil; want an error")
	}
	if err := p.WithDefaults().Validate(); err != nil {
		t.Errorf("WithDefaults().Validate() of negative settings = %v; want nil", err)
	}
}

func TestValidateBudgets(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Policy
		want string // substring of the error; "" for valid
	}{
		{"AttemptTimeoutWithinBudget", policy.Policy{AttemptTimeout: time.Second, MaxTotalTime: 2 * time.Second}, ""},
		{"AttemptTimeoutLongerThanBudget", policy.Policy{AttemptTimeout: 3 * time.Second, MaxTotalTime: 2 * time.Second}, "AttemptTimeout = 3s is longer than MaxTotalTime = 2s"},
		{"NegativeAttemptTimeout", policy.Policy{AttemptTimeout: -1}, "AttemptTimeout = -1ns"},
		{"NegativeMaxTotalTime", policy.Policy{MaxTotalTime: -1}, "MaxTotalTime = -1ns"},
		// 3 retries at 1 s fit in 3 s but not in 2.5 s.
		{"ConstantDelaysFit", policy.Policy{MaxAttempts: 4, Backoff: backoff.Constant{Interval: time.Second}, MaxTotalTime: 3 * time.Second}, ""},
		{"ConstantDelaysExceedBudget", policy.Policy{MaxAttempts: 4, Backoff: backoff.Constant{Interval: time.Second}, MaxTotalTime: 2500 * time.Millisecond}, "add up to 3s over 4 attempts"},
		// SNS: 2 immediate, then 1 s each: 0+0+1+1 = 2 s over 4 retries.
		{"ScheduleExceedsBudget", policy.Policy{MaxAttempts: 5, Backoff: backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Second, NumRetries: 4, NumNoDelayRetries: 2}, MaxTotalTime: time.Second}, "add up to 2s"},
		{"JitterIsNotFixed", policy.Policy{MaxAttempts: 10, MaxTotalTime: time.Second}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// requestCounter is a retry quota that counts requests, as a Budget does,
// of a type Validate does not know.
type requestCounter struct{ quota.Bucket }

func (*requestCounter) Request(string) {}

func TestValidateRejectsQuotaThatCountsRequests(t *testing.T) {
	tests := []struct {
		name string
		q    quota.Quota
		want string
	}{
		{"Budget", &quota.Budget{Ratio: 0.1}, "policy: Quota is a *quota.Budget, which counts requests; want it in Budget, which is paid in the request's own scope"},
		{"OtherCounter", &requestCounter{}, "policy: Quota is a *policy_test.requestCounter, which counts requests; want it in Budget, which is paid in the request's own scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := (policy.Policy{Quota: tt.q}).Validate(); err == nil || err.Error() != tt.want {
				t.Errorf("Policy{Quota: %T}.Validate() = %v; want %s", tt.q, err, tt.want)
			}
			if err := (policy.Policy{Budget: tt.q}).Validate(); err != nil {
				t.Errorf("Policy{Budget: %T}.Validate() = %v; want nil: a budget goes there", tt.q, err)
			}
		})
	}
}

// A nil pointer of the module's own types in Quota, Budget, Limiter or
// RateLimit fails Validate with one error that names the field and says
// it means nil, whichever of the types it is and whichever field holds it.
func TestValidateNamesNilPointers(t *testing.T) {
	tests := []struct {
		name  string
		p     policy.Policy
		field string
	}{
		{"QuotaBucket", policy.Policy{Quota: (*quota.Bucket)(nil)}, "Quota"},
		{"QuotaBudget", policy.Policy{Quota: (*quota.Budget)(nil)}, "Quota"},
		{"BudgetBudget", policy.Policy{Budget: (*quota.Budget)(nil)}, "Budget"},
		{"BudgetBucket", policy.Policy{Budget: (*quota.Bucket)(nil)}, "Budget"},
		{"LimiterAdaptive", policy.Policy{Limiter: (*ratelimit.Adaptive)(nil)}, "Limiter"},
		{"LimiterFixed", policy.Policy{Limiter: (*ratelimit.Fixed)(nil)}, "Limiter"},
		{"RateLimitFixed", policy.Policy{RateLimit: (*ratelimit.Fixed)(nil)}, "RateLimit"},
		{"RateLimitAdaptive", policy.Policy{RateLimit: (*ratelimit.Adaptive)(nil)}, "RateLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil; want an error naming %s", tt.field)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "policy: "+tt.field+" = (*") || !strings.Contains(msg, ")(nil), a nil pointer, which means nil") || strings.Contains(msg, "\n") {
				t.Errorf("Validate() = %q; want one error naming %s as a nil pointer that means nil", msg, tt.field)
			}
		})
	}
}

// A negative MaxAttempts, which other libraries read as "no limit", is
// refused the same way wherever a policy comes from: Validate for a
// Policy written in Go, Load for a document, FromEnv for the environment.
func TestNegativeMaxAttemptsIsRefusedEverywhere(t *testing.T) {
	if err := (policy.Policy{MaxAttempts: -1}).Validate(); err == nil {
		t.Errorf("Policy{MaxAttempts: -1}.Validate() = nil; want an error")
	}
	if _, err := policy.Load(strings.NewReader(`{"maxAttempts": -1}`)); err == nil {
		t.Errorf(`Load({"maxAttempts": -1}) error = nil; want an error`)
	}
	getenv := func(name string) string {
		if name == "RETRYTRANSPORT_MAX_ATTEMPTS" {
			return "-1"
		}
		return ""
	}
	if _, err := policy.FromEnv(policy.Policy{}, getenv); err == nil {
		t.Errorf("FromEnv(RETRYTRANSPORT_MAX_ATTEMPTS=-1) error = nil; want an error")
	}
}
