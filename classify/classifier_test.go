package classify_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport/classify"
)

func response(status int, header http.Header, body string) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(body))}
}

func TestClassifierZeroValueIsDefault(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://x.example/", nil)
	for _, status := range []int{200, 400, 404, 429, 500, 503} {
		got := classify.Classifier{}.Classify(req, response(status, nil, `{"__type":"SlowDown"}`), nil)
		want := classify.Default(req, response(status, nil, `{"__type":"SlowDown"}`), nil)
		if got != want {
			t.Errorf("Classifier{}.Classify(%d) = %+v; want Default's %+v", status, got, want)
		}
	}
}

func TestClassifierExtensions(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://x.example/", nil)
	busy := func(_ *http.Request, resp *http.Response, _ error) (classify.Outcome, bool) {
		if resp != nil && resp.Header.Get("X-Busy") == "1" {
			return classify.Outcome{Kind: classify.Throttle, Reason: "busy header", Unprocessed: true}, true
		}
		return classify.Outcome{}, false
	}
	c := classify.Classifier{
		Rules:              []classify.Rule{busy},
		ThrottlingStatuses: []int{420},
		TransientStatuses:  []int{409},
		FatalStatuses:      []int{500},
		ThrottlingCodes:    []string{"TooBusy"},
		TransientCodes:     []string{"LockTimeout"},
	}
	tests := []struct {
		name string
		resp *http.Response
		want classify.Kind
	}{
		{"RuleFirst", response(404, http.Header{"X-Busy": {"1"}}, ""), classify.Throttle},
		{"RuleAbstains", response(404, nil, ""), classify.Fatal},
		{"ExtraThrottlingStatus", response(420, nil, ""), classify.Throttle},
		{"ExtraTransientStatus", response(409, nil, ""), classify.Transient},
		{"FatalStatusOverridesDefault", response(500, nil, ""), classify.Fatal},
		{"ExtraThrottlingCodeOnAny4xx", response(422, nil, `{"code":"TooBusy"}`), classify.Throttle},
		{"ExtraTransientCodeIn5xx", response(501, nil, `<Error><Code>LockTimeout</Code></Error>`), classify.Transient},
		{"DefaultStill", response(503, nil, ""), classify.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Classify(req, tt.resp, nil); got.Kind != tt.want {
				t.Errorf("Classify(%d) = %v (%s); want %v", tt.resp.StatusCode, got.Kind, got.Reason, tt.want)
			}
		})
	}
	// Errors go to the rules, then to Default.
	if got := c.Classify(req, nil, errors.New("boom")); got.Kind != classify.Transient {
		t.Errorf("Classify(error) = %v; want transient", got.Kind)
	}
}

func TestClassifierPeekLeavesBodyIntact(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://x.example/", nil)
	body := `{"code":"Other","message":"` + strings.Repeat("m", 10_000) + `"}`
	resp := response(409, nil, body)
	classify.Classifier{ThrottlingCodes: []string{"TooBusy"}}.Classify(req, resp, nil)
	if got, _ := io.ReadAll(resp.Body); string(got) != body {
		t.Errorf("body after Classify has %d bytes; want the original %d", len(got), len(body))
	}
}

func TestServerVerdicts(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		want   classify.Kind
	}{
		{"StripeTrueOn409", 409, http.Header{"Stripe-Should-Retry": {"true"}}, classify.Transient},
		{"StripeTrueKeeps429Throttle", 429, http.Header{"Stripe-Should-Retry": {"true"}}, classify.Throttle},
		{"StripeFalseOn503", 503, http.Header{"Stripe-Should-Retry": {"false"}}, classify.Fatal},
		{"StripeIgnoredOnSuccess", 200, http.Header{"Stripe-Should-Retry": {"false"}}, classify.Success},
		{"GitHubPrimaryLimit403", 403, http.Header{"X-Ratelimit-Remaining": {"0"}}, classify.Throttle},
		{"GitHubRemainingLeft403", 403, http.Header{"X-Ratelimit-Remaining": {"12"}}, classify.Fatal},
		{"RemainingZeroOn404", 404, http.Header{"X-Ratelimit-Remaining": {"0"}}, classify.Fatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify.Status(response(tt.status, tt.header, "")); got.Kind != tt.want {
				t.Errorf("Status(%d, %v) = %v (%s); want %v", tt.status, tt.header, got.Kind, got.Reason, tt.want)
			}
		})
	}
}
