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
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
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
			if p.Classify != nil {
				// A func has no JSON form: MarshalJSON must say so. The
				// rest of the preset must still come back whole.
				const want = "policy: cannot write classify as JSON: it is a func"
				if _, err := p.MarshalJSON(); err == nil || err.Error() != want {
					t.Errorf("MarshalJSON(%s) with a Classify func error = %v; want %s", name, err, want)
				}
				p.Classify = nil
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
		ServerDelay:        policy.ServerDelay{Headers: retryafter.RetryAfter | retryafter.AmzRetryAfter, Bound: 5 * time.Second},
		AttemptTimeout:     2 * time.Second,
		MaxTotalTime:       time.Minute,
		MaxTotalWait:       90 * time.Second,
		TerminationBuffer:  1500 * time.Millisecond,
		Penalty:            &policy.Penalty{Codes: []string{"ServerBusy", "Throttled"}, Statuses: []int{503, 429}, Delay: 10 * time.Second, For: 12500 * time.Millisecond},
		Quota:              &quota.Bucket{Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, SuccessIncrement: 1, RefillPerSecond: 0.5, Wait: true, MaxScopes: 100},
		Budget:             &quota.Budget{Ratio: 0.15, MinPerSecond: 2.5, Window: 30 * time.Second, MaxScopes: 20},
		RetryNonIdempotent: true,
		MaxBodyBuffer:      1 << 20,
		Limiter:            &ratelimit.Adaptive{Beta: 0.7, Scale: 0.4, Smoothing: 0.8, MinFillRate: 0.5, Additive: 10, Reference: true, FailFast: true, MaxWait: time.Second, MaxScopes: 10},
		RateLimit:          &ratelimit.Fixed{Rate: 10, Burst: 2, FailFast: true, MaxWait: 1500 * time.Millisecond, MaxScopes: 3},
		Breaker:            &breaker.Circuit{Failures: 4, Stalls: 3, StallFor: 400 * time.Millisecond, OpenFor: 2 * time.Second, MaxOpenFor: 30 * time.Second, Probes: 2, ProbeLease: 10 * time.Second, MaxScopes: 100},
		Concurrency:        &concurrency.Adaptive{Initial: 10, Min: 2, Max: 200, Tolerance: 1.5, Backoff: 0.75, MaxWait: 5 * time.Millisecond, MaxScopes: 1000},
		Failover:           &policy.Failover{Endpoints: []string{"eu.example.com", "eu.example.com:8080", "https://us.example.com:8443", "HTTP://[::1]:80"}, Mode: policy.SecondaryOnly, Methods: []string{"GET", "PUT"}},
		Hedge:              &policy.Hedge{Delay: 100 * time.Millisecond, Quantile: 0.99, MinDelay: 5 * time.Millisecond, MaxHedges: 3},
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
	for _, sd := range []policy.ServerDelay{
		{}, {Headers: retryafter.AllSources}, {Headers: retryafter.None}, {Headers: retryafter.MSRetryAfterMS},
		{Headers: retryafter.RetryAfterMS | retryafter.RateLimitReset, Bound: time.Nanosecond}, {Bound: time.Hour},
	} {
		p.ServerDelay = sd
		if got := roundTrip(t, p).ServerDelay; got != sd {
			t.Errorf("Load(MarshalJSON(p with ServerDelay %+v)).ServerDelay = %+v; want it back", sd, got)
		}
	}
	for _, q := range []quota.Quota{
		nil, quota.None, &quota.Bucket{}, &quota.Bucket{Capacity: 1, RefillPerSecond: 1e-9, Wait: true},
	} {
		p.Quota = q
		got := roundTrip(t, p)
		if diff := cmp.Diff(p, got, policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Quota %#v)) mismatch (-want +got):\n%s", q, diff)
		}
		if (q == quota.None) != (got.Quota == quota.None) {
			t.Errorf("Load(MarshalJSON(p with Quota %#v)).Quota = %#v; want quota.None exactly when p has it", q, got.Quota)
		}
	}
	for _, b := range []quota.Quota{
		nil, &quota.Budget{}, &quota.Budget{Ratio: -1, MinPerSecond: -0.5}, &quota.Budget{Ratio: 1e-9, Window: time.Millisecond, MaxScopes: 1},
	} {
		p.Budget = b
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Budget %+v)) mismatch (-want +got):\n%s", b, diff)
		}
	}
	for _, l := range []ratelimit.Limiter{nil, &ratelimit.Adaptive{}, &ratelimit.Adaptive{MinFillRate: 1, Smoothing: 0.75}} {
		p.Limiter = l
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Limiter %+v)) mismatch (-want +got):\n%s", l, diff)
		}
	}
	for _, b := range []breaker.Breaker{nil, &breaker.Circuit{}, &breaker.Circuit{Failures: 1, MaxOpenFor: time.Nanosecond, OpenFor: time.Hour}} {
		p.Breaker = b
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Breaker %+v)) mismatch (-want +got):\n%s", b, diff)
		}
	}
	for _, l := range []concurrency.Limiter{nil, &concurrency.Adaptive{}, &concurrency.Fixed{}, &concurrency.Fixed{Max: 1, MaxWait: time.Nanosecond}, &concurrency.Adaptive{Min: 9, Max: 3, Tolerance: 1e300, Backoff: 1e-300}} {
		p.Concurrency = l
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Concurrency %+v)) mismatch (-want +got):\n%s", l, diff)
		}
	}
	for _, f := range []*policy.Failover{
		nil, {Endpoints: []string{"b"}}, {Endpoints: []string{"b"}, Methods: []string{}},
		{Endpoints: []string{"b", "c:8443"}, Mode: policy.SecondaryThenPrimary, Methods: []string{"PUT"}},
	} {
		for _, m := range []policy.LocationMode{policy.PrimaryThenSecondary, policy.PrimaryOnly, policy.SecondaryOnly, policy.SecondaryThenPrimary} {
			if f != nil {
				c := *f
				c.Mode = m
				f = &c
			}
			p.Failover = f
			if diff := cmp.Diff(f, roundTrip(t, p).Failover); diff != "" {
				t.Errorf("Load(MarshalJSON(p with Failover %+v)).Failover mismatch (-want +got):\n%s", f, diff)
			}
		}
	}
	for _, h := range []*policy.Hedge{nil, {Delay: time.Second}, {Quantile: 0.5}, {Delay: time.Nanosecond, MinDelay: time.Millisecond}, {Quantile: 0.25, MaxHedges: 1}} {
		p.Hedge = h
		if diff := cmp.Diff(h, roundTrip(t, p).Hedge); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Hedge %+v)).Hedge mismatch (-want +got):\n%s", h, diff)
		}
	}
	for _, pen := range []*policy.Penalty{
		nil, {Codes: []string{"a"}, Delay: time.Second}, {Statuses: []int{100, 599}, Delay: time.Hour}, {Delay: time.Nanosecond, Statuses: []int{503}},
		{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 10 * time.Second},
	} {
		p.Penalty = pen
		if diff := cmp.Diff(pen, roundTrip(t, p).Penalty); diff != "" {
			t.Errorf("Load(MarshalJSON(p with Penalty %+v)).Penalty mismatch (-want +got):\n%s", pen, diff)
		}
	}
	for _, d := range []time.Duration{0, time.Nanosecond, 59 * time.Second} {
		p.MaxTotalWait, p.TerminationBuffer = d, d
		if got := roundTrip(t, p); got.MaxTotalWait != d || got.TerminationBuffer != d {
			t.Errorf("Load(MarshalJSON(p with MaxTotalWait and TerminationBuffer %v)) = %v, %v; want them back", d, got.MaxTotalWait, got.TerminationBuffer)
		}
	}
}

// TestMarshalJSONKeepsEmptyLists checks that an empty list comes back
// empty and a nil one nil: an empty Failover.Methods lets no request fail
// over, where nil means GET and HEAD.
func TestMarshalJSONKeepsEmptyLists(t *testing.T) {
	for _, p := range []policy.Policy{
		{},
		{Failover: &policy.Failover{Endpoints: []string{"b.example.com"}, Methods: []string{}}},
		{Failover: &policy.Failover{Endpoints: []string{"b.example.com"}}},
		{Penalty: &policy.Penalty{Codes: []string{}, Statuses: []int{503}, Delay: time.Second}},
		{Penalty: &policy.Penalty{Statuses: []int{}, Delay: time.Second, Codes: []string{"ServerBusy"}}},
		{Penalty: &policy.Penalty{Delay: time.Second, Codes: []string{"ServerBusy"}}},
	} {
		got := roundTrip(t, p)
		if diff := cmp.Diff(p, got, policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(%#v)) mismatch (-want +got):\n%s", p, diff)
		}
		if f := p.Failover; f != nil && (got.Failover.Methods == nil) != (f.Methods == nil) {
			t.Errorf("Load(MarshalJSON(%#v)) = Failover.Methods %#v; want nil exactly where p has nil", p, got.Failover.Methods)
		}
		if pen := p.Penalty; pen != nil && ((got.Penalty.Codes == nil) != (pen.Codes == nil) || (got.Penalty.Statuses == nil) != (pen.Statuses == nil)) {
			t.Errorf("Load(MarshalJSON(%#v)) = Penalty.Codes %#v, Penalty.Statuses %#v; want nil exactly where p has nil", p, got.Penalty.Codes, got.Penalty.Statuses)
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
		{policy.StandardV2(), `{"maxAttempts":3,"backoff":{"type":"fullJitter","base":"50ms"},"throttleBackoff":{"type":"fullJitter","base":"1s"},"serverDelay":{"bound":"5s"},"quota":{"retryCost":14,"throttleCost":5}}`},
		{policy.Adaptive(), `{"maxAttempts":3,"backoff":{"type":"fullJitter"},"limiter":{}}`},
		{policy.KotlinAdaptive(), `{"maxAttempts":10,"backoff":{"type":"scaledJitter","initialDelay":"10ms","maxBackoff":"20s","scaleFactor":1.5,"jitter":1},"limiter":{"smoothing":0.75,"minFillRate":1,"throttleRetries":-1}}`},
		{policy.SNSCustomerManaged(), `{"maxAttempts":51,"backoff":{"type":"schedule","minDelay":"10s","maxDelay":"10m0s","numRetries":50,"numMinDelayRetries":2,"numMaxDelayRetries":38,"backoffFunction":"exponential","jitter":0.1},"maxDelay":"10m0s","quota":"none","retryNonIdempotent":true}`},
		{policy.Policy{MaxAttempts: -1, MaxDelay: -time.Second, ServerDelay: policy.ServerDelay{Headers: retryafter.AllSources}}, `{"maxAttempts":-1,"maxDelay":"-1s","serverDelay":{"headers":"all"}}`},
		{policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.None, Bound: -time.Second}}, `{"serverDelay":{"headers":"none","bound":"-1s"}}`},
		{policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.RetryAfter | retryafter.AmzRetryAfter}}, `{"serverDelay":{"headers":["Retry-After","x-amz-retry-after"]}}`},
		{policy.Policy{Quota: &quota.Bucket{}, RateLimit: &ratelimit.Fixed{Rate: 0.25}}, `{"quota":{},"rateLimit":{"rate":0.25}}`},
		{policy.Policy{Quota: quota.None, Budget: &quota.Budget{Ratio: 0.5}, RetryNonIdempotent: true}, `{"quota":"none","budget":{"ratio":0.5},"retryNonIdempotent":true}`},
		{policy.Policy{Budget: &quota.Budget{}}, `{"budget":{}}`},
		{policy.Policy{Budget: &quota.Budget{Ratio: 0.1, MinPerSecond: -1, Window: time.Minute, MaxScopes: 4}}, `{"budget":{"ratio":0.1,"minPerSecond":-1,"window":"1m0s","maxScopes":4}}`},
		{policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1}, Failover: &policy.Failover{Endpoints: []string{"b", "https://c:8443"}, Mode: policy.PrimaryOnly, Methods: []string{"GET", "PUT"}}, Hedge: &policy.Hedge{Delay: 50 * time.Millisecond, Quantile: 0.9, MinDelay: time.Millisecond, MaxHedges: 2}, MaxDrain: 1},
			`{"rateLimit":{"rate":1},"failover":{"endpoints":["b","https://c:8443"],"mode":"PrimaryOnly","methods":["GET","PUT"]},"hedge":{"delay":"50ms","quantile":0.9,"minDelay":"1ms","maxHedges":2},"maxDrain":1}`},
		{policy.Policy{Failover: &policy.Failover{Endpoints: []string{}, Mode: policy.PrimaryThenSecondary, Methods: []string{}}, Hedge: &policy.Hedge{}}, `{"failover":{"endpoints":[],"methods":[]},"hedge":{}}`},
		{policy.Policy{Failover: &policy.Failover{}}, `{"failover":{}}`},
		{policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ftp://h"}}, Hedge: &policy.Hedge{Delay: -time.Second, Quantile: 1, MaxHedges: -1}}, `{"failover":{"endpoints":["ftp://h"]},"hedge":{"delay":"-1s","quantile":1,"maxHedges":-1}}`},
		{policy.Policy{MaxAttempts: 10, AttemptTimeout: time.Second, MaxTotalTime: time.Minute, MaxTotalWait: 30 * time.Second, TerminationBuffer: time.Second, Penalty: &policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503}, Delay: 10 * time.Second, For: 10 * time.Second}, Quota: &quota.Bucket{}},
			`{"maxAttempts":10,"attemptTimeout":"1s","maxTotalTime":"1m0s","maxTotalWait":"30s","terminationBuffer":"1s","penalty":{"codes":["ServerBusy"],"statuses":[503],"delay":"10s","for":"10s"},"quota":{}}`},
		{policy.Policy{Penalty: &policy.Penalty{Codes: []string{}, Statuses: []int{}}}, `{"penalty":{"codes":[],"statuses":[]}}`},
		{policy.Policy{Penalty: &policy.Penalty{}}, `{"penalty":{}}`},
		{policy.Policy{Penalty: &policy.Penalty{For: time.Second}}, `{"penalty":{"for":"1s"}}`},
		{policy.Policy{MaxTotalWait: -time.Second, TerminationBuffer: -time.Millisecond, Penalty: &policy.Penalty{Codes: []string{""}, Statuses: []int{99, 600}, Delay: -time.Second, For: -time.Second}},
			`{"maxTotalWait":"-1s","terminationBuffer":"-1ms","penalty":{"codes":[""],"statuses":[99,600],"delay":"-1s","for":"-1s"}}`},
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
type otherQuota struct{ quota.Bucket }
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
		{"QuotaNow", policy.Policy{Quota: &quota.Bucket{Now: time.Now}}, "policy: cannot write quota.now as JSON: it is a func"},
		{"BudgetNow", policy.Policy{Budget: &quota.Budget{Ratio: 0.1, Now: time.Now}}, "policy: cannot write budget.now as JSON: it is a func"},
		{"BudgetNaN", policy.Policy{Budget: &quota.Budget{Ratio: math.NaN()}}, "policy: cannot write budget.ratio as JSON: it is NaN"},
		{"QuotaBudget", policy.Policy{Quota: &quota.Budget{}}, "policy: cannot write quota as JSON: it is a *quota.Budget, which counts requests and goes in budget"},
		{"HedgeNaN", policy.Policy{Hedge: &policy.Hedge{Quantile: math.NaN()}}, "policy: cannot write hedge.quantile as JSON: it is NaN"},
		{"UnnamedLocationMode", policy.Policy{Failover: &policy.Failover{Endpoints: []string{"b"}, Mode: 7}}, "policy: cannot write failover.mode as JSON: it is LocationMode(7)"},
		{"NegativeLocationMode", policy.Policy{Failover: &policy.Failover{Mode: -1}}, "policy: cannot write failover.mode as JSON: it is LocationMode(-1)"},
		{"EndpointNotUTF8", policy.Policy{Failover: &policy.Failover{Endpoints: []string{"a", "b\xff"}}}, `policy: cannot write failover.endpoints[1] as JSON: it is not valid UTF-8: "b\xff"`},
		{"MethodNotUTF8", policy.Policy{Failover: &policy.Failover{Endpoints: []string{"b"}, Methods: []string{"G\xffT"}}}, `policy: cannot write failover.methods[0] as JSON: it is not valid UTF-8: "G\xffT"`},
		{"PenaltyCodeNotUTF8", policy.Policy{Penalty: &policy.Penalty{Codes: []string{"ServerBusy", "\xffBusy"}, Delay: time.Second}}, `policy: cannot write penalty.codes[1] as JSON: it is not valid UTF-8: "\xffBusy"`},
		{"HeaderNotUTF8", policy.Policy{AttemptHeader: "X-\xff"}, `policy: cannot write attemptHeader as JSON: it is not valid UTF-8: "X-\xff"`},
		{"LimiterNaN", policy.Policy{Limiter: &ratelimit.Adaptive{Beta: math.NaN()}}, "policy: cannot write limiter.beta as JSON: it is NaN"},
		{"RateInf", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: math.Inf(1)}}, "policy: cannot write rateLimit.rate as JSON: it is +Inf"},
		{"OtherQuota", policy.Policy{Quota: &otherQuota{}}, "policy: cannot write quota as JSON: it is a *policy_test.otherQuota; only a *quota.Bucket or quota.None has a JSON form"},
		{"OtherLimiterType", policy.Policy{Limiter: &ratelimit.Fixed{Rate: 1}}, "policy: cannot write limiter as JSON: it is a *ratelimit.Fixed; only a *ratelimit.Adaptive has a JSON form"},
		{"OtherBudget", policy.Policy{Budget: &quota.Bucket{}}, "policy: cannot write budget as JSON: it is a *quota.Bucket; only a *quota.Budget has a JSON form"},
		{"OtherBudgetType", policy.Policy{Budget: &otherQuota{}}, "policy: cannot write budget as JSON: it is a *policy_test.otherQuota; only a *quota.Budget has a JSON form"},
		{"OtherLimiter", policy.Policy{Limiter: otherLimiter{}}, "policy: cannot write limiter as JSON: it is a policy_test.otherLimiter; only a *ratelimit.Adaptive has a JSON form"},
		{"OtherRateLimit", policy.Policy{RateLimit: &ratelimit.Adaptive{}}, "policy: cannot write rateLimit as JSON: it is a *ratelimit.Adaptive; only a *ratelimit.Fixed has a JSON form"},
		{"UnknownSource", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.RetryAfter | 1<<12}}, "policy: cannot write serverDelay.headers as JSON: it holds 0x1000, which names no retryafter.Source"},
		{"NoneWithOthers", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.None | retryafter.RetryAfter}}, "policy: cannot write serverDelay.headers as JSON: it holds retryafter.None with other headers, Retry-After; want None alone"},
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

// A nil pointer of the module's types in Quota, Budget, Limiter,
// RateLimit, Breaker or Concurrency means nil, and is left out as nil is, whichever of the types
// it is and whichever field holds it.
func TestMarshalJSONLeavesNilPointersOut(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Policy
	}{
		{"QuotaBucket", policy.Policy{Quota: (*quota.Bucket)(nil)}},
		{"QuotaBudget", policy.Policy{Quota: (*quota.Budget)(nil)}},
		{"BudgetBudget", policy.Policy{Budget: (*quota.Budget)(nil)}},
		{"BudgetBucket", policy.Policy{Budget: (*quota.Bucket)(nil)}},
		{"LimiterAdaptive", policy.Policy{Limiter: (*ratelimit.Adaptive)(nil)}},
		{"LimiterFixed", policy.Policy{Limiter: (*ratelimit.Fixed)(nil)}},
		{"RateLimitFixed", policy.Policy{RateLimit: (*ratelimit.Fixed)(nil)}},
		{"RateLimitAdaptive", policy.Policy{RateLimit: (*ratelimit.Adaptive)(nil)}},
		{"BreakerCircuit", policy.Policy{Breaker: (*breaker.Circuit)(nil)}},
		{"ConcurrencyAdaptive", policy.Policy{Concurrency: (*concurrency.Adaptive)(nil)}},
		{"ConcurrencyFixed", policy.Policy{Concurrency: (*concurrency.Fixed)(nil)}},
		{"All", policy.Policy{MaxAttempts: 2, Quota: (*quota.Bucket)(nil), Budget: (*quota.Budget)(nil), Limiter: (*ratelimit.Adaptive)(nil), RateLimit: (*ratelimit.Fixed)(nil),
			Breaker: (*breaker.Circuit)(nil), Concurrency: (*concurrency.Fixed)(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := `{}`
			if tt.p.MaxAttempts != 0 {
				want = `{"maxAttempts":2}`
			}
			b, err := tt.p.MarshalJSON()
			if err != nil || string(b) != want {
				t.Errorf("MarshalJSON() = %s, %v; want %s, nil", b, err, want)
			}
		})
	}
}

// A ThrottleRetries outside the range Load takes is written as the value
// in it that means the same: any negative as -1 (none), more than 100 as
// 100, the most the limiter allows.
func TestMarshalJSONThrottleRetriesInLoadsRange(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{-7, -1}, {-1, -1}, {3, 3}, {250, 100}} {
		p := policy.Policy{Limiter: &ratelimit.Adaptive{ThrottleRetries: tt.in}}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal(ThrottleRetries %d): %v", tt.in, err)
		}
		q, err := policy.Load(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Load(%s): %v", data, err)
		}
		if got := q.Limiter.(*ratelimit.Adaptive).ThrottleRetries; got != tt.want {
			t.Errorf("ThrottleRetries %d written as %s, loaded as %d; want %d", tt.in, data, got, tt.want)
		}
	}
}
