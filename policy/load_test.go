package policy_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// policyOpts compares Policies field by field: the func fields are left to
// behaviour tests, and the limiters by their settings, not their state.
var policyOpts = cmp.Options{
	cmpopts.IgnoreFields(policy.Policy{}, "Classify", "Scope"),
	cmpopts.IgnoreUnexported(ratelimit.Quota{}, ratelimit.Budget{}, ratelimit.Adaptive{}, ratelimit.Fixed{}),
}

// load is Load of doc, a string.
func load(doc string) (policy.Policy, error) { return policy.Load(strings.NewReader(doc)) }

// fullDocument sets every member of the schema.
const fullDocument = `{
 "maxAttempts": 5, "maxDelay": "20s",
 "backoff": {"type": "fullJitter", "base": "1s", "max": "20s"},
 "throttleBackoff": {"type": "equalJitter", "base": "2s"},
 "delayHeaders": ["Retry-After", "x-amz-retry-after"], "ignoreDelayHeaders": false,
 "serverDelayBound": "5s", "attemptTimeout": "2s", "maxTotalTime": "60s",
 "maxTotalWait": "45s", "terminationBuffer": "500ms",
 "penalty": {"codes": ["ServerBusy"], "statuses": [503, 429], "delay": "10s", "for": "15s"},
 "quota": {"capacity": 500, "retryCost": 5, "timeoutCost": 10, "throttleCost": 5,
           "successIncrement": 1, "refillPerSecond": 0.5, "wait": true, "maxScopes": 100},
 "budget": {"ratio": 0.1, "minPerSecond": -1, "window": "30s", "maxScopes": 50},
 "disableQuota": false, "retryNonIdempotent": true, "maxBodyBuffer": 1048576, "maxDrain": 65536,
 "readTimeout": "250ms", "adaptive": true, "attemptHeader": "X-Attempt", "ignoreSDKAttempts": true,
 "limiter": {"beta": 0.7, "scale": 0.4, "smoothing": 0.8, "minFillRate": 0.5, "additive": 10,
             "reference": true, "failFast": true, "maxWait": "1s", "maxScopes": 10},
 "rateLimit": {"rate": 10, "burst": 2, "failFast": true, "maxWait": "1.5s", "maxScopes": 3},
 "endpoints": ["eu.example.com", "https://us.example.com:8443"], "locationMode": "secondarythenprimary",
 "failoverMethods": ["GET", "HEAD", "PUT"],
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
		DelayHeaders:       retryafter.RetryAfter | retryafter.AmzRetryAfter,
		ServerDelayBound:   5 * time.Second,
		AttemptTimeout:     2 * time.Second,
		MaxTotalTime:       time.Minute,
		MaxTotalWait:       45 * time.Second,
		TerminationBuffer:  500 * time.Millisecond,
		Penalty:            policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503, 429}, Delay: 10 * time.Second, For: 15 * time.Second},
		Quota:              &ratelimit.Quota{Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, SuccessIncrement: 1, RefillPerSecond: 0.5, Wait: true, MaxScopes: 100},
		Budget:             &ratelimit.Budget{Ratio: 0.1, MinPerSecond: -1, Window: 30 * time.Second, MaxScopes: 50},
		RetryNonIdempotent: true,
		MaxBodyBuffer:      1 << 20,
		Adaptive:           true,
		Limiter:            &ratelimit.Adaptive{Beta: 0.7, Scale: 0.4, Smoothing: 0.8, MinFillRate: 0.5, Additive: 10, Reference: true, FailFast: true, MaxWait: time.Second, MaxScopes: 10},
		RateLimit:          &ratelimit.Fixed{Rate: 10, Burst: 2, FailFast: true, MaxWait: 1500 * time.Millisecond, MaxScopes: 3},
		Endpoints:          []string{"eu.example.com", "https://us.example.com:8443"},
		LocationMode:       policy.SecondaryThenPrimary,
		FailoverMethods:    []string{"GET", "HEAD", "PUT"},
		Hedge:              policy.Hedge{Delay: 100 * time.Millisecond, Quantile: 0.95, MinDelay: 20 * time.Millisecond, MaxHedges: 2},
		MaxDrain:           64 << 10,
		ReadTimeout:        250 * time.Millisecond,
		AttemptHeader:      "X-Attempt",
		IgnoreSDKAttempts:  true,
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
	want.Quota = &ratelimit.Quota{Capacity: 50}
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

func TestLoadDelayHeaders(t *testing.T) {
	tests := []struct {
		doc  string
		want retryafter.Source
	}{
		{`"all"`, retryafter.AllSources},
		{`"ALL"`, retryafter.AllSources},
		{`["retry-after"]`, retryafter.RetryAfter},
		{`["RateLimit", "X-RateLimit-Reset", "ratelimit"]`, retryafter.IETFRateLimit | retryafter.RateLimitReset},
		{`["Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "x-amz-retry-after", "X-RateLimit-Reset", "RateLimit"]`, retryafter.AllSources},
	}
	for _, tt := range tests {
		got, err := load(`{"delayHeaders": ` + tt.doc + `}`)
		if err != nil || got.DelayHeaders != tt.want {
			t.Errorf("Load(delayHeaders %s) = %v, %v; want %v, nil", tt.doc, got.DelayHeaders, err, tt.want)
		}
	}
}

// oldQuotaDocument is a quota as documents wrote it before budgets
// existed: an object without a type.
const oldQuotaDocument = `{"quota": {"capacity": 50, "retryCost": 2, "refillPerSecond": 0.5, "wait": true}}`

func TestLoadQuotaWithoutTypeIsABucketAsBefore(t *testing.T) {
	got, err := load(oldQuotaDocument)
	if err != nil {
		t.Fatalf("Load(%s) error = %v; want nil", oldQuotaDocument, err)
	}
	want := &ratelimit.Quota{Capacity: 50, RetryCost: 2, RefillPerSecond: 0.5, Wait: true}
	if diff := cmp.Diff(ratelimit.RetryQuota(want), got.Quota, policyOpts); diff != "" {
		t.Errorf("Load(%s).Quota mismatch (-want +got):\n%s", oldQuotaDocument, diff)
	}
	b, err := got.MarshalJSON()
	if wantDoc := `{"quota":{"capacity":50,"retryCost":2,"refillPerSecond":0.5,"wait":true}}`; err != nil || string(b) != wantDoc {
		t.Errorf("MarshalJSON(Load(%s)) = %s, %v; want %s, nil (no type member)", oldQuotaDocument, b, err, wantDoc)
	}
}

func TestLoadQuotaType(t *testing.T) {
	tests := []struct {
		doc  string
		want ratelimit.RetryQuota
	}{
		{`{}`, &ratelimit.Quota{}},
		{`{"type": null, "capacity": 5}`, &ratelimit.Quota{Capacity: 5}},
		{`{"type": "quota", "capacity": 5}`, &ratelimit.Quota{Capacity: 5}},
		{`{"capacity": 5, "type": "QUOTA"}`, &ratelimit.Quota{Capacity: 5}},
		{`{"type": "budget"}`, &ratelimit.Budget{}},
		{`{"ratio": -1, "type": "Budget", "minPerSecond": 2.5, "window": "1m", "maxScopes": 7}`, &ratelimit.Budget{Ratio: -1, MinPerSecond: 2.5, Window: time.Minute, MaxScopes: 7}},
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
		got, err := load(`{"failoverMethods": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(failoverMethods %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.FailoverMethods); diff != "" {
			t.Errorf("Load(failoverMethods %s).FailoverMethods mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

func TestLoadPenaltyKeepsEmptyLists(t *testing.T) {
	tests := []struct {
		doc  string
		want policy.Penalty
	}{
		{`null`, policy.Penalty{}},
		{`{}`, policy.Penalty{}},
		{`{"codes": null, "statuses": null}`, policy.Penalty{}},
		{`{"codes": [], "statuses": []}`, policy.Penalty{Codes: []string{}, Statuses: []int{}}},
		{`{"statuses": [100, 599], "delay": "1s"}`, policy.Penalty{Statuses: []int{100, 599}, Delay: time.Second}},
		{`{"for": "1m", "delay": "10s", "codes": ["ServerBusy", "serverbusy"]}`, policy.Penalty{Codes: []string{"ServerBusy", "serverbusy"}, Delay: 10 * time.Second, For: time.Minute}},
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

// oldDocument is a policy as MarshalJSON wrote it before MaxTotalWait,
// TerminationBuffer and Penalty existed.
const oldDocument = `{"maxAttempts":4,"backoff":{"type":"constant","interval":"500ms","fastFirstRetry":true},"maxTotalTime":"2s","classifier":{"fatalStatuses":[501]},"quota":{"capacity":50},"endpoints":[],"failoverMethods":[],"hedge":{"delay":"100ms"}}`

func TestLoadOldDocumentLeavesNewFieldsZero(t *testing.T) {
	got, err := load(oldDocument)
	if err != nil {
		t.Fatalf("Load(%s) error = %v; want nil", oldDocument, err)
	}
	if got.MaxTotalWait != 0 || got.TerminationBuffer != 0 {
		t.Errorf("Load(%s) = MaxTotalWait %v, TerminationBuffer %v; want 0, 0", oldDocument, got.MaxTotalWait, got.TerminationBuffer)
	}
	if diff := cmp.Diff(policy.Penalty{}, got.Penalty); diff != "" {
		t.Errorf("Load(%s).Penalty mismatch (-want +got):\n%s", oldDocument, diff)
	}
	got.Classify = nil
	b, err := got.MarshalJSON()
	want := strings.Replace(oldDocument, `"classifier":{"fatalStatuses":[501]},`, "", 1)
	if err != nil || string(b) != want {
		t.Errorf("MarshalJSON(Load(%s)) without Classify = %s, %v; want %s, nil", oldDocument, b, err, want)
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
		doc := `{"endpoints": ["b.example.com"], "locationMode": "` + tt.name + `"}`
		got, err := load(doc)
		if err != nil || got.LocationMode != tt.want {
			t.Errorf("Load(%s).LocationMode = %v, %v; want %v, nil", doc, got.LocationMode, err, tt.want)
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
		{"UnknownTopFieldNothingClose", `{"retries": 3}`, `policy: retries: unknown field; want one of preset, maxAttempts, backoff, throttleBackoff, maxDelay, delayHeaders, serverDelayBound, ignoreDelayHeaders, attemptTimeout, maxTotalTime, maxTotalWait, terminationBuffer, penalty, classifier, quota, disableQuota, budget, retryNonIdempotent, maxBodyBuffer, adaptive, limiter, rateLimit, endpoints, locationMode, failoverMethods, hedge, maxDrain, readTimeout, attemptHeader, ignoreSDKAttempts`},
		{"RepeatedField", `{"maxAttempts": 3, "maxAttempts": 4}`, `policy: maxAttempts: repeated field; want it once`},
		{"PresetGoName", `{"preset": "AzureBackground"}`, `policy: preset = "AzureBackground"; did you mean "azure-background"?`},
		{"MisspeltPreset", `{"preset": "standrad"}`, `policy: preset = "standrad"; did you mean "standard"?`},
		{"UnknownPreset", `{"preset": "fast"}`, `policy: preset = "fast"; want one of standard, adaptive, none, standard-v2, kotlin-standard, kotlin-adaptive, sns-aws-managed, sns-customer-managed, azure-storage-exponential, azure-storage-linear, azure-storage-interactive, azure-storage-background, azure-interactive, azure-background, azure-cosmos-db, azure-service-bus, azure-search, azure-active-directory`},
		{"NotBoolean", `{"adaptive": "yes"}`, `policy: adaptive = "yes"; want true or false`},
		{"HeaderWithSpace", `{"attemptHeader": "X Attempt"}`, `policy: attemptHeader = "X Attempt"; want a header name, such as "X-Attempt"`},
		{"HeaderNotString", `{"attemptHeader": 1}`, `policy: attemptHeader = 1; want a header name, such as "X-Attempt"`},
		{"EmptyHeaderList", `{"delayHeaders": []}`, `policy: delayHeaders = []; want "all" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit (ignoreDelayHeaders trusts none)`},
		{"MisspeltHeader", `{"delayHeaders": ["RetryAfter"]}`, `policy: delayHeaders[0] = "RetryAfter"; did you mean "Retry-After"?`},
		{"UnknownHeader", `{"delayHeaders": ["Retry-After", "X-Wait"]}`, `policy: delayHeaders[1] = "X-Wait"; want one of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"HeadersWord", `{"delayHeaders": "some"}`, `policy: delayHeaders = "some"; want "all" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"QuotaNegative", `{"quota": {"retryCost": -5}}`, `policy: quota.retryCost = -5; want an integer >= 0 (0: the default)`},
		{"QuotaUnknown", `{"quota": {"cost": 5}}`, `policy: quota.cost: unknown field; want one of type, capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"QuotaNotObject", `{"quota": 5}`, `policy: quota = 5; want a quota object`},
		{"QuotaUnknownType", `{"quota": {"type": "bucket", "capacity": 5}}`, `policy: quota.type = "bucket"; want quota or budget`},
		{"QuotaMisspeltType", `{"quota": {"type": "budgett"}}`, `policy: quota.type = "budgett"; did you mean "budget"?`},
		{"QuotaTypeNotString", `{"quota": {"type": 1}}`, `policy: quota.type = 1; want quota or budget`},
		{"QuotaBudgetMemberInBucket", `{"quota": {"ratio": 0.1}}`, `policy: quota.ratio: unknown field; want one of type, capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"QuotaBucketMemberInBudget", `{"quota": {"type": "budget", "capacity": 5}}`, `policy: quota.capacity: unknown field; want one of type, ratio, minPerSecond, window, maxScopes`},
		{"QuotaBudgetRatio", `{"quota": {"type": "budget", "ratio": "x"}}`, `policy: quota.ratio = "x"; want a number (0: the default; < 0: none)`},
		{"BudgetUnknown", `{"budget": {"ratio": 0.1, "type": "budget"}}`, `policy: budget.type: unknown field; want one of ratio, minPerSecond, window, maxScopes`},
		{"BudgetNotObject", `{"budget": 0.2}`, `policy: budget = 0.2; want a budget object`},
		{"BudgetMinPerSecond", `{"budget": {"minPerSecond": true}}`, `policy: budget.minPerSecond = true; want a number (0: the default; < 0: no floor)`},
		{"BudgetRatioTooLarge", `{"budget": {"ratio": 1e999}}`, `policy: budget.ratio = 1e999; want a number (0: the default; < 0: none)`},
		{"BudgetNegativeWindow", `{"budget": {"window": "-10s"}}`, `policy: budget.window = "-10s"; want a duration string >= 0, such as "1.5s"`},
		{"BudgetNegativeScopes", `{"budget": {"maxScopes": -1}}`, `policy: budget.maxScopes = -1; want an integer >= 0 (0: the default)`},
		{"BadEndpoint", `{"endpoints": ["eu.example.com", "ftp://us.example.com"]}`, `policy: endpoints[1] = "ftp://us.example.com"; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user (scheme "ftp" is not http or https)`},
		{"EndpointWithPath", `{"endpoints": ["h/path"]}`, `policy: endpoints[0] = "h/path"; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user (a path ("/path"))`},
		{"EndpointNotString", `{"endpoints": [443]}`, `policy: endpoints[0] = 443; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user`},
		{"EndpointsNotList", `{"endpoints": "eu.example.com"}`, `policy: endpoints = "eu.example.com"; want a list of endpoints`},
		{"MisspeltLocationMode", `{"locationMode": "primary-only"}`, `policy: locationMode = "primary-only"; did you mean "PrimaryOnly"?`},
		{"UnknownLocationMode", `{"locationMode": "nearest"}`, `policy: locationMode = "nearest"; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`},
		{"LocationModeNumber", `{"locationMode": 1}`, `policy: locationMode = 1; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`},
		{"SecondaryWithoutEndpoints", `{"locationMode": "secondaryOnly"}`, `policy: LocationMode = SecondaryOnly but Endpoints is empty; want at least one secondary`},
		{"BadMethod", `{"failoverMethods": ["GET", "GET /"]}`, `policy: failoverMethods[1] = "GET /"; want a method name such as GET`},
		{"EmptyMethod", `{"failoverMethods": [""]}`, `policy: failoverMethods[0] = ""; want a method name such as GET`},
		{"MethodsNotList", `{"failoverMethods": "GET"}`, `policy: failoverMethods = "GET"; want a list of method names`},
		{"HedgeQuantileOne", `{"hedge": {"quantile": 1}}`, `policy: hedge.quantile = 1; want a number 0 <= q < 1 (0: delay alone)`},
		{"HedgeNegativeQuantile", `{"hedge": {"quantile": -0.5}}`, `policy: hedge.quantile = -0.5; want a number 0 <= q < 1 (0: delay alone)`},
		{"HedgeNegativeDelay", `{"hedge": {"delay": "-1ms"}}`, `policy: hedge.delay = "-1ms"; want a duration string >= 0, such as "1.5s"`},
		{"HedgeNegativeMinDelay", `{"hedge": {"minDelay": "-1ms"}}`, `policy: hedge.minDelay = "-1ms"; want a duration string >= 0, such as "1.5s"`},
		{"HedgeNegativeMax", `{"hedge": {"maxHedges": -1}}`, `policy: hedge.maxHedges = -1; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeMaxAboveLimit", `{"hedge": {"maxHedges": 5}}`, `policy: hedge.maxHedges = 5; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeMaxInt", `{"hedge": {"maxHedges": 9223372036854775807}}`, `policy: hedge.maxHedges = 9223372036854775807; want an integer 1..4 (HedgeLimit), or 0 for 1`},
		{"HedgeUnknown", `{"hedge": {"delay": "1s", "after": "1s"}}`, `policy: hedge.after: unknown field; want one of delay, quantile, minDelay, maxHedges`},
		{"HedgeNotObject", `{"hedge": "100ms"}`, `policy: hedge = "100ms"; want a hedge object`},
		{"LimiterBeta", `{"limiter": {"beta": 1}}`, `policy: limiter.beta = 1; want a number 0 <= n < 1 (0: the default)`},
		{"LimiterSmoothing", `{"limiter": {"smoothing": 1.1}}`, `policy: limiter.smoothing = 1.1; want a number 0..1 (0: the default)`},
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
		{"PenaltyWithoutSignal", `{"penalty": {"codes": [], "delay": "10s"}}`, `policy: Penalty.Delay = 10s but no Codes or Statuses start it`},
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
		"endpoints": ["ftp://h", "h", "h/x"], "hedge": {"quantile": 1, "maxHedges": -2}}`)
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
		"endpoints[0]", "endpoints[2]", "hedge.quantile", "hedge.maxHedges"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("Load of fourteen bad values: fields of the errors mismatch (-want +got):\n%s", diff)
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
	for _, doc := range []string{
		`{"quota": {}, "budget": {}, "limiter": {}, "rateLimit": {"rate": 1}}`,
		`{"quota": {"type": "budget"}, "budget": {}, "limiter": {}, "rateLimit": {"rate": 1}}`,
	} {
		a, errA := load(doc)
		b, errB := load(doc)
		if errA != nil || errB != nil {
			t.Fatalf("Load(%s) errors = %v, %v; want nil", doc, errA, errB)
		}
		if a.Quota == b.Quota || a.Budget == b.Budget || a.Limiter == b.Limiter || a.RateLimit == b.RateLimit {
			t.Errorf("two Loads of %s share pointers: Quota %t, Budget %t, Limiter %t, RateLimit %t; want none shared", doc, a.Quota == b.Quota, a.Budget == b.Budget, a.Limiter == b.Limiter, a.RateLimit == b.RateLimit)
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
