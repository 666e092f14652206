package policy_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// policyOpts compares Policies field by field: the func fields are left to
// behaviour tests, but for a breaker's Trips, compared by what it counts;
// and the limiters and breakers by their settings, not their state.
var policyOpts = cmp.Options{
	cmpopts.IgnoreFields(policy.Policy{}, "Classify", "Scope"),
	cmpopts.IgnoreUnexported(quota.Bucket{}, quota.Budget{}, ratelimit.Adaptive{}, ratelimit.Fixed{},
		breaker.Circuit{}, concurrency.Adaptive{}, concurrency.Fixed{}),
	cmp.Comparer(sameTrips),
}

// tripsAsked are outcomes of the kinds a Circuit asks its Trips about.
var tripsAsked = []classify.Outcome{
	{Kind: classify.Transient, Reason: "status 503"},
	{Kind: classify.Transient, Reason: "connection refused", Unprocessed: true},
	{Kind: classify.Timeout, Reason: "timeout"},
	{Kind: classify.Timeout, Reason: "dial timeout", Unprocessed: true},
}

// sameTrips reports whether a and b, a Circuit's Trips, are both nil, or
// both set and count the same outcomes.
func sameTrips(a, b breaker.Tripper) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for _, o := range tripsAsked {
		if a.Trips(o) != b.Trips(o) {
			return false
		}
	}
	return true
}

// load is Load of doc, a string.
func load(doc string) (policy.Policy, error) { return policy.Load(strings.NewReader(doc)) }

// fullDocument sets every member of the schema.
const fullDocument = `{
 "maxAttempts": 5, "maxDelay": "20s",
 "backoff": {"type": "fullJitter", "base": "1s", "max": "20s"},
 "throttleBackoff": {"type": "equalJitter", "base": "2s"},
 "serverDelay": {"headers": ["Retry-After", "x-amz-retry-after"], "bound": "5s"},
 "attemptTimeout": "2s", "maxTotalTime": "60s",
 "maxTotalWait": "45s", "terminationBuffer": "500ms",
 "penalty": {"codes": ["ServerBusy"], "statuses": [503, 429], "delay": "10s", "for": "15s"},
 "quota": {"capacity": 500, "retryCost": 5, "timeoutCost": 10, "throttleCost": 5,
           "successIncrement": 1, "refillPerSecond": 0.5, "wait": true, "maxScopes": 100},
 "budget": {"ratio": 0.1, "minPerSecond": -1, "window": "30s", "maxScopes": 50},
 "retryNonIdempotent": true, "maxBodyBuffer": 1048576, "maxDrain": 65536,
 "readTimeout": "250ms", "attemptHeader": "X-Attempt", "ignoreSDKAttempts": true,
 "limiter": {"beta": 0.7, "scale": 0.4, "smoothing": 0.8, "minFillRate": 0.5, "additive": 10,
             "throttleRetries": 3, "reference": true, "failFast": true, "maxWait": "1s", "maxScopes": 10},
 "rateLimit": {"rate": 10, "burst": 2, "failFast": true, "maxWait": "1.5s", "maxScopes": 3},
 "breaker": {"failures": 4, "stalls": 3, "stallFor": "400ms", "trips": ["timeout"], "openFor": "2s",
             "maxOpenFor": "30s", "probes": 2, "probeLease": "10s", "maxScopes": 100},
 "concurrency": {"type": "adaptive", "initial": 10, "min": 2, "max": 200, "tolerance": 1.5, "backoff": 0.75,
                 "maxWait": "5ms", "maxScopes": 1000},
 "failover": {"endpoints": ["eu.example.com", "https://us.example.com:8443"], "mode": "secondarythenprimary",
              "methods": ["GET", "HEAD", "PUT"]},
 "hedge": {"delay": "100ms", "quantile": 0.95, "minDelay": "20ms", "maxHedges": 2},
 "classifier": {"throttlingStatuses": [420], "transientStatuses": [599], "fatalStatuses": [500],
                "throttlingCodes": ["Busy"], "transientCodes": ["Flaky"]}
}`

func TestLoadFullDocument(t *testing.T) {
	got, err := load(fullDocument)
	if err != nil {
		t.Fatalf("Load(fullDocument) error = %v; want nil", err)
	}
	want := policy.Policy{
		MaxAttempts:        5,
		Backoff:            backoff.FullJitter{Base: time.Second, Max: 20 * time.Second},
		ThrottleBackoff:    backoff.EqualJitter{Base: 2 * time.Second},
		MaxDelay:           20 * time.Second,
		ServerDelay:        policy.ServerDelay{Headers: retryafter.RetryAfter | retryafter.AmzRetryAfter, Bound: 5 * time.Second},
		AttemptTimeout:     2 * time.Second,
		MaxTotalTime:       time.Minute,
		MaxTotalWait:       45 * time.Second,
		TerminationBuffer:  500 * time.Millisecond,
		Penalty:            &policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503, 429}, Delay: 10 * time.Second, For: 15 * time.Second},
		Quota:              &quota.Bucket{Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, SuccessIncrement: 1, RefillPerSecond: 0.5, Wait: true, MaxScopes: 100},
		Budget:             &quota.Budget{Ratio: 0.1, MinPerSecond: -1, Window: 30 * time.Second, MaxScopes: 50},
		RetryNonIdempotent: true,
		MaxBodyBuffer:      1 << 20,
		Limiter:            &ratelimit.Adaptive{Beta: 0.7, Scale: 0.4, Smoothing: 0.8, MinFillRate: 0.5, Additive: 10, ThrottleRetries: 3, Reference: true, FailFast: true, MaxWait: time.Second, MaxScopes: 10},
		RateLimit:          &ratelimit.Fixed{Rate: 10, Burst: 2, FailFast: true, MaxWait: 1500 * time.Millisecond, MaxScopes: 3},
		Breaker: &breaker.Circuit{Failures: 4, Stalls: 3, StallFor: 400 * time.Millisecond, Trips: onlyTimeouts, OpenFor: 2 * time.Second,
			MaxOpenFor: 30 * time.Second, Probes: 2, ProbeLease: 10 * time.Second, MaxScopes: 100},
		Concurrency:       &concurrency.Adaptive{Initial: 10, Min: 2, Max: 200, Tolerance: 1.5, Backoff: 0.75, MaxWait: 5 * time.Millisecond, MaxScopes: 1000},
		Failover:          &policy.Failover{Endpoints: []string{"eu.example.com", "https://us.example.com:8443"}, Mode: policy.SecondaryThenPrimary, Methods: []string{"GET", "HEAD", "PUT"}},
		Hedge:             &policy.Hedge{Delay: 100 * time.Millisecond, Quantile: 0.95, MinDelay: 20 * time.Millisecond, MaxHedges: 2},
		MaxDrain:          64 << 10,
		ReadTimeout:       250 * time.Millisecond,
		AttemptHeader:     "X-Attempt",
		IgnoreSDKAttempts: true,
	}
	if diff := cmp.Diff(want, got, policyOpts); diff != "" {
		t.Errorf("Load(fullDocument) mismatch (-want +got):\n%s", diff)
	}
	if got.Classify == nil {
		t.Fatalf("Load(fullDocument).Classify = nil; want the classifier's")
	}
	for _, tt := range []struct {
		status int
		body   string
		want   classify.Kind
	}{
		{420, "", classify.Throttle},
		{599, "", classify.Transient},
		{500, "", classify.Fatal},
		{400, `{"__type":"Busy"}`, classify.Throttle},
		{400, `{"__type":"Flaky"}`, classify.Transient},
		{404, "", classify.Fatal},
		{200, "", classify.Success},
	} {
		resp := &http.Response{StatusCode: tt.status, Header: make(http.Header), Body: io.NopCloser(strings.NewReader(tt.body))}
		if got := got.Classify(nil, resp, nil).Kind; got != tt.want {
			t.Errorf("Load(fullDocument).Classify(%d, %q).Kind = %v; want %v", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestLoadEmptyObjectIsZeroPolicy(t *testing.T) {
	for _, doc := range []string{`{}`, ` { } `, `{"maxAttempts": null, "backoff": null}`, "{}\n\n"} {
		got, err := load(doc)
		if err != nil {
			t.Errorf("Load(%q) error = %v; want nil", doc, err)
			continue
		}
		if diff := cmp.Diff(policy.Policy{}, got, policyOpts); diff != "" || got.Classify != nil {
			t.Errorf("Load(%q) mismatch (-want +got):\n%s", doc, diff)
		}
	}
}

func TestLoadPresetThenOverrides(t *testing.T) {
	// The preset applies first although it is written last; the quota
	// object replaces the preset's whole.
	got, err := load(`{"maxAttempts": 7, "quota": {"capacity": 50}, "preset": "Standard-V2"}`)
	if err != nil {
		t.Fatalf("Load error = %v; want nil", err)
	}
	want := policy.StandardV2()
	want.MaxAttempts = 7
	want.Quota = &quota.Bucket{Capacity: 50}
	if diff := cmp.Diff(want, got, policyOpts); diff != "" {
		t.Errorf("Load(preset standard-v2 with overrides) mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadEveryPreset(t *testing.T) {
	for _, name := range policy.PresetNames() {
		got, err := load(`{"preset": "` + strings.ToUpper(name) + `"}`)
		if err != nil {
			t.Errorf("Load(preset %q) error = %v; want nil", name, err)
			continue
		}
		want, _ := policy.Preset(name)
		if diff := cmp.Diff(want, got, policyOpts); diff != "" {
			t.Errorf("Load(preset %q) mismatch (-want +got):\n%s", name, diff)
		}
	}
}

func TestLoadServerDelay(t *testing.T) {
	tests := []struct {
		doc  string
		want policy.ServerDelay
	}{
		{`{}`, policy.ServerDelay{}},
		{`{"headers": null, "bound": "5s"}`, policy.ServerDelay{Bound: 5 * time.Second}},
		{`{"headers": "all"}`, policy.ServerDelay{Headers: retryafter.AllSources}},
		{`{"headers": "ALL"}`, policy.ServerDelay{Headers: retryafter.AllSources}},
		{`{"headers": "none"}`, policy.ServerDelay{Headers: retryafter.None}},
		{`{"headers": "None", "bound": "1s"}`, policy.ServerDelay{Headers: retryafter.None, Bound: time.Second}},
		{`{"headers": ["retry-after"]}`, policy.ServerDelay{Headers: retryafter.RetryAfter}},
		{`{"headers": ["RateLimit", "X-RateLimit-Reset", "ratelimit"]}`, policy.ServerDelay{Headers: retryafter.IETFRateLimit | retryafter.RateLimitReset}},
		{`{"headers": ["Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "x-amz-retry-after", "X-RateLimit-Reset", "RateLimit"]}`, policy.ServerDelay{Headers: retryafter.AllSources}},
	}
	for _, tt := range tests {
		got, err := load(`{"serverDelay": ` + tt.doc + `}`)
		if err != nil || got.ServerDelay != tt.want {
			t.Errorf("Load(serverDelay %s) = %+v, %v; want %+v, nil", tt.doc, got.ServerDelay, err, tt.want)
		}
	}
}

// quotaDocument has a quota object.
const quotaDocument = `{"quota": {"capacity": 50, "retryCost": 2, "refillPerSecond": 0.5, "wait": true}}`

func TestLoadQuotaObject(t *testing.T) {
	got, err := load(quotaDocument)
	if err != nil {
		t.Fatalf("Load(%s) error = %v; want nil", quotaDocument, err)
	}
	want := &quota.Bucket{Capacity: 50, RetryCost: 2, RefillPerSecond: 0.5, Wait: true}
	if diff := cmp.Diff(quota.Quota(want), got.Quota, policyOpts); diff != "" {
		t.Errorf("Load(%s).Quota mismatch (-want +got):\n%s", quotaDocument, diff)
	}
	b, err := got.MarshalJSON()
	if wantDoc := `{"quota":{"capacity":50,"retryCost":2,"refillPerSecond":0.5,"wait":true}}`; err != nil || string(b) != wantDoc {
		t.Errorf("MarshalJSON(Load(%s)) = %s, %v; want %s, nil", quotaDocument, b, err, wantDoc)
	}
}

func TestLoadQuota(t *testing.T) {
	tests := []struct {
		doc  string
		want quota.Quota
	}{
		{`{}`, &quota.Bucket{}},
		{`{"capacity": 5}`, &quota.Bucket{Capacity: 5}},
		{`"none"`, quota.None},
		{`"NONE"`, quota.None},
	}
	for _, tt := range tests {
		got, err := load(`{"quota": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(quota %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.Quota, policyOpts); diff != "" {
			t.Errorf("Load(quota %s).Quota mismatch (-want +got):\n%s", tt.doc, diff)
		}
		if tt.want == quota.None && got.Quota != quota.None {
			t.Errorf("Load(quota %s).Quota = %#v; want quota.None", tt.doc, got.Quota)
		}
	}
}

func TestLoadFailoverMethods(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{`null`, nil},
		{`[]`, []string{}},
		{`["PUT", "get"]`, []string{"PUT", "get"}},
	}
	for _, tt := range tests {
		doc := `{"failover": {"endpoints": ["b.example.com"], "methods": ` + tt.doc + `}}`
		got, err := load(doc)
		if err != nil {
			t.Errorf("Load(%s) error = %v; want nil", doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.Failover.Methods); diff != "" {
			t.Errorf("Load(%s).Failover.Methods mismatch (-want +got):\n%s", doc, diff)
		}
	}
}

func TestLoadPenaltyKeepsEmptyLists(t *testing.T) {
	tests := []struct {
		doc  string
		want *policy.Penalty
	}{
		{`null`, nil},
		{`{"codes": null, "statuses": [503], "delay": "1s"}`, &policy.Penalty{Statuses: []int{503}, Delay: time.Second}},
		{`{"codes": [], "statuses": [503], "delay": "1s"}`, &policy.Penalty{Codes: []string{}, Statuses: []int{503}, Delay: time.Second}},
		{`{"codes": ["ServerBusy"], "statuses": [], "delay": "1s"}`, &policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{}, Delay: time.Second}},
		{`{"statuses": [100, 599], "delay": "1s"}`, &policy.Penalty{Statuses: []int{100, 599}, Delay: time.Second}},
		{`{"for": "1m", "delay": "10s", "codes": ["ServerBusy", "serverbusy"]}`, &policy.Penalty{Codes: []string{"ServerBusy", "serverbusy"}, Delay: 10 * time.Second, For: time.Minute}},
	}
	for _, tt := range tests {
		got, err := load(`{"penalty": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(penalty %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.Penalty); diff != "" {
			t.Errorf("Load(penalty %s).Penalty mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// shortDocument is a policy as MarshalJSON writes it, without the members
// of the time limits and the penalty.
const shortDocument = `{"maxAttempts":4,"backoff":{"type":"constant","interval":"500ms","fastFirstRetry":true},"maxTotalTime":"2s","classifier":{"fatalStatuses":[501]},"quota":{"capacity":50},"failover":{"endpoints":["b.example.com"],"methods":[]},"hedge":{"delay":"100ms"}}`

func TestLoadLeavesMissingMembersZero(t *testing.T) {
	got, err := load(shortDocument)
	if err != nil {
		t.Fatalf("Load(%s) error = %v; want nil", shortDocument, err)
	}
	if got.MaxTotalWait != 0 || got.TerminationBuffer != 0 || got.Penalty != nil || got.ServerDelay != (policy.ServerDelay{}) || got.Limiter != nil {
		t.Errorf("Load(%s) = MaxTotalWait %v, TerminationBuffer %v, Penalty %v, ServerDelay %+v, Limiter %v; want zero and nil", shortDocument, got.MaxTotalWait, got.TerminationBuffer, got.Penalty, got.ServerDelay, got.Limiter)
	}
	got.Classify = nil
	b, err := got.MarshalJSON()
	want := strings.Replace(shortDocument, `"classifier":{"fatalStatuses":[501]},`, "", 1)
	if err != nil || string(b) != want {
		t.Errorf("MarshalJSON(Load(%s)) without Classify = %s, %v; want %s, nil", shortDocument, b, err, want)
	}
}

func TestLoadLocationModeInAnyCase(t *testing.T) {
	for _, tt := range []struct {
		name string
		want policy.LocationMode
	}{
		{"PrimaryThenSecondary", policy.PrimaryThenSecondary},
		{"primaryonly", policy.PrimaryOnly},
		{"SECONDARYONLY", policy.SecondaryOnly},
		{"secondaryThenPrimary", policy.SecondaryThenPrimary},
	} {
		doc := `{"failover": {"endpoints": ["b.example.com"], "mode": "` + tt.name + `"}}`
		got, err := load(doc)
		if err != nil || got.Failover == nil || got.Failover.Mode != tt.want {
			t.Errorf("Load(%s).Failover = %+v, %v; want Mode %v, nil", doc, got.Failover, err, tt.want)
		}
	}
}

// TestLoadErrors checks that each bad member gives a *FieldError naming its
// path, its value and what is allowed.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message of the only error
	}{
		{"NegativeAttempts", `{"maxAttempts": -3}`, `policy: maxAttempts = -3; want an integer >= 1, or 0 for the default`},
		{"FractionalAttempts", `{"maxAttempts": 2.5}`, `policy: maxAttempts = 2.5; want an integer >= 1, or 0 for the default`},
		{"StringAttempts", `{"maxAttempts": "5"}`, `policy: maxAttempts = "5"; want an integer >= 1, or 0 for the default`},
		{"DurationWithoutUnit", `{"maxDelay": "20"}`, `policy: maxDelay = "20"; want a duration string >= 0, such as "1.5s"`},
		{"DurationAsNumber", `{"attemptTimeout": 2}`, `policy: attemptTimeout = 2; want a duration string >= 0, such as "1.5s"`},
		{"NegativeDuration", `{"maxTotalTime": "-1s"}`, `policy: maxTotalTime = "-1s"; want a duration string >= 0, such as "1.5s"`},
		{"UnknownType", `{"backoff": {"type": "fulljitterx"}}`, `policy: backoff.type = "fulljitterx"; did you mean "fullJitter"?`},
		{"UnknownTypeNothingClose", `{"backoff": {"type": "fibonacci"}}`, `policy: backoff.type = "fibonacci"; want one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"TypeInGoCase", `{"backoff": {"type": "full_jitter"}}`, `policy: backoff.type = "full_jitter"; did you mean "fullJitter"?`},
		{"MissingType", `{"throttleBackoff": {"base": "1s"}}`, `policy: throttleBackoff.type: missing; want one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"UnknownStrategyField", `{"backoff": {"type": "fullJitter", "bas": "1s"}}`, `policy: backoff.bas: unknown field; did you mean "base"?`},
		{"UnknownStrategyFieldNothingClose", `{"backoff": {"type": "fullJitter", "cap": "1s"}}`, `policy: backoff.cap: unknown field; want one of type, base, max`},
		{"NestedStrategy", `{"backoff": {"type": "capped", "strategy": {"type": "constant", "interval": "x"}}}`, `policy: backoff.strategy.interval = "x"; want a duration string >= 0, such as "1.5s"`},
		{"BadCurve", `{"backoff": {"type": "schedule", "backoffFunction": "cubic"}}`, `policy: backoff.backoffFunction = "cubic"; want linear, arithmetic, exponential or geometric`},
		{"MisspeltCurve", `{"backoff": {"type": "schedule", "backoffFunction": "exponentail"}}`, `policy: backoff.backoffFunction = "exponentail"; did you mean "exponential"?`},
		{"ScaleFactorBelowOne", `{"backoff": {"type": "scaledJitter", "scaleFactor": 0.5}}`, `policy: backoff.scaleFactor = 0.5; want a number >= 1, or 0 for the default`},
		{"JitterAboveOne", `{"backoff": {"type": "jittered", "fraction": 1.5}}`, `policy: backoff.fraction = 1.5; want a number 0..1 (0: the default)`},
		{"NegativeCount", `{"backoff": {"type": "schedule", "numRetries": -1}}`, `policy: backoff.numRetries = -1; want an integer >= 0 (0: the default)`},
		{"StrategyNotObject", `{"backoff": "fullJitter"}`, `policy: backoff = "fullJitter"; want a strategy object whose type is one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"UnknownTopField", `{"maxAttempt": 3}`, `policy: maxAttempt: unknown field; did you mean "maxAttempts"?`},
		{"CaseMatters", `{"MaxAttempts": 3}`, `policy: MaxAttempts: unknown field; did you mean "maxAttempts"?`},
		{"UnknownTopFieldNothingClose", `{"retries": 3}`, `policy: retries: unknown field; want one of preset, maxAttempts, backoff, throttleBackoff, maxDelay, serverDelay, attemptTimeout, maxTotalTime, maxTotalWait, terminationBuffer, penalty, classifier, quota, budget, retryNonIdempotent, maxBodyBuffer, limiter, rateLimit, breaker, concurrency, failover, hedge, maxDrain, readTimeout, attemptHeader, ignoreSDKAttempts`},
		{"RepeatedField", `{"maxAttempts": 3, "maxAttempts": 4}`, `policy: maxAttempts: repeated field; want it once`},
		{"PresetGoName", `{"preset": "AzureBackground"}`, `policy: preset = "AzureBackground"; did you mean "azure-background"?`},
		{"MisspeltPreset", `{"preset": "standrad"}`, `policy: preset = "standrad"; did you mean "standard"?`},
		{"UnknownPreset", `{"preset": "fast"}`, `policy: preset = "fast"; want one of standard, adaptive, none, standard-v2, kotlin-standard, kotlin-adaptive, sns-aws-managed, sns-customer-managed, azure-storage-exponential, azure-storage-linear, azure-storage-interactive, azure-storage-background, azure-interactive, azure-background, azure-cosmos-db, azure-service-bus, azure-search, azure-active-directory`},
		{"NotBoolean", `{"retryNonIdempotent": "yes"}`, `policy: retryNonIdempotent = "yes"; want true or false`},
		{"HeaderWithSpace", `{"attemptHeader": "X Attempt"}`, `policy: attemptHeader = "X Attempt"; want a header name, such as "X-Attempt"`},
		{"HeaderNotString", `{"attemptHeader": 1}`, `policy: attemptHeader = 1; want a header name, such as "X-Attempt"`},
		{"EmptyHeaderList", `{"serverDelay": {"headers": []}}`, `policy: serverDelay.headers = []; want "all", "none" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit ("none" trusts none)`},
		{"MisspeltHeader", `{"serverDelay": {"headers": ["RetryAfter"]}}`, `policy: serverDelay.headers[0] = "RetryAfter"; did you mean "Retry-After"?`},
		{"UnknownHeader", `{"serverDelay": {"headers": ["Retry-After", "X-Wait"]}}`, `policy: serverDelay.headers[1] = "X-Wait"; want one of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"HeadersWord", `{"serverDelay": {"headers": "some"}}`, `policy: serverDelay.headers = "some"; want "all", "none" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"NoneInHeaderList", `{"serverDelay": {"headers": ["none"]}}`, `policy: serverDelay.headers[0] = "none"; want one of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"NegativeBound", `{"serverDelay": {"bound": "-5s"}}`, `policy: serverDelay.bound = "-5s"; want a duration string >= 0, such as "1.5s"`},
		{"ServerDelayUnknown", `{"serverDelay": {"header": "all"}}`, `policy: serverDelay.header: unknown field; did you mean "headers"?`},
		{"ServerDelayNotObject", `{"serverDelay": "all"}`, `policy: serverDelay = "all"; want a serverDelay object`},
		{"QuotaNegative", `{"quota": {"retryCost": -5}}`, `policy: quota.retryCost = -5; want an integer >= 0 (0: the default)`},
		{"QuotaUnknown", `{"quota": {"cost": 5}}`, `policy: quota.cost: unknown field; want one of capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"QuotaNotObject", `{"quota": 5}`, `policy: quota = 5; want "none" or a quota object`},
		{"QuotaOtherString", `{"quota": "off"}`, `policy: quota = "off"; want "none" or a quota object`},
		{"QuotaFalse", `{"quota": false}`, `policy: quota = false; want "none" or a quota object`},
		{"QuotaType", `{"quota": {"type": "quota", "capacity": 5}}`, `policy: quota.type: unknown field; want one of capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"QuotaTypeBudget", `{"quota": {"type": "budget", "ratio": 0.1}}`, `policy: quota.type = "budget"; want a quota object without "type"; a budget counts requests and goes in "budget": {...}`},
		{"QuotaTypeBudgetAnyCase", `{"quota": {"capacity": 5, "type": "Budget"}}`, `policy: quota.type = "Budget"; want a quota object without "type"; a budget counts requests and goes in "budget": {...}`},
		{"QuotaTypeMisspeltBudget", `{"quota": {"type": "budgett"}}`, `policy: quota.type = "budgett"; want a quota object without "type"; a budget counts requests and goes in "budget": {...}`},
		{"QuotaBudgetMemberInBucket", `{"quota": {"ratio": 0.1}}`, `policy: quota.ratio: unknown field; want one of capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"BudgetUnknown", `{"budget": {"ratio": 0.1, "type": "budget"}}`, `policy: budget.type: unknown field; want one of ratio, minPerSecond, window, maxScopes`},
		{"BudgetNotObject", `{"budget": 0.2}`, `policy: budget = 0.2; want a budget object`},
		{"BudgetMinPerSecond", `{"budget": {"minPerSecond": true}}`, `policy: budget.minPerSecond = true; want a number (0: the default; < 0: no floor)`},
		{"BudgetRatioTooLarge", `{"budget": {"ratio": 1e999}}`, `policy: budget.ratio = 1e999; want a number (0: the default; < 0: none)`},
		{"BudgetNegativeWindow", `{"budget": {"window": "-10s"}}`, `policy: budget.window = "-10s"; want a duration string >= 0, such as "1.5s"`},
		{"BudgetNegativeScopes", `{"budget": {"maxScopes": -1}}`, `policy: budget.maxScopes = -1; want an integer >= 0 (0: the default)`},
		{"BadEndpoint", `{"failover": {"endpoints": ["eu.example.com", "ftp://us.example.com"]}}`, `policy: failover.endpoints[1] = "ftp://us.example.com"; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user (scheme "ftp" is not http or https)`},
		{"EndpointWithPath", `{"failover": {"endpoints": ["h/path"]}}`, `policy: failover.endpoints[0] = "h/path"; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user (a path ("/path"))`},
		{"EndpointNotString", `{"failover": {"endpoints": [443]}}`, `policy: failover.endpoints[0] = 443; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user`},
		{"EndpointsNotList", `{"failover": {"endpoints": "eu.example.com"}}`, `policy: failover.endpoints = "eu.example.com"; want a list of endpoints`},
		{"EndpointsEmpty", `{"failover": {"endpoints": [], "methods": ["GET"]}}`, `policy: failover.endpoints = []; want a non-empty list of endpoints`},
		{"EndpointsTooMany", `{"failover": {"endpoints": ["h0","h1","h2","h3","h4","h5","h6","h7","h8","h9","h10","h11","h12","h13","h14","h15","h16","h17","h18","h19","h20","h21","h22","h23","h24","h25","h26","h27","h28","h29","h30","h31","h32","h33","h34","h35","h36","h37","h38","h39","h40","h41","h42","h43","h44","h45","h46","h47","h48","h49","h50","h51","h52","h53","h54","h55","h56","h57","h58","h59","h60","h61","h62","h63"]}}`, `policy: failover.endpoints = ["h0","h1","h2","h3","h4","h5","h6","h7","h8","h9","h10","h11","...; want a list of at most 63 endpoints (MaxEndpoints), not 64`},
		{"EndpointsNull", `{"failover": {"endpoints": null}}`, `policy: failover.endpoints: missing; want a non-empty list of endpoints`},
		{"FailoverWithoutEndpoints", `{"failover": {}}`, `policy: failover.endpoints: missing; want a non-empty list of endpoints`},
		{"SecondaryWithoutEndpoints", `{"failover": {"mode": "secondaryOnly"}}`, `policy: failover.endpoints: missing; want a non-empty list of endpoints`},
		{"FailoverNotObject", `{"failover": ["b.example.com"]}`, `policy: failover = ["b.example.com"]; want a failover object`},
		{"FailoverUnknown", `{"failover": {"endpoints": ["b"], "locationMode": "primaryOnly"}}`, `policy: failover.locationMode: unknown field; want one of endpoints, mode, methods`},
		{"FailoverMisspelt", `{"failover": {"endpoints": ["b"], "method": ["GET"]}}`, `policy: failover.method: unknown field; did you mean "methods"?`},
		{"MisspeltLocationMode", `{"failover": {"endpoints": ["b"], "mode": "primary-only"}}`, `policy: failover.mode = "primary-only"; did you mean "PrimaryOnly"?`},
		{"UnknownLocationMode", `{"failover": {"endpoints": ["b"], "mode": "nearest"}}`, `policy: failover.mode = "nearest"; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`},
		{"LocationModeNumber", `{"failover": {"endpoints": ["b"], "mode": 1}}`, `policy: failover.mode = 1; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`},
		{"BadMethod", `{"failover": {"endpoints": ["b"], "methods": ["GET", "GET /"]}}`, `policy: failover.methods[1] = "GET /"; want a method name such as GET`},
		{"EmptyMethod", `{"failover": {"endpoints": ["b"], "methods": [""]}}`, `policy: failover.methods[0] = ""; want a method name such as GET`},
		{"MethodsNotList", `{"failover": {"endpoints": ["b"], "methods": "GET"}}`, `policy: failover.methods = "GET"; want a list of method names`},
		{"HedgeQuantileOne", `{"hedge": {"quantile": 1}}`, `policy: hedge.quantile = 1; want a number 0 <= q < 1 (0: delay alone)`},
		{"HedgeNegativeQuantile", `{"hedge": {"quantile": -0.5}}`, `policy: hedge.quantile = -0.5; want a number 0 <= q < 1 (0: delay alone)`},
		{"HedgeNegativeDelay", `{"hedge": {"delay": "-1ms"}}`, `policy: hedge.delay = "-1ms"; want a duration string >= 0, such as "1.5s"`},
		{"HedgeNegativeMinDelay", `{"hedge": {"delay": "1s", "minDelay": "-1ms"}}`, `policy: hedge.minDelay = "-1ms"; want a duration string >= 0, such as "1.5s"`},
		{"HedgeNegativeMax", `{"hedge": {"delay": "1s", "maxHedges": -1}}`, `policy: hedge.maxHedges = -1; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeMaxAboveLimit", `{"hedge": {"quantile": 0.9, "maxHedges": 5}}`, `policy: hedge.maxHedges = 5; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeMaxInt", `{"hedge": {"maxHedges": 9223372036854775807}}`, `policy: hedge.maxHedges = 9223372036854775807; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeUnknown", `{"hedge": {"delay": "1s", "after": "1s"}}`, `policy: hedge.after: unknown field; want one of delay, quantile, minDelay, maxHedges`},
		{"HedgeNotObject", `{"hedge": "100ms"}`, `policy: hedge = "100ms"; want a hedge object`},
		{"HedgeEmpty", `{"hedge": {}}`, `policy: hedge = {}; want a hedge object with a delay > 0 or a quantile > 0; without either it hedges nothing`},
		{"HedgeNothing", `{"hedge": {"delay": "0s", "minDelay": "10ms", "maxHedges": 2}}`, `policy: hedge = {"delay":"0s","minDelay":"10ms","maxHedges":2}; want a hedge object with a delay > 0 or a quantile > 0; without either it hedges nothing`},
		{"HedgeRepeated", `{"hedge": {"delay": "1s", "delay": "2s"}}`, `policy: hedge.delay: repeated field; want it once`},
		{"LimiterBeta", `{"limiter": {"beta": 1}}`, `policy: limiter.beta = 1; want a number 0 <= n < 1 (0: the default)`},
		{"LimiterSmoothing", `{"limiter": {"smoothing": 1.1}}`, `policy: limiter.smoothing = 1.1; want a number 0..1 (0: the default)`},
		{"LimiterNotObject", `{"limiter": true}`, `policy: limiter = true; want a limiter object`},
		{"LimiterThrottleRetriesTooMany", `{"limiter": {"throttleRetries": 101}}`, `policy: limiter.throttleRetries = 101; want an integer -1..100 (0: the default, 5; -1: none)`},
		{"LimiterThrottleRetriesNegative", `{"limiter": {"throttleRetries": -2}}`, `policy: limiter.throttleRetries = -2; want an integer -1..100 (0: the default, 5; -1: none)`},
		{"LimiterUnknown", `{"limiter": {"type": "adaptive"}}`, `policy: limiter.type: unknown field; want one of beta, scale, smoothing, minFillRate, additive, throttleRetries, reference, failFast, maxWait, maxScopes`},
		{"RateNegative", `{"rateLimit": {"rate": -1}}`, `policy: rateLimit.rate = -1; want a number >= 0 (0: no limit)`},
		{"BodyBufferNegative", `{"maxBodyBuffer": -1}`, `policy: maxBodyBuffer = -1; want a byte count >= 1, or 0 for the default`},
		{"NegativeMaxTotalWait", `{"maxTotalWait": "-1s"}`, `policy: maxTotalWait = "-1s"; want a duration string >= 0, such as "1.5s"`},
		{"MaxTotalWaitAsNumber", `{"maxTotalWait": 30}`, `policy: maxTotalWait = 30; want a duration string >= 0, such as "1.5s"`},
		{"NegativeTerminationBuffer", `{"terminationBuffer": "-500ms"}`, `policy: terminationBuffer = "-500ms"; want a duration string >= 0, such as "1.5s"`},
		{"TerminationBufferWithoutUnit", `{"terminationBuffer": "1"}`, `policy: terminationBuffer = "1"; want a duration string >= 0, such as "1.5s"`},
		{"TerminationBufferNotShorter", `{"maxTotalTime": "2s", "terminationBuffer": "2s"}`, `policy: TerminationBuffer = 2s is not shorter than MaxTotalTime = 2s; no retry could start`},
		{"PenaltyStatus99", `{"penalty": {"statuses": [503, 99], "delay": "1s"}}`, `policy: penalty.statuses[1] = 99; want an HTTP status 100..599`},
		{"PenaltyStatus600", `{"penalty": {"statuses": [600], "delay": "1s"}}`, `policy: penalty.statuses[0] = 600; want an HTTP status 100..599`},
		{"PenaltyStatusFraction", `{"penalty": {"statuses": [503.5]}}`, `policy: penalty.statuses[0] = 503.5; want an HTTP status 100..599`},
		{"PenaltyStatusString", `{"penalty": {"statuses": ["503"]}}`, `policy: penalty.statuses[0] = "503"; want an HTTP status 100..599`},
		{"PenaltyStatusesNotList", `{"penalty": {"statuses": 503}}`, `policy: penalty.statuses = 503; want a list of HTTP statuses`},
		{"PenaltyEmptyCode", `{"penalty": {"codes": ["ServerBusy", ""], "delay": "1s"}}`, `policy: penalty.codes[1] = ""; want a non-empty error code`},
		{"PenaltyCodeNotString", `{"penalty": {"codes": [7]}}`, `policy: penalty.codes[0] = 7; want a non-empty error code`},
		{"PenaltyCodesNotList", `{"penalty": {"codes": "ServerBusy"}}`, `policy: penalty.codes = "ServerBusy"; want a list of error codes`},
		{"PenaltyNegativeDelay", `{"penalty": {"codes": ["ServerBusy"], "delay": "-10s"}}`, `policy: penalty.delay = "-10s"; want a duration string >= 0, such as "1.5s"`},
		{"PenaltyDelayAsNumber", `{"penalty": {"codes": ["ServerBusy"], "delay": 10}}`, `policy: penalty.delay = 10; want a duration string >= 0, such as "1.5s"`},
		{"PenaltyNegativeFor", `{"penalty": {"codes": ["ServerBusy"], "delay": "10s", "for": "-1s"}}`, `policy: penalty.for = "-1s"; want a duration string >= 0, such as "1.5s"`},
		{"PenaltyUnknown", `{"penalty": {"codes": ["ServerBusy"], "delay": "10s", "duration": "10s"}}`, `policy: penalty.duration: unknown field; want one of codes, statuses, delay, for`},
		{"PenaltyCaseMatters", `{"penalty": {"Codes": ["ServerBusy"]}}`, `policy: penalty.Codes: unknown field; did you mean "codes"?`},
		{"PenaltyRepeated", `{"penalty": {"delay": "1s", "delay": "2s"}}`, `policy: penalty.delay: repeated field; want it once`},
		{"PenaltyNotObject", `{"penalty": "10s"}`, `policy: penalty = "10s"; want a penalty object`},
		{"PenaltyWithoutSignal", `{"penalty": {"codes": [], "delay": "10s"}}`, `policy: penalty = {"codes":[],"delay":"10s"}; want a penalty object with a delay > 0 and codes or statuses; without them it never applies`},
		{"PenaltyWithoutDelay", `{"penalty": {"codes": ["ServerBusy"], "for": "10s"}}`, `policy: penalty = {"codes":["ServerBusy"],"for":"10s"}; want a penalty object with a delay > 0 and codes or statuses; without them it never applies`},
		{"PenaltyZeroDelay", `{"penalty": {"statuses": [503], "delay": "0s"}}`, `policy: penalty = {"statuses":[503],"delay":"0s"}; want a penalty object with a delay > 0 and codes or statuses; without them it never applies`},
		{"PenaltyEmpty", `{"penalty": {}}`, `policy: penalty = {}; want a penalty object with a delay > 0 and codes or statuses; without them it never applies`},
		{"MovedAdaptive", `{"adaptive": true}`, `policy: adaptive: moved; write "limiter": {} (AWS adaptive mode's limiter, with its defaults)`},
		{"MovedAdaptiveFalse", `{"adaptive": false}`, `policy: adaptive: moved; false is the default, so remove the member`},
		{"MovedDisableQuotaFalse", `{"disableQuota": false}`, `policy: disableQuota: moved; false is the default, so remove the member`},
		{"MovedIgnoreDelayHeadersFalse", `{"ignoreDelayHeaders": false}`, `policy: ignoreDelayHeaders: moved; false is the default, so remove the member`},
		{"MovedDisableQuota", `{"disableQuota": true}`, `policy: disableQuota: moved; write "quota": "none"`},
		{"MovedDelayHeaders", `{"delayHeaders": ["Retry-After"]}`, `policy: delayHeaders: moved; write "serverDelay": {"headers": [...]}`},
		{"MovedIgnoreDelayHeaders", `{"ignoreDelayHeaders": true}`, `policy: ignoreDelayHeaders: moved; write "serverDelay": {"headers": "none"}`},
		{"MovedServerDelayBound", `{"serverDelayBound": "5s"}`, `policy: serverDelayBound: moved; write "serverDelay": {"bound": "5s"}`},
		{"MovedEndpoints", `{"endpoints": ["b.example.com"]}`, `policy: endpoints: moved; write "failover": {"endpoints": [...]}`},
		{"MovedLocationMode", `{"locationMode": "SecondaryOnly"}`, `policy: locationMode: moved; write "failover": {"mode": "..."}`},
		{"MovedFailoverMethods", `{"failoverMethods": ["GET"]}`, `policy: failoverMethods: moved; write "failover": {"methods": [...]}`},
		{"MovedFailoverMethodsNull", `{"failoverMethods": null}`, `policy: failoverMethods: moved; null is the default, so remove the member`},
		{"Status", `{"classifier": {"fatalStatuses": [500, 600]}}`, `policy: classifier.fatalStatuses[1] = 600; want an HTTP status 100..599`},
		{"EmptyCode", `{"classifier": {"throttlingCodes": [""]}}`, `policy: classifier.throttlingCodes[0] = ""; want a non-empty error code`},
		{"StatusesNotList", `{"classifier": {"transientStatuses": 503}}`, `policy: classifier.transientStatuses = 503; want a list of HTTP statuses`},
		{"NotObject", `[1, 2]`, `policy: document = [1,2]; want a policy object`},
		{"Validate", `{"attemptTimeout": "3s", "maxTotalTime": "2s"}`, `policy: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`},
		{"Empty", ``, `policy: empty document; want a JSON object`},
		{"Trailing", `{} {}`, `policy: line 1, column 4: unexpected data after the JSON document`},
		{"TrailingGarbage", `{}x`, `policy: line 1, column 3: unexpected data after the JSON document`},
		{"TrailingOnLaterLine", "{}\n\n  {}", `policy: line 3, column 3: unexpected data after the JSON document`},
		{"Syntax", `{"maxAttempts": }`, `policy: line 1, column 17: invalid JSON: invalid character '}' looking for beginning of value`},
		{"SyntaxOnLaterLine", "{\n  \"maxAttempts\": 3,\n  \"backoff\": {\"type\": \"constant\",}\n}", `policy: line 3, column 34: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"SyntaxAfterCRLF", "{\r\n\"a\": x}", `policy: line 2, column 6: invalid JSON: invalid character 'x' looking for beginning of value`},
		{"Truncated", "{\"maxAttempts\": 3,\n", `policy: line 2, column 1: invalid JSON: unexpected EOF`},
		{"TruncatedInLine", `{"maxAttempts": 3`, `policy: line 1, column 18: invalid JSON: unexpected EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.doc)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Load(%s) error = %v; want %s", tt.doc, err, tt.want)
			}
		})
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	_, err := load(`{"maxAttempts": -1, "maxDelay": "x", "backoff": {"type": "nope"}, "extra": 1,
		"maxTotalWait": "-1s", "penalty": {"statuses": [99, 600], "codes": [""], "for": 1, "x": 1},
		"failover": {"endpoints": ["ftp://h", "h", "h/x"]}, "hedge": {"quantile": 1, "maxHedges": -2},
		"locationMode": "primaryOnly"}`)
	var fields []string
	for _, e := range unwrapAll(err) {
		var fe *policy.FieldError
		if !errors.As(e, &fe) {
			t.Errorf("Load error %q is a %T; want a *policy.FieldError", e, e)
			continue
		}
		fields = append(fields, fe.Field)
	}
	want := []string{"maxAttempts", "maxDelay", "backoff.type", "extra", "maxTotalWait",
		"penalty.statuses[0]", "penalty.statuses[1]", "penalty.codes[0]", "penalty.for", "penalty.x",
		"failover.endpoints[0]", "failover.endpoints[2]", "hedge.quantile", "hedge.maxHedges", "locationMode"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("Load of fifteen bad values: fields of the errors mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMalformedJSONWrapsSyntaxError(t *testing.T) {
	_, err := load("{\n  \"maxAttempts\": }")
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("Load(malformed) error = %v; want one that wraps a *json.SyntaxError", err)
	}
	var pe *policy.SyntaxError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Column != 18 || pe.File != "" {
		t.Errorf("Load(malformed) error = %#v; want a *policy.SyntaxError at line 2, column 18", pe)
	}
}

func TestLoadMakesFreshPointers(t *testing.T) {
	doc := `{"quota": {}, "budget": {}, "limiter": {}, "rateLimit": {"rate": 1}, "breaker": {}, "concurrency": {"type": "fixed"},
		"penalty": {"statuses": [503], "delay": "1s"}, "failover": {"endpoints": ["b"]}, "hedge": {"delay": "1s"}}`
	a, errA := load(doc)
	b, errB := load(doc)
	if errA != nil || errB != nil {
		t.Fatalf("Load(%s) errors = %v, %v; want nil", doc, errA, errB)
	}
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"Quota", a.Quota, b.Quota}, {"Budget", a.Budget, b.Budget}, {"Limiter", a.Limiter, b.Limiter}, {"RateLimit", a.RateLimit, b.RateLimit},
		{"Breaker", a.Breaker, b.Breaker}, {"Concurrency", a.Concurrency, b.Concurrency},
		{"Penalty", a.Penalty, b.Penalty}, {"Failover", a.Failover, b.Failover}, {"Hedge", a.Hedge, b.Hedge},
	} {
		if reflect.ValueOf(f.a).IsNil() || f.a == f.b {
			t.Errorf("two Loads of %s: %s = %p, %p; want two different pointers", doc, f.name, f.a, f.b)
		}
	}
}

func TestLoadEmptyClassifierLeavesClassifyNil(t *testing.T) {
	p, err := load(`{"classifier": {"fatalStatuses": [], "throttlingCodes": []}}`)
	if err != nil || p.Classify != nil {
		t.Errorf("Load(empty classifier) = Classify set %t, error %v; want nil, nil", p.Classify != nil, err)
	}
}

func TestPolicyUnmarshalJSONInStruct(t *testing.T) {
	var cfg struct {
		Name  string        `json:"name"`
		Retry policy.Policy `json:"retry"`
	}
	err := json.Unmarshal([]byte(`{"name": "svc", "retry": {"preset": "none", "maxDelay": "1s"}}`), &cfg)
	if err != nil {
		t.Fatalf("json.Unmarshal error = %v; want nil", err)
	}
	want := policy.Policy{MaxAttempts: 1, MaxDelay: time.Second}
	if diff := cmp.Diff(want, cfg.Retry, policyOpts); diff != "" {
		t.Errorf("json.Unmarshal(retry) mismatch (-want +got):\n%s", diff)
	}
	err = json.Unmarshal([]byte(`{"retry": {"maxAttempts": -1}}`), &cfg)
	if err == nil || !strings.Contains(err.Error(), "policy: maxAttempts = -1") {
		t.Errorf("json.Unmarshal(bad retry) error = %v; want the policy's error", err)
	}
	keep := policy.Policy{MaxAttempts: 9}
	if err := keep.UnmarshalJSON([]byte("null")); err != nil || keep.MaxAttempts != 9 {
		t.Errorf("UnmarshalJSON(null) = %v, MaxAttempts %d; want nil, 9 (unchanged)", err, keep.MaxAttempts)
	}
	for _, data := range []string{`{} xx`, `{"maxAttempts": }`, ``} {
		if err := keep.UnmarshalJSON([]byte(data)); err == nil || keep.MaxAttempts != 9 {
			t.Errorf("UnmarshalJSON(%q) = %v, MaxAttempts %d; want an error, 9 (unchanged)", data, err, keep.MaxAttempts)
		}
	}
}

// unwrapAll returns the errors joined in err, or err alone.
func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// movedMemberValues are the members of an earlier schema, each with a value
// that sets something and the member it moved to.
var movedMemberValues = []struct{ name, value, to string }{
	{"adaptive", "true", "limiter"},
	{"disableQuota", "true", "quota"},
	{"delayHeaders", `["Retry-After"]`, "serverDelay"},
	{"ignoreDelayHeaders", "true", "serverDelay"},
	{"serverDelayBound", `"5s"`, "serverDelay"},
	{"endpoints", `["b.example.com"]`, "failover"},
	{"locationMode", `"SecondaryOnly"`, "failover"},
	{"failoverMethods", `["GET"]`, "failover"},
}

// TestLoadMovedMembersName their new member: each member of an earlier
// schema that sets something is a *FieldError whose Suggestion is the
// member it moved to.
func TestLoadMovedMembersNameTheirNewMember(t *testing.T) {
	for _, m := range movedMemberValues {
		doc := `{"` + m.name + `": ` + m.value + `}`
		_, err := load(doc)
		var fe *policy.FieldError
		if !errors.As(err, &fe) || fe.Field != m.name || fe.Value != "" || fe.Suggestion != m.to || !strings.HasPrefix(fe.Want, "moved; write \""+m.to+"\": ") {
			t.Errorf("Load(%s) error = %#v; want a *policy.FieldError for %s whose Want says to write %q and whose Suggestion is %q", doc, fe, m.name, m.to, m.to)
		}
	}
}

// A moved member set to its default, null or, for a flag, false, is to be
// removed: the setting it moved to would do the opposite.
func TestLoadMovedMembersAtTheirDefaultAreToBeRemoved(t *testing.T) {
	var docs []string
	for _, m := range movedMemberValues {
		docs = append(docs, `{"`+m.name+`": null}`)
		if m.value == "true" {
			docs = append(docs, `{"`+m.name+`": false}`)
		}
	}
	for _, doc := range docs {
		_, err := load(doc)
		var fe *policy.FieldError
		if !errors.As(err, &fe) || fe.Suggestion != "" || !strings.HasPrefix(fe.Want, "moved; ") || !strings.HasSuffix(fe.Want, " is the default, so remove the member") {
			t.Errorf("Load(%s) error = %#v; want a *policy.FieldError whose Want says to remove the member, without a Suggestion", doc, fe)
		}
	}
}
