package policy_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// presetWants holds every preset as its documentation describes it.
var presetWants = []struct {
	name string
	fn   func() policy.Policy
	want policy.Policy
}{
	{"standard", policy.Standard, policy.Policy{MaxAttempts: 3, Backoff: backoff.FullJitter{}}},
	{"adaptive", policy.Adaptive, policy.Policy{MaxAttempts: 3, Backoff: backoff.FullJitter{}, Limiter: &ratelimit.Adaptive{}}},
	{"none", policy.None, policy.Policy{MaxAttempts: 1}},
	{"standard-v2", policy.StandardV2, policy.Policy{
		MaxAttempts:     3,
		Backoff:         backoff.FullJitter{Base: 50 * time.Millisecond},
		ThrottleBackoff: backoff.FullJitter{Base: time.Second},
		Quota:           &quota.Bucket{RetryCost: 14, ThrottleCost: 5},
		ServerDelay:     policy.ServerDelay{Bound: 5 * time.Second},
	}},
	{"kotlin-standard", policy.KotlinStandard, policy.Policy{
		MaxAttempts: 3,
		Backoff:     backoff.ScaledJitter{InitialDelay: 10 * time.Millisecond, ScaleFactor: 1.5, MaxBackoff: 20 * time.Second, Jitter: 1},
	}},
	{"kotlin-adaptive", policy.KotlinAdaptive, policy.Policy{
		MaxAttempts: 10,
		Backoff:     backoff.ScaledJitter{InitialDelay: 10 * time.Millisecond, ScaleFactor: 1.5, MaxBackoff: 20 * time.Second, Jitter: 1},
		Limiter:     &ratelimit.Adaptive{MinFillRate: 1, Smoothing: 0.75, ThrottleRetries: -1},
	}},
	{"sns-aws-managed", policy.SNSAWSManaged, policy.Policy{
		MaxAttempts: 100_016,
		Backoff: backoff.Schedule{MinDelay: time.Second, MaxDelay: 20 * time.Second, NumRetries: 100_015,
			NumNoDelayRetries: 3, NumMinDelayRetries: 2, NumMaxDelayRetries: 100_000, BackoffFunction: backoff.CurveExponential, Jitter: 0.1},
		MaxDelay:           20 * time.Second,
		Quota:              quota.None,
		RetryNonIdempotent: true,
	}},
	{"sns-customer-managed", policy.SNSCustomerManaged, policy.Policy{
		MaxAttempts: 51,
		Backoff: backoff.Schedule{MinDelay: 10 * time.Second, MaxDelay: 600 * time.Second, NumRetries: 50,
			NumMinDelayRetries: 2, NumMaxDelayRetries: 38, BackoffFunction: backoff.CurveExponential, Jitter: 0.1},
		MaxDelay:           600 * time.Second,
		Quota:              quota.None,
		RetryNonIdempotent: true,
	}},
	{"azure-storage-exponential", policy.AzureStorageExponential, policy.Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 120 * time.Second,
	}},
	{"azure-storage-linear", policy.AzureStorageLinear, policy.Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 30 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 120 * time.Second,
	}},
	{"azure-storage-interactive", policy.AzureStorageInteractive, policy.Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 500 * time.Millisecond},
		MaxTotalTime: 2 * time.Second,
	}},
	{"azure-storage-background", policy.AzureStorageBackground, policy.Policy{
		MaxAttempts:  6,
		Backoff:      backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 30 * time.Second,
	}},
	{"azure-interactive", policy.AzureInteractive, policy.Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 500 * time.Millisecond, FastFirstRetry: true},
		MaxTotalTime: 2 * time.Second,
	}},
	{"azure-background", policy.AzureBackground, policy.Policy{
		MaxAttempts:  6,
		Backoff:      backoff.Exponential{NoMinBackoff: true, MaxBackoff: 60 * time.Second, DeltaBackoff: 2 * time.Second},
		MaxDelay:     60 * time.Second,
		MaxTotalTime: 60 * time.Second,
	}},
	// The Classify of these four is checked in preset_azure_services_test.go.
	{"azure-cosmos-db", policy.AzureCosmosDB, policy.Policy{
		MaxAttempts:  10,
		Backoff:      backoff.Constant{Interval: 5 * time.Second},
		MaxDelay:     30 * time.Second,
		ServerDelay:  policy.ServerDelay{Headers: retryafter.MSRetryAfterMS},
		MaxTotalWait: 30 * time.Second,
	}},
	{"azure-service-bus", policy.AzureServiceBus, policy.Policy{
		MaxAttempts:       4,
		Backoff:           backoff.Exponential{MinBackoff: 100 * time.Millisecond, MaxBackoff: 30 * time.Second, DeltaBackoff: 3 * time.Second},
		MaxDelay:          30 * time.Second,
		TerminationBuffer: 5 * time.Second,
		Penalty:           &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 10 * time.Second},
	}},
	{"azure-search", policy.AzureSearch, policy.Policy{
		MaxAttempts: 4,
		Backoff:     backoff.Exponential{MinBackoff: time.Second, MaxBackoff: 10 * time.Second, DeltaBackoff: 10 * time.Second, FastFirstRetry: true},
	}},
	{"azure-active-directory", policy.AzureActiveDirectory, policy.Policy{
		MaxAttempts:  6,
		Backoff:      backoff.Exponential{NoMinBackoff: true, MaxBackoff: 60 * time.Second, DeltaBackoff: 2 * time.Second},
		MaxDelay:     60 * time.Second,
		MaxTotalTime: 60 * time.Second,
	}},
}

func TestPresetsAreDocumentedValues(t *testing.T) {
	var names []string
	for _, tt := range presetWants {
		names = append(names, tt.name)
		if diff := cmp.Diff(tt.want, tt.fn(), policyOpts); diff != "" {
			t.Errorf("preset %s mismatch (-want +got):\n%s", tt.name, diff)
		}
		if got, err := policy.Preset(tt.name); err != nil || cmp.Diff(tt.want, got, policyOpts) != "" {
			t.Errorf("Preset(%q) = %+v, %v; want the preset's value, nil", tt.name, got, err)
		}
	}
	if diff := cmp.Diff(names, policy.PresetNames()); diff != "" {
		t.Errorf("PresetNames() mismatch (-want +got):\n%s", diff)
	}
}

func TestPresetsValidate(t *testing.T) {
	for _, tt := range presetWants {
		if err := tt.fn().Validate(); err != nil {
			t.Errorf("preset %s: Validate() = %v; want nil", tt.name, err)
		}
	}
}

func TestPresetNamesIgnoreCase(t *testing.T) {
	for _, name := range []string{"STANDARD", "Adaptive", "sNs-AwS-mAnAgEd", "Azure-Background"} {
		got, err := policy.Preset(name)
		want, _ := policy.Preset(strings.ToLower(name))
		if err != nil || cmp.Diff(want, got, policyOpts) != "" {
			t.Errorf("Preset(%q) = %+v, %v; want Preset(%q), nil", name, got, err, strings.ToLower(name))
		}
	}
}

func TestPresetUnknownName(t *testing.T) {
	for _, name := range []string{"", "fast", "standard ", "standard_v2", "legacy"} {
		got, err := policy.Preset(name)
		var fe *policy.FieldError
		if !errors.As(err, &fe) || fe.Field != "preset" || !strings.Contains(fe.Want, "standard, adaptive, none, standard-v2") {
			t.Errorf("Preset(%q) error = %v; want a *FieldError for preset listing the names", name, err)
		}
		if fe != nil && fe.Value != `"`+name+`"` {
			t.Errorf("Preset(%q) error Value = %s; want the name quoted", name, fe.Value)
		}
		if diff := cmp.Diff(policy.Policy{}, got, policyOpts); diff != "" {
			t.Errorf("Preset(%q) policy mismatch (-want +got):\n%s", name, diff)
		}
	}
}

// Preset accepts only the names of PresetNames, in any case, and for a name
// close to one, the Go name of a preset function included, suggests it.
func TestPresetSuggestsTheName(t *testing.T) {
	tests := []struct {
		name string
		want string // the Suggestion; "" for none
	}{
		{"AzureBackground", "azure-background"},
		{"StandardV2", "standard-v2"},
		{"standard_v2", "standard-v2"},
		{"SNSAWSManaged", "sns-aws-managed"},
		{"standard ", "standard"},
		{"Standrad", "standard"},
		{"kotlin-adaptiv", "kotlin-adaptive"},
		{"azure-storage-exponental", "azure-storage-exponential"},
		{"none1", "none"},
		{"", ""},
		{"x", ""},
		{"fast", ""},
		{"legacy", ""},
		{"azure", ""},
	}
	for _, tt := range tests {
		_, err := policy.Preset(tt.name)
		var fe *policy.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("Preset(%q) error = %v; want a *policy.FieldError", tt.name, err)
			continue
		}
		if fe.Suggestion != tt.want {
			t.Errorf("Preset(%q) Suggestion = %q; want %q", tt.name, fe.Suggestion, tt.want)
		}
		wantMsg := `policy: preset = "` + tt.name + `"; did you mean "` + tt.want + `"?`
		if tt.want == "" {
			wantMsg = `policy: preset = "` + tt.name + `"; want one of ` + strings.Join(policy.PresetNames(), ", ")
		}
		if err.Error() != wantMsg {
			t.Errorf("Preset(%q) error = %q; want %q", tt.name, err, wantMsg)
		}
	}
}

// Every preset's name of more than one word written as a Go name, without
// its dashes, is refused with that name as the suggestion.
func TestPresetGoNamesSuggestTheName(t *testing.T) {
	for _, name := range policy.PresetNames() {
		if !strings.Contains(name, "-") {
			continue // the Go name is the name, in another case
		}
		goName := strings.ToUpper(strings.ReplaceAll(name, "-", ""))
		_, err := policy.Preset(goName)
		var fe *policy.FieldError
		if !errors.As(err, &fe) || fe.Suggestion != name {
			t.Errorf("Preset(%q) error = %v; want a *policy.FieldError suggesting %q", goName, err, name)
		}
	}
}

func TestPresetNamesReturnsACopy(t *testing.T) {
	names := policy.PresetNames()
	names[0] = "changed"
	if got := policy.PresetNames()[0]; got != "standard" {
		t.Errorf("PresetNames()[0] after changing an earlier result = %q; want standard", got)
	}
}

// A preset with a quota of its own returns a new one on every call, so that
// two transports built from two calls never share buckets.
func TestStandardV2ReturnsFreshQuota(t *testing.T) {
	a, b := policy.StandardV2(), policy.StandardV2()
	if a.Quota == nil || a.Quota == b.Quota {
		t.Fatalf("StandardV2().Quota = %p, %p; want two different non-nil pointers", a.Quota, b.Quota)
	}
	a.Quota.(*quota.Bucket).RetryCost = 1
	if c, _ := policy.Preset("standard-v2"); c.Quota.(*quota.Bucket).RetryCost != 14 || c.Quota == a.Quota {
		t.Errorf("Preset(standard-v2).Quota after changing an earlier one = %+v; want a new quota with RetryCost 14", c.Quota)
	}
}

// TestPresetDelays checks the waits the sources describe, with every random
// draw at 0.5, the middle of each range.
func TestPresetDelays(t *testing.T) {
	half := func() float64 { return 0.5 }
	tests := []struct {
		name string
		s    backoff.Strategy
		want []time.Duration
	}{
		{"standard-v2", withRand(policy.StandardV2().Backoff, half), []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}},
		{"standard-v2 throttle", withRand(policy.StandardV2().ThrottleBackoff, half), []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		// Storage: "about 3, 7 and 15 s".
		{"azure-storage-exponential", withRand(policy.AzureStorageExponential().Backoff, half), []time.Duration{3 * time.Second, 7 * time.Second, 15 * time.Second}},
		{"azure-storage-linear", policy.AzureStorageLinear().Backoff, []time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second}},
		{"azure-storage-interactive", policy.AzureStorageInteractive().Backoff, []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{"azure-storage-background", withRand(policy.AzureStorageBackground().Backoff, half), []time.Duration{3 * time.Second, 7 * time.Second, 15 * time.Second, 30 * time.Second, 30 * time.Second}},
		// Topaz: fast first retry, then 500 ms.
		{"azure-interactive", policy.AzureInteractive().Backoff, []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond}},
		// Topaz background: "0, about 2, 6, 14 s, up to 30 s".
		{"azure-background", withRand(policy.AzureBackground().Backoff, half), []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, delays(tt.s, len(tt.want))); diff != "" {
			t.Errorf("%s: delays of retries 1..%d mismatch (-want +got):\n%s", tt.name, len(tt.want), diff)
		}
	}
}

// TestSNSPresetTotals checks the schedules' waits without jitter against
// the figures SNS publishes: 100,015 retries over 23 days, and 50 retries
// over more than 6 hours.
func TestSNSPresetTotals(t *testing.T) {
	for _, tt := range []struct {
		name     string
		p        policy.Policy
		attempts int
		total    time.Duration
	}{
		{"SNSAWSManaged", policy.SNSAWSManaged(), 100_016, 2_000_070_100 * time.Millisecond},
		{"SNSCustomerManaged", policy.SNSCustomerManaged(), 51, 24_444_200 * time.Millisecond},
	} {
		s := tt.p.Backoff.(backoff.Schedule)
		if got := s.Total().Round(100 * time.Millisecond); got != tt.total || tt.p.MaxAttempts != tt.attempts {
			t.Errorf("%s: Total() = %v, MaxAttempts = %d; want %v, %d", tt.name, got, tt.p.MaxAttempts, tt.total, tt.attempts)
		}
		if d := s.MaxDelay; tt.p.MaxDelay < d {
			t.Errorf("%s: MaxDelay = %v, below the schedule's %v; want no delay cut", tt.name, tt.p.MaxDelay, d)
		}
	}
}

// withRand returns s with its Rand set to r.
func withRand(s backoff.Strategy, r func() float64) backoff.Strategy {
	switch s := s.(type) {
	case backoff.FullJitter:
		s.Rand = r
		return s
	case backoff.Exponential:
		s.Rand = r
		return s
	case backoff.ScaledJitter:
		s.Rand = r
		return s
	}
	return s
}

// lowDraw and highDraw are the two ends of a Rand hook: 0, and the largest
// float64 below 1. A strategy drawing them gives each end of its range, to
// within a nanosecond or two of float64 rounding.
func lowDraw() float64  { return 0 }
func highDraw() float64 { return math.Nextafter(1, 0) }

// nearDurations compares durations to within 2ns, the rounding of a
// delay computed in float64 from a draw just below 1.
var nearDurations = cmp.Comparer(func(a, b time.Duration) bool {
	d := a - b
	return -2 <= d && d <= 2
})

// delays returns the waits of s before retries 1 to n.
func delays(s backoff.Strategy, n int) []time.Duration {
	var got []time.Duration
	for retry := 1; retry <= n; retry++ {
		got = append(got, s.Delay(retry))
	}
	return got
}

// TestKotlinPresetDelays derives the waits of the Kotlin SDK's delay
// provider (docs/aws.md) by hand: retry n's ceiling is 10ms·1.5^(n-1),
// capped at 20s, and full jitter takes a draw's share of it off, so a draw
// of 0 waits the whole ceiling and a draw just below 1 waits nothing.
func TestKotlinPresetDelays(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	ceilings := []time.Duration{ms(10), ms(15), ms(22.5), ms(33.75), ms(50.625), ms(75.9375),
		ms(113.90625), ms(170.859375), ms(256.2890625)}
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"KotlinStandard", policy.KotlinStandard()},
		{"KotlinAdaptive", policy.KotlinAdaptive()},
	} {
		retries := tt.p.MaxAttempts - 1
		low := delays(withRand(tt.p.Backoff, lowDraw), retries)
		if diff := cmp.Diff(ceilings[:retries], low, nearDurations); diff != "" {
			t.Errorf("%s().Backoff with Rand 0: delays of retries 1..%d mismatch (-want +got):\n%s", tt.name, retries, diff)
		}
		high := delays(withRand(tt.p.Backoff, highDraw), retries)
		if diff := cmp.Diff(make([]time.Duration, retries), high, nearDurations); diff != "" {
			t.Errorf("%s().Backoff with Rand just below 1: delays of retries 1..%d mismatch (-want +got):\n%s", tt.name, retries, diff)
		}
	}
	// The ceiling reaches the 20s cap at retry 20: 10ms·1.5^18 = 14.779s,
	// 10ms·1.5^19 = 22.17s.
	s := withRand(policy.KotlinStandard().Backoff, lowDraw)
	if got19, got20 := s.Delay(19), s.Delay(20); got19.Round(time.Millisecond) != 14_779*time.Millisecond || got20 != 20*time.Second {
		t.Errorf("KotlinStandard().Backoff with Rand 0: Delay(19), Delay(20) = %v, %v; want 14.779s, 20s", got19, got20)
	}
}

// A preset with a limiter of its own returns a new one on every call, so
// that two transports built from two calls never share send rates.
func TestKotlinAdaptiveReturnsFreshLimiter(t *testing.T) {
	a, b := policy.KotlinAdaptive(), policy.KotlinAdaptive()
	if a.Limiter == nil || a.Limiter == b.Limiter {
		t.Fatalf("KotlinAdaptive().Limiter = %p, %p; want two different non-nil pointers", a.Limiter, b.Limiter)
	}
	a.Limiter.(*ratelimit.Adaptive).MinFillRate = 5
	if c, _ := policy.Preset("kotlin-adaptive"); c.Limiter.(*ratelimit.Adaptive).MinFillRate != 1 || c.Limiter == a.Limiter {
		t.Errorf("Preset(kotlin-adaptive).Limiter after changing an earlier one = %+v; want a new limiter with MinFillRate 1", c.Limiter)
	}
}

// Every preset returns new values behind its pointers on every call: a
// limiter, a quota with state, and the Penalty, Failover and Hedge a
// caller may change.
func TestPresetsReturnFreshPointers(t *testing.T) {
	for _, tt := range presetWants {
		a, b := tt.fn(), tt.fn()
		type ptr struct {
			field string
			a, b  any
		}
		ptrs := []ptr{{"Limiter", a.Limiter, b.Limiter}, {"RateLimit", a.RateLimit, b.RateLimit}, {"Budget", a.Budget, b.Budget}}
		if a.Quota != quota.None {
			ptrs = append(ptrs, ptr{"Quota", a.Quota, b.Quota})
		}
		if a.Penalty != nil {
			ptrs = append(ptrs, ptr{"Penalty", a.Penalty, b.Penalty})
		}
		if a.Failover != nil {
			ptrs = append(ptrs, ptr{"Failover", a.Failover, b.Failover})
		}
		if a.Hedge != nil {
			ptrs = append(ptrs, ptr{"Hedge", a.Hedge, b.Hedge})
		}
		for _, p := range ptrs {
			if p.a != nil && p.a == p.b {
				t.Errorf("preset %s: %s = %p on two calls; want a new one on each", tt.name, p.field, p.a)
			}
		}
	}
}

// Adaptive, like KotlinAdaptive, returns a new limiter on every call.
func TestAdaptiveReturnsFreshLimiter(t *testing.T) {
	a, b := policy.Adaptive(), policy.Adaptive()
	if a.Limiter == nil || a.Limiter == b.Limiter {
		t.Fatalf("Adaptive().Limiter = %p, %p; want two different non-nil pointers", a.Limiter, b.Limiter)
	}
	a.Limiter.(*ratelimit.Adaptive).Beta = 0.5
	if c, _ := policy.Preset("adaptive"); c.Limiter.(*ratelimit.Adaptive).Beta != 0 || c.Limiter == a.Limiter {
		t.Errorf("Preset(adaptive).Limiter after changing an earlier one = %+v; want a new limiter with the defaults", c.Limiter)
	}
}
