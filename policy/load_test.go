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
	cmpopts.IgnoreUnexported(ratelimit.Quota{}, ratelimit.Adaptive{}, ratelimit.Fixed{}),
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
 "quota": {"capacity": 500, "retryCost": 5, "timeoutCost": 10, "throttleCost": 5,
           "successIncrement": 1, "refillPerSecond": 0.5, "wait": true, "maxScopes": 100},
 "disableQuota": false, "retryNonIdempotent": true, "maxBodyBuffer": 1048576, "maxDrain": 65536,
 "readTimeout": "250ms", "adaptive": true, "attemptHeader": "X-Attempt", "ignoreSDKAttempts": true,
 "limiter": {"beta": 0.7, "scale": 0.4, "smoothing": 0.8, "minFillRate": 0.5, "additive": 10,
             "reference": true, "failFast": true, "maxWait": "1s", "maxScopes": 10},
 "rateLimit": {"rate": 10, "burst": 2, "failFast": true, "maxWait": "1.5s", "maxScopes": 3},
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
		Quota:              &ratelimit.Quota{Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, SuccessIncrement: 1, RefillPerSecond: 0.5, Wait: true, MaxScopes: 100},
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
		{"UnknownType", `{"backoff": {"type": "fulljitterx"}}`, `policy: backoff.type = "fulljitterx"; want one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"MissingType", `{"throttleBackoff": {"base": "1s"}}`, `policy: throttleBackoff.type: missing; want one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"UnknownStrategyField", `{"backoff": {"type": "fullJitter", "bas": "1s"}}`, `policy: backoff.bas: unknown field; want one of type, base, max`},
		{"NestedStrategy", `{"backoff": {"type": "capped", "strategy": {"type": "constant", "interval": "x"}}}`, `policy: backoff.strategy.interval = "x"; want a duration string >= 0, such as "1.5s"`},
		{"BadCurve", `{"backoff": {"type": "schedule", "backoffFunction": "cubic"}}`, `policy: backoff.backoffFunction = "cubic"; want linear, arithmetic, exponential or geometric`},
		{"ScaleFactorBelowOne", `{"backoff": {"type": "scaledJitter", "scaleFactor": 0.5}}`, `policy: backoff.scaleFactor = 0.5; want a number >= 1, or 0 for the default`},
		{"JitterAboveOne", `{"backoff": {"type": "jittered", "fraction": 1.5}}`, `policy: backoff.fraction = 1.5; want a number 0..1 (0: the default)`},
		{"NegativeCount", `{"backoff": {"type": "schedule", "numRetries": -1}}`, `policy: backoff.numRetries = -1; want an integer >= 0 (0: the default)`},
		{"StrategyNotObject", `{"backoff": "fullJitter"}`, `policy: backoff = "fullJitter"; want a strategy object whose type is one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"UnknownTopField", `{"maxAttempt": 3}`, `policy: maxAttempt: unknown field; want one of preset, maxAttempts, backoff, throttleBackoff, maxDelay, delayHeaders, serverDelayBound, ignoreDelayHeaders, attemptTimeout, maxTotalTime, classifier, quota, disableQuota, retryNonIdempotent, maxBodyBuffer, adaptive, limiter, rateLimit, maxDrain, readTimeout, attemptHeader, ignoreSDKAttempts`},
		{"CaseMatters", `{"MaxAttempts": 3}`, `policy: MaxAttempts: unknown field; want one of preset, maxAttempts, backoff, throttleBackoff, maxDelay, delayHeaders, serverDelayBound, ignoreDelayHeaders, attemptTimeout, maxTotalTime, classifier, quota, disableQuota, retryNonIdempotent, maxBodyBuffer, adaptive, limiter, rateLimit, maxDrain, readTimeout, attemptHeader, ignoreSDKAttempts`},
		{"RepeatedField", `{"maxAttempts": 3, "maxAttempts": 4}`, `policy: maxAttempts: repeated field; want it once`},
		{"UnknownPreset", `{"preset": "fast"}`, `policy: preset = "fast"; want one of standard, adaptive, none, standard-v2, sns-aws-managed, sns-customer-managed, azure-storage-exponential, azure-storage-linear, azure-storage-interactive, azure-storage-background, azure-interactive, azure-background`},
		{"NotBoolean", `{"adaptive": "yes"}`, `policy: adaptive = "yes"; want true or false`},
		{"HeaderWithSpace", `{"attemptHeader": "X Attempt"}`, `policy: attemptHeader = "X Attempt"; want a header name, such as "X-Attempt"`},
		{"HeaderNotString", `{"attemptHeader": 1}`, `policy: attemptHeader = 1; want a header name, such as "X-Attempt"`},
		{"EmptyHeaderList", `{"delayHeaders": []}`, `policy: delayHeaders = []; want "all" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit (ignoreDelayHeaders trusts none)`},
		{"UnknownHeader", `{"delayHeaders": ["Retry-After", "X-Wait"]}`, `policy: delayHeaders[1] = "X-Wait"; want one of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"HeadersWord", `{"delayHeaders": "some"}`, `policy: delayHeaders = "some"; want "all" or a non-empty list of Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after, X-RateLimit-Reset, RateLimit`},
		{"QuotaNegative", `{"quota": {"retryCost": -5}}`, `policy: quota.retryCost = -5; want an integer >= 0 (0: the default)`},
		{"QuotaUnknown", `{"quota": {"cost": 5}}`, `policy: quota.cost: unknown field; want one of capacity, retryCost, timeoutCost, throttleCost, successIncrement, refillPerSecond, wait, maxScopes`},
		{"LimiterBeta", `{"limiter": {"beta": 1}}`, `policy: limiter.beta = 1; want a number 0 <= n < 1 (0: the default)`},
		{"LimiterSmoothing", `{"limiter": {"smoothing": 1.1}}`, `policy: limiter.smoothing = 1.1; want a number 0..1 (0: the default)`},
		{"RateNegative", `{"rateLimit": {"rate": -1}}`, `policy: rateLimit.rate = -1; want a number >= 0 (0: no limit)`},
		{"BodyBufferNegative", `{"maxBodyBuffer": -1}`, `policy: maxBodyBuffer = -1; want a byte count >= 1, or 0 for the default`},
		{"Status", `{"classifier": {"fatalStatuses": [500, 600]}}`, `policy: classifier.fatalStatuses[1] = 600; want an HTTP status 100..599`},
		{"EmptyCode", `{"classifier": {"throttlingCodes": [""]}}`, `policy: classifier.throttlingCodes[0] = ""; want a non-empty error code`},
		{"StatusesNotList", `{"classifier": {"transientStatuses": 503}}`, `policy: classifier.transientStatuses = 503; want a list of HTTP statuses`},
		{"NotObject", `[1, 2]`, `policy: document = [1,2]; want a policy object`},
		{"Validate", `{"attemptTimeout": "3s", "maxTotalTime": "2s"}`, `policy: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`},
		{"Empty", ``, `policy: empty document; want a JSON object`},
		{"Trailing", `{} {}`, `policy: unexpected data after the JSON document`},
		{"TrailingGarbage", `{}x`, `policy: unexpected data after the JSON document`},
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
	_, err := load(`{"maxAttempts": -1, "maxDelay": "x", "backoff": {"type": "nope"}, "extra": 1}`)
	var fields []string
	for _, e := range unwrapAll(err) {
		var fe *policy.FieldError
		if !errors.As(e, &fe) {
			t.Errorf("Load error %q is a %T; want a *policy.FieldError", e, e)
			continue
		}
		fields = append(fields, fe.Field)
	}
	if diff := cmp.Diff([]string{"maxAttempts", "maxDelay", "backoff.type", "extra"}, fields); diff != "" {
		t.Errorf("Load of four bad members: fields of the errors mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMalformedJSONWrapsSyntaxError(t *testing.T) {
	_, err := load(`{"maxAttempts": }`)
	var se *json.SyntaxError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "policy: invalid JSON: ") {
		t.Errorf("Load(malformed) error = %v; want one starting \"policy: invalid JSON: \" that wraps a *json.SyntaxError", err)
	}
}

func TestLoadMakesFreshPointers(t *testing.T) {
	doc := `{"quota": {}, "limiter": {}, "rateLimit": {"rate": 1}}`
	a, errA := load(doc)
	b, errB := load(doc)
	if errA != nil || errB != nil {
		t.Fatalf("Load errors = %v, %v; want nil", errA, errB)
	}
	if a.Quota == b.Quota || a.Limiter == b.Limiter || a.RateLimit == b.RateLimit {
		t.Errorf("two Loads share pointers: Quota %t, Limiter %t, RateLimit %t; want none shared", a.Quota == b.Quota, a.Limiter == b.Limiter, a.RateLimit == b.RateLimit)
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
