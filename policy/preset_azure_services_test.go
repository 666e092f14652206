package policy_test

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// TestAzureServicePresetDelays derives each wait by hand from the numbers
// of docs/azure.md, with the random step of backoff.Exponential,
// d = DeltaBackoff·(0.8 + 0.4·Rand), at both ends of its range; retry n
// waits min(MinBackoff + (2^(n-1) - 1)·d, MaxBackoff).
func TestAzureServicePresetDelays(t *testing.T) {
	tests := []struct {
		name      string
		p         policy.Policy
		low, high []time.Duration // Rand 0, and just below 1
	}{
		{
			// No x-ms-retry-after-ms: the SDK's 5 s, nine times.
			name: "azure-cosmos-db", p: policy.AzureCosmosDB(),
			low:  []time.Duration{5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9},
			high: []time.Duration{5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9},
		},
		{
			// 0.1s + 0, 1 and 3 times d, with d from 2.4s to 3.6s.
			name: "azure-service-bus", p: policy.AzureServiceBus(),
			low:  []time.Duration{100 * time.Millisecond, 2500 * time.Millisecond, 7300 * time.Millisecond},
			high: []time.Duration{100 * time.Millisecond, 3700 * time.Millisecond, 10900 * time.Millisecond},
		},
		{
			// Fast first retry; then 1s + d with d from 8s to 12s, and
			// 1s + 3d, both capped at 10s.
			name: "azure-search", p: policy.AzureSearch(),
			low:  []time.Duration{0, 9 * time.Second, 10 * time.Second},
			high: []time.Duration{0, 10 * time.Second, 10 * time.Second},
		},
		{
			// 0 + 0, 1, 3, 7 and 15 times d, with d from 1.6s to 2.4s.
			name: "azure-active-directory", p: policy.AzureActiveDirectory(),
			low:  []time.Duration{0, 1600 * time.Millisecond, 4800 * time.Millisecond, 11200 * time.Millisecond, 24 * time.Second},
			high: []time.Duration{0, 2400 * time.Millisecond, 7200 * time.Millisecond, 16800 * time.Millisecond, 36 * time.Second},
		},
	}
	for _, tt := range tests {
		if retries := tt.p.MaxAttempts - 1; retries != len(tt.low) {
			t.Errorf("%s: MaxAttempts = %d; want %d, one more than its retries", tt.name, tt.p.MaxAttempts, len(tt.low)+1)
		}
		if diff := cmp.Diff(tt.low, delays(withRand(tt.p.Backoff, lowDraw), len(tt.low)), nearDurations); diff != "" {
			t.Errorf("%s: delays with Rand 0 mismatch (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.high, delays(withRand(tt.p.Backoff, highDraw), len(tt.high)), nearDurations); diff != "" {
			t.Errorf("%s: delays with Rand just below 1 mismatch (-want +got):\n%s", tt.name, diff)
		}
		for _, d := range append(tt.low, tt.high...) {
			if d > tt.p.WithDefaults().MaxDelay {
				t.Errorf("%s: a delay of %v exceeds MaxDelay %v, which would cut it", tt.name, d, tt.p.WithDefaults().MaxDelay)
			}
		}
	}
}

// newResp returns a response with status and body, for a GET.
func newResp(t *testing.T, status int, body string) (*http.Request, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://example.com/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req, &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}
}

func TestAzureServicePresetsClassify(t *testing.T) {
	const (
		success   = classify.Success
		transient = classify.Transient
		throttle  = classify.Throttle
		fatal     = classify.Fatal
	)
	tests := []struct {
		name string
		p    policy.Policy
		want map[int]classify.Kind
	}{
		// Only throttled requests (docs/azure.md).
		{"azure-cosmos-db", policy.AzureCosmosDB(), map[int]classify.Kind{
			200: success, 201: success, 304: success, 429: throttle,
			400: fatal, 404: fatal, 408: fatal, 409: fatal, 449: fatal,
			500: fatal, 502: fatal, 503: fatal, 504: fatal, 509: fatal,
		}},
		// 408 and every 5xx but 501 and 505.
		{"azure-search", policy.AzureSearch(), map[int]classify.Kind{
			200: success, 408: transient, 500: transient, 502: transient, 503: transient, 504: transient,
			506: transient, 507: transient, 508: transient, 511: transient, 599: transient,
			501: fatal, 505: fatal, 400: fatal, 404: fatal, 429: fatal,
		}},
		// Only 500, 502, 503 and 504.
		{"azure-active-directory", policy.AzureActiveDirectory(), map[int]classify.Kind{
			200: success, 500: transient, 502: transient, 503: transient, 504: transient,
			501: fatal, 505: fatal, 506: fatal, 408: fatal, 429: fatal, 400: fatal, 401: fatal,
		}},
		// classify.Default: the guide's rules for REST services.
		{"azure-service-bus", policy.AzureServiceBus(), map[int]classify.Kind{
			200: success, 408: transient, 429: throttle, 500: transient, 503: transient, 501: fatal, 400: fatal,
		}},
	}
	for _, tt := range tests {
		c := tt.p.WithDefaults().Classify
		for status, want := range tt.want {
			req, resp := newResp(t, status, "")
			if got := c(req, resp, nil); got.Kind != want {
				t.Errorf("%s: Classify(GET, %d) = %v (%s); want %v", tt.name, status, got.Kind, got.Reason, want)
			}
		}
		// A connection that failed is classified as everywhere else.
		req, _ := newResp(t, 0, "")
		err := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		if got, want := c(req, nil, err), classify.Default(req, nil, err); got != want {
			t.Errorf("%s: Classify(GET, dial error) = %+v; want classify.Default's %+v", tt.name, got, want)
		}
	}
}

// A retried status keeps what classify.Status knows of it: a 503 with a
// throttling code is a Throttle, which a POST may be retried after.
func TestAzureSearchKeepsThrottlingCodes(t *testing.T) {
	req, resp := newResp(t, 503, `{"code": "ThrottlingException"}`)
	if got := policy.AzureSearch().Classify(req, resp, nil); got.Kind != classify.Throttle || !got.Unprocessed {
		t.Errorf("AzureSearch().Classify(503 ThrottlingException) = %+v; want an unprocessed Throttle", got)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != `{"code": "ThrottlingException"}` {
		t.Errorf("after Classify the body reads %q; want it whole", b)
	}
}

// Service Bus turns a request away with ServerBusy without acting on it,
// so the preset makes that an unprocessed Throttle, after which even a send
// (a POST) is retried; classify.Default alone would make a 503 Transient
// and a 400 Fatal.
func TestAzureServiceBusServerBusyIsUnprocessedThrottle(t *testing.T) {
	c := policy.AzureServiceBus().WithDefaults().Classify
	for _, status := range []int{400, 503} {
		for _, body := range []string{`{"code": "ServerBusy"}`, `<Error><Code>ServerBusy</Code></Error>`} {
			req, resp := newResp(t, status, body)
			req.Method = http.MethodPost
			if got := c(req, resp, nil); got.Kind != classify.Throttle || !got.Unprocessed {
				t.Errorf("AzureServiceBus().Classify(POST, %d, %q) = %+v; want an unprocessed Throttle", status, body, got)
			}
		}
	}
}

// TestAzureServiceBusPenaltyCode: the penalty's code is the one that
// classify.Code finds in Service Bus's error bodies, JSON or XML, matched
// exactly, and the penalty lasts 10 s.
func TestAzureServiceBusPenaltyCode(t *testing.T) {
	p := policy.AzureServiceBus().Penalty
	if p == nil || p.Delay != 10*time.Second || p.For != 10*time.Second || len(p.Statuses) != 0 {
		t.Fatalf("AzureServiceBus().Penalty = %+v; want codes only, 10s for 10s", p)
	}
	tests := []struct {
		status int
		body   string
		want   bool
	}{
		{503, `{"code": "ServerBusy", "message": "busy"}`, true},
		{503, `<Error><Code>ServerBusy</Code><Detail>busy</Detail></Error>`, true},
		{429, `{"code": "ServerBusy"}`, true},
		{503, `{"code": "QuotaExceeded"}`, false},
		{503, ``, false},
		{500, `{"code": "serverbusy"}`, false}, // codes match exactly
	}
	for _, tt := range tests {
		_, resp := newResp(t, tt.status, tt.body)
		code := classify.Code(resp)
		if got := slices.Contains(p.Codes, code); got != tt.want {
			t.Errorf("AzureServiceBus().Penalty.Codes %q contains classify.Code(%d, %q) = %q: %t; want %t", p.Codes, tt.status, tt.body, code, got, tt.want)
		}
	}
}

func TestAzureCosmosDBOptions(t *testing.T) {
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	tests := []struct {
		name     string
		o        policy.AzureCosmosDBOptions
		attempts int
		wait     time.Duration
	}{
		{"Zero", policy.AzureCosmosDBOptions{}, 10, 30 * time.Second},
		{"GuideExample", policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: 5, MaxRetryWaitTimeInSeconds: 15}, 6, 15 * time.Second},
		{"Negative", policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: -1, MaxRetryWaitTimeInSeconds: -5}, 10, 30 * time.Second},
		{"One", policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: 1, MaxRetryWaitTimeInSeconds: 1}, 2, time.Second},
		{"Huge", policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: math.MaxInt, MaxRetryWaitTimeInSeconds: math.MaxInt},
			math.MaxInt, time.Duration(maxSeconds) * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.o.Policy()
			if p.MaxAttempts != tt.attempts || p.MaxTotalWait != tt.wait || p.MaxDelay != tt.wait {
				t.Errorf("%+v.Policy() MaxAttempts, MaxTotalWait, MaxDelay = %d, %v, %v; want %d, %v, %v",
					tt.o, p.MaxAttempts, p.MaxTotalWait, p.MaxDelay, tt.attempts, tt.wait, tt.wait)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("%+v.Policy().Validate() = %v; want nil", tt.o, err)
			}
		})
	}
	if diff := cmp.Diff(policy.AzureCosmosDB(), policy.AzureCosmosDBOptions{}.Policy(), policyOpts); diff != "" {
		t.Errorf("AzureCosmosDB() differs from AzureCosmosDBOptions{}.Policy() (-want +got):\n%s", diff)
	}
}

func ExampleAzureCosmosDBOptions_Policy() {
	// The Azure guide's example: 5 retries, at most 15 s of waiting.
	p := policy.AzureCosmosDBOptions{
		MaxRetryAttemptsOnThrottledRequests: 5,
		MaxRetryWaitTimeInSeconds:           15,
	}.Policy()
	fmt.Println(p.MaxAttempts, p.MaxTotalWait, p.ServerDelay.Headers)
	// Output: 6 15s x-ms-retry-after-ms
}
