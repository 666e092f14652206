package policy_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// roundTrip returns Load(p.MarshalJSON()).
func roundTrip(t *testing.T, p policy.Policy) policy.Policy {
	t.Helper()
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON() error = %v; want nil", err)
	}
	got, err := policy.Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Load(%s) error = %v; want nil", b, err)
	}
	return got
}

func TestMarshalJSONRoundTripsEveryPreset(t *testing.T) {
	for _, name := range policy.PresetNames() {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Preset(name)
			if err != nil {
				t.Fatalf("Preset(%q) error = %v", name, err)
			}
			if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
				t.Errorf("Load(MarshalJSON(%s)) mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}

func TestMarshalJSONRoundTripsEveryDataField(t *testing.T) {
	p := policy.Policy{
		MaxAttempts:        5,
		MaxDelay:           20 * time.Second,
		DelayHeaders:       retryafter.RetryAfter | retryafter.AmzRetryAfter,
		ServerDelayBound:   5 * time.Second,
		IgnoreDelayHeaders: true,
		AttemptTimeout:     2 * time.Second,
		MaxTotalTime:       time.Minute,
		Quota:              &ratelimit.Quota{Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, SuccessIncrement: 1, RefillPerSecond: 0.5, Wait: true, MaxScopes: 100},
		DisableQuota:       true,
		RetryNonIdempotent: true,
		MaxBodyBuffer:      1 << 20,
		Adaptive:           true,
		Limiter:            &ratelimit.Adaptive{Beta: 0.7, Scale: 0.4, Smoothing: 0.8, MinFillRate: 0.5, Additive: 10, Reference: true, FailFast: true, MaxWait: time.Second, MaxScopes: 10},
		RateLimit:          &ratelimit.Fixed{Rate: 10, Burst: 2, FailFast: true, MaxWait: 1500 * time.Millisecond, MaxScopes: 3},
		MaxDrain:           64 << 10,
		ReadTimeout:        250 * time.Millisecond,
		AttemptHeader:      "X-Attempt",
		IgnoreSDKAttempts:  true,
	}
	p.ThrottleBackoff = backoff.Jittered{Strategy: backoff.Capped{Strategy: backoff.Schedule{NumRetries: 100_015, BackoffFunction: backoff.CurveArithmetic, Jitter: 1}, Max: time.Hour}, Fraction: 0.3}
	for _, s := range []backoff.Strategy{
		backoff.FullJitter{}, backoff.EqualJitter{Base: 1}, backoff.Decorrelated{Max: time.Minute},
		backoff.ScaledJitter{InitialDelay: time.Millisecond, ScaleFactor: 2.5, MaxBackoff: time.Second, Jitter: 1e-9, NoJitter: true},
		backoff.Exponential{NoMinBackoff: true, FastFirstRetry: true, DeltaBackoff: 3 * time.Second},
		backoff.Incremental{Increment: 1500 * time.Millisecond}, backoff.Constant{FastFirstRetry: true},
		backoff.Capped{}, backoff.Jittered{},
	} {
		p.Backoff = s
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Backoff %#v)) mismatch (-want +got):\n%s", s, diff)
		}
	}
	for _, set := range []retryafter.Source{retryafter.AllSources, retryafter.MSRetryAfterMS, retryafter.RetryAfterMS | retryafter.RateLimitReset} {
		p.DelayHeaders = set
		if got := roundTrip(t, p).DelayHeaders; got != set {
			t.Errorf("Load(MarshalJSON(p with DelayHeaders %v)).DelayHeaders = %v; want it back", set, got)
		}
	}
}

func TestMarshalJSONWritesExactDocument(t *testing.T) {
	tests := []struct {
		p    policy.Policy
		want string
	}{
		{policy.Policy{}, `{}`},
		{policy.None(), `{"maxAttempts":1}`},
		{policy.StandardV2(), `{"maxAttempts":3,"backoff":{"type":"fullJitter","base":"50ms"},"throttleBackoff":{"type":"fullJitter","base":"1s"},"serverDelayBound":"5s","quota":{"retryCost":14,"throttleCost":5}}`},
		{policy.SNSCustomerManaged(), `{"maxAttempts":51,"backoff":{"type":"schedule","minDelay":"10s","maxDelay":"10m0s","numRetries":50,"numMinDelayRetries":2,"numMaxDelayRetries":38,"backoffFunction":"exponential","jitter":0.1},"maxDelay":"10m0s","disableQuota":true,"retryNonIdempotent":true}`},
		{policy.Policy{MaxAttempts: -1, MaxDelay: -time.Second, DelayHeaders: retryafter.AllSources}, `{"maxAttempts":-1,"maxDelay":"-1s","delayHeaders":"all"}`},
		{policy.Policy{Quota: &ratelimit.Quota{}, RateLimit: &ratelimit.Fixed{Rate: 0.25}}, `{"quota":{},"rateLimit":{"rate":0.25}}`},
	}
	for _, tt := range tests {
		b, err := tt.p.MarshalJSON()
		if err != nil || string(b) != tt.want {
			t.Errorf("MarshalJSON(%+v) = %s, %v; want %s, nil", tt.p, b, err, tt.want)
		}
	}
}

func TestMarshalJSONThroughEncodingJSON(t *testing.T) {
	m := map[string]policy.Policy{"a": policy.None()}
	b, err := json.Marshal(m)
	if err != nil || string(b) != `{"a":{"maxAttempts":1}}` {
		t.Errorf("json.Marshal(map of None) = %s, %v; want {\"a\":{\"maxAttempts\":1}}, nil", b, err)
	}
}

// otherQuota and otherLimiter stand for implementations kept in a store.
type otherQuota struct{ ratelimit.Quota }
type otherLimiter struct{}

func (otherLimiter) Reserve(string) (ratelimit.Reservation, time.Duration, bool) {
	return ratelimit.Reservation{}, 0, true
}

func TestMarshalJSONRejectsWhatJSONCannotHold(t *testing.T) {
	fn := func(*http.Request, *http.Response, error) classify.Outcome { return classify.Outcome{} }
	rnd := func() float64 { return 0.5 }
	tests := []struct {
		name string
		p    policy.Policy
		want string
	}{
		{"Classify", policy.Policy{Classify: fn}, "policy: cannot write classify as JSON: it is a func"},
		{"WithDefaults", policy.Policy{}.WithDefaults(), "policy: cannot write classify as JSON: it is a func"},
		{"Scope", policy.Policy{Scope: func(*http.Request) string { return "" }}, "policy: cannot write scope as JSON: it is a func"},
		{"Rand", policy.Policy{Backoff: backoff.FullJitter{Rand: rnd}}, "policy: cannot write backoff.rand as JSON: it is a func"},
		{"NestedRand", policy.Policy{ThrottleBackoff: backoff.Capped{Strategy: backoff.Decorrelated{Rand: rnd}}}, "policy: cannot write throttleBackoff.strategy.rand as JSON: it is a func"},
		{"Func", policy.Policy{Backoff: backoff.Func(func(int) time.Duration { return 0 })}, "policy: cannot write backoff as JSON: it is a backoff.Func; only the strategy values of package backoff have a JSON form"},
		{"Pointer", policy.Policy{Backoff: &backoff.Constant{}}, "policy: cannot write backoff as JSON: it is a *backoff.Constant; only the strategy values of package backoff have a JSON form"},
		{"QuotaNow", policy.Policy{Quota: &ratelimit.Quota{Now: time.Now}}, "policy: cannot write quota.now as JSON: it is a func"},
		{"LimiterNaN", policy.Policy{Limiter: &ratelimit.Adaptive{Beta: math.NaN()}}, "policy: cannot write limiter.beta as JSON: it is NaN"},
		{"RateInf", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: math.Inf(1)}}, "policy: cannot write rateLimit.rate as JSON: it is +Inf"},
		{"OtherQuota", policy.Policy{Quota: &otherQuota{}}, "policy: cannot write quota as JSON: it is a *policy_test.otherQuota; only a *ratelimit.Quota has a JSON form"},
		{"OtherLimiter", policy.Policy{Limiter: otherLimiter{}}, "policy: cannot write limiter as JSON: it is a policy_test.otherLimiter; only a *ratelimit.Adaptive has a JSON form"},
		{"OtherRateLimit", policy.Policy{RateLimit: &ratelimit.Adaptive{}}, "policy: cannot write rateLimit as JSON: it is a *ratelimit.Adaptive; only a *ratelimit.Fixed has a JSON form"},
		{"UnknownSource", policy.Policy{DelayHeaders: retryafter.RetryAfter | 1<<12}, "policy: cannot write delayHeaders as JSON: it holds 0x1000, which names no retryafter.Source"},
		{"BadCurve", policy.Policy{Backoff: backoff.Schedule{BackoffFunction: 9}}, "policy: cannot write backoff.backoffFunction as JSON: it is Curve(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.p.MarshalJSON()
			if err == nil || err.Error() != tt.want || b != nil {
				t.Errorf("MarshalJSON() = %s, %v; want nil, %s", b, err, tt.want)
			}
		})
	}
}
