package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// snsExample is the example policy of docs/sns.md: 3 immediate
// retries, 2 at 1 s, 10 backing off from 1 s to 60 s, 35 at 60 s.
const snsExample = `{ "healthyRetryPolicy": { "minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50,
    "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35,
    "backoffFunction": "exponential" },
  "throttlePolicy": { "maxReceivesPerSecond": 10 },
  "requestPolicy": { "headerContentType": "application/json" } }`

// snsExamplePolicy is what LoadSNS makes of snsExample.
func snsExamplePolicy() policy.Policy {
	return policy.Policy{
		MaxAttempts: 51,
		Backoff: backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 50, NumNoDelayRetries: 3,
			NumMinDelayRetries: 2, NumMaxDelayRetries: 35, BackoffFunction: backoff.CurveExponential, Jitter: 0.1},
		MaxDelay:           time.Minute,
		Quota:              quota.None,
		RetryNonIdempotent: true,
		RateLimit:          &ratelimit.Fixed{Rate: 10, Burst: 1},
	}
}

func loadSNS(doc string) (policy.Policy, error) { return policy.LoadSNS(strings.NewReader(doc)) }

func TestLoadSNSSpecExample(t *testing.T) {
	got, err := loadSNS(snsExample)
	if err != nil {
		t.Fatalf("LoadSNS(SNS guide example) error = %v; want nil", err)
	}
	if diff := cmp.Diff(snsExamplePolicy(), got, policyOpts); diff != "" {
		t.Errorf("LoadSNS(SNS guide example) mismatch (-want +got):\n%s", diff)
	}
	// 2*1 s + 162.4 s + 35*60 s, within the hour SNS allows.
	if total := got.Backoff.(backoff.Schedule).Total().Round(100 * time.Millisecond); total != 2264400*time.Millisecond {
		t.Errorf("LoadSNS(SNS guide example): Total() = %v; want 37m44.4s", total)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("LoadSNS(SNS guide example).Validate() = %v; want nil", err)
	}
}

func TestLoadSNSTopicForm(t *testing.T) {
	doc := `{"http": {"defaultHealthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50,
		"numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35, "backoffFunction": "EXPONENTIAL"},
		"defaultSicklyRetryPolicy": null, "disableSubscriptionOverrides": true,
		"defaultThrottlePolicy": {"maxReceivesPerSecond": 10},
		"defaultRequestPolicy": {"headerContentType": "text/plain; charset=UTF-8"}}}`
	got, err := loadSNS(doc)
	if err != nil {
		t.Fatalf("LoadSNS(topic form) error = %v; want nil", err)
	}
	if diff := cmp.Diff(snsExamplePolicy(), got, policyOpts); diff != "" {
		t.Errorf("LoadSNS(topic form) mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadSNSDefaults(t *testing.T) {
	// SNS's defaults: 3 retries 20 s apart, linear, no throttling.
	want := policy.Policy{
		MaxAttempts:        4,
		Backoff:            backoff.Schedule{MinDelay: 20 * time.Second, MaxDelay: 20 * time.Second, NumRetries: 3, Jitter: 0.1},
		MaxDelay:           20 * time.Second,
		Quota:              quota.None,
		RetryNonIdempotent: true,
	}
	for _, doc := range []string{`{}`, `{"healthyRetryPolicy": {}}`, `{"http": {}}`, `{"throttlePolicy": {"maxReceivesPerSecond": null}}`,
		// As SNS reports an effective policy.
		`{"healthyRetryPolicy": {"minDelayTarget": 20, "maxDelayTarget": 20, "numRetries": 3, "numMaxDelayRetries": 0,
		  "numNoDelayRetries": 0, "numMinDelayRetries": 0, "backoffFunction": "linear"},
		  "sicklyRetryPolicy": null, "throttlePolicy": null, "guaranteed": false}`,
	} {
		got, err := loadSNS(doc)
		if err != nil {
			t.Errorf("LoadSNS(%s) error = %v; want nil", doc, err)
			continue
		}
		if diff := cmp.Diff(want, got, policyOpts); diff != "" {
			t.Errorf("LoadSNS(%s) mismatch (-want +got):\n%s", doc, diff)
		}
	}
}

func TestLoadSNSNoRetries(t *testing.T) {
	got, err := loadSNS(`{"healthyRetryPolicy": {"numRetries": 0, "minDelayTarget": 5, "maxDelayTarget": 5}}`)
	if err != nil || got.MaxAttempts != 1 {
		t.Errorf("LoadSNS(numRetries 0) = MaxAttempts %d, %v; want 1, nil", got.MaxAttempts, err)
	}
}

// TestLoadSNSRetryTimeLimit checks the 3,600 s limit at its edge: 100 retries
// of 36 s take exactly 3,600 s, of 37 s 3,700 s.
func TestLoadSNSRetryTimeLimit(t *testing.T) {
	ok := `{"healthyRetryPolicy": {"minDelayTarget": 36, "maxDelayTarget": 36, "numRetries": 100}}`
	if _, err := loadSNS(ok); err != nil {
		t.Errorf("LoadSNS(100 retries of 36 s) error = %v; want nil", err)
	}
	_, err := loadSNS(strings.ReplaceAll(ok, "36", "37"))
	want := "policy: healthyRetryPolicy (total retry time) = 3700s; want at most 3600s for an HTTP/S endpoint"
	if err == nil || err.Error() != want {
		t.Errorf("LoadSNS(100 retries of 37 s) error = %v; want %s", err, want)
	}
}

// SNS's own policies are outside the limits of a customer's HTTP/S
// policy, so LoadSNS rejects them as documents; Load reads them in this
// package's schema.
func TestSNSPresetsFromJSON(t *testing.T) {
	aws := `{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 20, "numRetries": 100015,
		"numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 100000, "backoffFunction": "exponential"}}`
	customer := `{"healthyRetryPolicy": {"minDelayTarget": 10, "maxDelayTarget": 600, "numRetries": 50,
		"numNoDelayRetries": 0, "numMinDelayRetries": 2, "numMaxDelayRetries": 38, "backoffFunction": "exponential"}}`
	for _, tt := range []struct{ doc, want string }{
		{aws, "policy: healthyRetryPolicy.numRetries = 100015; want 0..100"},
		// 2*10 s + 1,624.2 s + 38*600 s.
		{customer, "policy: healthyRetryPolicy (total retry time) = 24444.201s; want at most 3600s for an HTTP/S endpoint"},
	} {
		if _, err := loadSNS(tt.doc); err == nil || err.Error() != tt.want {
			t.Errorf("LoadSNS(%s) error = %v; want %s", tt.doc, err, tt.want)
		}
	}

	for _, tt := range []struct {
		doc  string
		want policy.Policy
	}{
		{`{"maxAttempts": 100016, "maxDelay": "20s", "quota": "none", "retryNonIdempotent": true,
		   "backoff": {"type": "schedule", "minDelay": "1s", "maxDelay": "20s", "numRetries": 100015, "numNoDelayRetries": 3,
		   "numMinDelayRetries": 2, "numMaxDelayRetries": 100000, "backoffFunction": "exponential", "jitter": 0.1}}`, policy.SNSAWSManaged()},
		{`{"maxAttempts": 51, "maxDelay": "10m", "quota": "none", "retryNonIdempotent": true,
		   "backoff": {"type": "schedule", "minDelay": "10s", "maxDelay": "600s", "numRetries": 50,
		   "numMinDelayRetries": 2, "numMaxDelayRetries": 38, "backoffFunction": "exponential", "jitter": 0.1}}`, policy.SNSCustomerManaged()},
	} {
		got, err := load(tt.doc)
		if err != nil {
			t.Errorf("Load(%s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, policyOpts); diff != "" {
			t.Errorf("Load(SNS preset as JSON) mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestLoadSNSErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"TooManyRetries", `{"healthyRetryPolicy": {"numRetries": 101}}`, "policy: healthyRetryPolicy.numRetries = 101; want 0..100"},
		{"NegativeRetries", `{"healthyRetryPolicy": {"numRetries": -1}}`, "policy: healthyRetryPolicy.numRetries = -1; want 0..100"},
		{"MinDelayZero", `{"healthyRetryPolicy": {"minDelayTarget": 0}}`, "policy: healthyRetryPolicy.minDelayTarget = 0; want 1..20 (1..maxDelayTarget)"},
		{"MinAboveMax", `{"healthyRetryPolicy": {"minDelayTarget": 30, "maxDelayTarget": 10}}`, "policy: healthyRetryPolicy.minDelayTarget = 30; want 1..10 (1..maxDelayTarget)"},
		{"MinDefaultAboveMax", `{"healthyRetryPolicy": {"maxDelayTarget": 10}}`, "policy: healthyRetryPolicy.minDelayTarget = 20; want 1..10 (1..maxDelayTarget)"},
		{"MaxTooLong", `{"healthyRetryPolicy": {"maxDelayTarget": 3601, "numRetries": 1}}`, "policy: healthyRetryPolicy.maxDelayTarget = 3601; want 20..3600 (minDelayTarget..3600)"},
		{"FractionalDelay", `{"healthyRetryPolicy": {"minDelayTarget": 1.5}}`, "policy: healthyRetryPolicy.minDelayTarget = 1.5; want whole seconds"},
		{"NegativePhase", `{"healthyRetryPolicy": {"numMaxDelayRetries": -2}}`, "policy: healthyRetryPolicy.numMaxDelayRetries = -2; want >= 0"},
		{"PhasesExceedRetries", `{"healthyRetryPolicy": {"numRetries": 5, "numNoDelayRetries": 3, "numMaxDelayRetries": 3}}`,
			"policy: healthyRetryPolicy.numNoDelayRetries+numMinDelayRetries+numMaxDelayRetries = 6; want 0..5 (numRetries)"},
		{"BadFunction", `{"healthyRetryPolicy": {"backoffFunction": "cubic"}}`, `policy: healthyRetryPolicy.backoffFunction = "cubic"; want linear, arithmetic, exponential or geometric`},
		{"ZeroRate", `{"throttlePolicy": {"maxReceivesPerSecond": 0}}`, "policy: throttlePolicy.maxReceivesPerSecond = 0; want >= 1"},
		{"UnknownRetryField", `{"healthyRetryPolicy": {"numRetry": 3}}`,
			"policy: healthyRetryPolicy.numRetry: unknown field; want one of minDelayTarget, maxDelayTarget, numRetries, numNoDelayRetries, numMinDelayRetries, numMaxDelayRetries, backoffFunction"},
		{"UnknownTopField", `{"retryPolicy": {}}`, "policy: retryPolicy: unknown field; want one of healthyRetryPolicy, sicklyRetryPolicy, throttlePolicy, requestPolicy, guaranteed"},
		{"MixedForms", `{"http": {}, "healthyRetryPolicy": {}}`, "policy: healthyRetryPolicy: unknown field; want one of http"},
		{"TopicUnknown", `{"http": {"healthyRetryPolicy": {}}}`,
			"policy: http.healthyRetryPolicy: unknown field; want one of defaultHealthyRetryPolicy, defaultSicklyRetryPolicy, defaultThrottlePolicy, defaultRequestPolicy, disableSubscriptionOverrides"},
		{"TopicPath", `{"http": {"defaultHealthyRetryPolicy": {"numRetries": 200}}}`, "policy: http.defaultHealthyRetryPolicy.numRetries = 200; want 0..100"},
		{"Sickly", `{"sicklyRetryPolicy": {}}`, "policy: sicklyRetryPolicy = {}; want null: SNS documents no sickly retry policy"},
		{"Guaranteed", `{"guaranteed": true}`, "policy: guaranteed = true; want false"},
		{"ContentType", `{"requestPolicy": {"headerContentType": 5}}`, "policy: requestPolicy.headerContentType = 5; want a content type string"},
		{"NotObject", `"policy"`, `policy: document = "policy"; want a delivery policy object`},
		{"Trailing", `{}]`, "policy: line 1, column 3: unexpected data after the JSON document"},
		{"Syntax", "{\"healthyRetryPolicy\": {\n\t\"numRetries\": 3,\n}}", `policy: line 3, column 1: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"MisspeltFunction", `{"healthyRetryPolicy": {"backoffFunction": "Geometic"}}`, `policy: healthyRetryPolicy.backoffFunction = "Geometic"; did you mean "geometric"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := loadSNS(tt.doc); err == nil || err.Error() != tt.want {
				t.Errorf("LoadSNS(%s) error = %v; want %s", tt.doc, err, tt.want)
			}
		})
	}
}

func TestLoadSNSReportsEveryError(t *testing.T) {
	_, err := loadSNS(`{"healthyRetryPolicy": {"minDelayTarget": 0, "maxDelayTarget": 4000, "numRetries": 101,
		"numNoDelayRetries": -1, "backoffFunction": "cubic"}, "throttlePolicy": {"maxReceivesPerSecond": 0}}`)
	var fields []string
	for _, e := range unwrapAll(err) {
		fields = append(fields, strings.SplitN(strings.TrimPrefix(e.Error(), "policy: "), " ", 2)[0])
	}
	want := []string{"healthyRetryPolicy.numRetries", "healthyRetryPolicy.numNoDelayRetries", "healthyRetryPolicy.backoffFunction",
		"healthyRetryPolicy.maxDelayTarget", "healthyRetryPolicy.minDelayTarget", "throttlePolicy.maxReceivesPerSecond"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("LoadSNS of six bad members: fields of the errors mismatch (-want +got):\n%s", diff)
	}
}
