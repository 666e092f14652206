package classify_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/classify"
)

// ignoreReason compares Outcomes by Kind and Unprocessed only; the tests of
// Reason are separate.
var ignoreReason = cmpopts.IgnoreFields(classify.Outcome{}, "Reason")

// awsThrottlingCodes and awsTransientCodes are the retryable error
// codes, written out here independently of the package's lists.
var (
	awsThrottlingCodes = []string{
		"BandwidthLimitExceeded", "EC2ThrottledException", "LimitExceededException",
		"PriorRequestNotComplete", "ProvisionedThroughputExceededException",
		"RequestLimitExceeded", "RequestThrottled", "RequestThrottledException",
		"SlowDown", "ThrottledException", "Throttling", "ThrottlingException",
		"TooManyRequestsException", "TransactionInProgressException",
	}
	awsTransientCodes = []string{
		"IDPCommunicationError", "RequestTimeout", "RequestTimeoutException",
	}
)

var (
	success   = classify.Outcome{Kind: classify.Success}
	transient = classify.Outcome{Kind: classify.Transient}
	throttled = classify.Outcome{Kind: classify.Throttle, Unprocessed: true}
	fatal     = classify.Outcome{Kind: classify.Fatal}
)

// statusOnly is the outcome docs/aws.md give a status whose body and headers
// carry no error code.
func statusOnly(status int) classify.Outcome {
	switch {
	case status < 400:
		return success
	case status == 429, status == 509:
		return throttled
	case status == 408, status == 500, status == 502, status == 503, status == 504:
		return transient
	}
	return fatal
}

// codeForms returns the three places a service puts an error code, as
// (body, header key/value pairs) for newResp.
func codeForms(code string) []struct {
	name string
	body string
	kv   []string
} {
	return []struct {
		name string
		body string
		kv   []string
	}{
		{"JSON", fmt.Sprintf(`{"__type":%q,"message":"m"}`, code), nil},
		{"XML", fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>m</Message></Error>`, code), nil},
		{"Header", `{"message":"m"}`, []string{"x-amzn-ErrorType", code + ":http://internal.amazon.com/coral/com.amazon.coral.service/"}},
	}
}

func TestStatusEveryStatusWithoutErrorCode(t *testing.T) {
	for status := 100; status <= 599; status++ {
		for _, body := range []string{"", `{"message":"something went wrong"}`} {
			got := classify.Status(newResp(t, status, body))
			if diff := cmp.Diff(statusOnly(status), got, ignoreReason); diff != "" {
				t.Errorf("Status(%d, %q) mismatch (-want +got):\n%s", status, body, diff)
			}
		}
	}
}

func TestStatusSampled(t *testing.T) {
	const (
		slowDownJSON = `{"__type":"SlowDown"}`
		slowDownXML  = `<Error><Code>SlowDown</Code></Error>`
		throttleHdr  = "ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/"
	)
	tests := []struct {
		status int
		body   string
		kv     []string
		want   classify.Outcome
	}{
		{100, "", nil, success},
		{200, "", nil, success},
		{200, slowDownJSON, nil, success},
		{204, "", nil, success},
		{301, "", nil, success},
		{304, "", nil, success},

		{408, "", nil, transient},
		{500, "", nil, transient},
		{500, slowDownXML, nil, transient},
		{504, "", nil, transient},

		{429, "", nil, throttled},
		{429, `{"__type":"ValidationException"}`, nil, throttled},
		{509, "", nil, throttled},

		{502, "", nil, transient},
		{502, `{"__type":"InternalFailure"}`, nil, transient},
		{502, slowDownJSON, nil, throttled},
		{502, slowDownXML, nil, throttled},
		{502, "", []string{"x-amzn-ErrorType", throttleHdr}, throttled},
		{503, "", nil, transient},
		{503, `<Error><Code>ServiceUnavailable</Code></Error>`, nil, transient},
		{503, `<Error><Code>RequestTimeout</Code></Error>`, nil, transient},
		{503, slowDownJSON, nil, throttled},
		{503, slowDownXML, nil, throttled},
		{503, "", []string{"x-amzn-ErrorType", throttleHdr}, throttled},

		{400, "", nil, fatal},
		{400, `{"__type":"ValidationException","message":"bad"}`, nil, fatal},
		{400, `<Error><Code>InvalidParameterValue</Code></Error>`, nil, fatal},
		{400, `{"__type":"ThrottlingException"}`, nil, throttled},
		{400, "", []string{"x-amzn-ErrorType", throttleHdr}, throttled},
		{400, `{"__type":"RequestTimeoutException"}`, nil, transient},
		{403, "", nil, fatal},
		{403, `<Error><Code>AccessDenied</Code></Error>`, nil, fatal},
		{403, slowDownXML, nil, throttled},
		{403, `<Error><Code>IDPCommunicationError</Code></Error>`, nil, transient},

		{401, slowDownJSON, nil, fatal},
		{404, "", nil, fatal},
		{404, slowDownJSON, nil, fatal},
		{404, slowDownXML, nil, fatal},
		{404, "", []string{"x-amzn-ErrorType", throttleHdr}, fatal},
		{409, slowDownJSON, nil, fatal},
		{413, slowDownJSON, nil, fatal},
		{422, slowDownJSON, nil, fatal},
		{501, "", nil, fatal},
		{501, slowDownJSON, nil, fatal},
		{505, "", nil, fatal},
		{600, "", nil, fatal},
		{999, "", nil, fatal},
	}
	for _, tt := range tests {
		got := classify.Status(newResp(t, tt.status, tt.body, tt.kv...))
		if diff := cmp.Diff(tt.want, got, ignoreReason); diff != "" {
			t.Errorf("Status(%d, %q, header %q) mismatch (-want +got):\n%s", tt.status, tt.body, tt.kv, diff)
		}
	}
}

func TestStatusThrottleWithEachThrottlingCodeOn400403502503(t *testing.T) {
	for _, status := range []int{400, 403, 502, 503} {
		for _, code := range awsThrottlingCodes {
			for _, f := range codeForms(code) {
				got := classify.Status(newResp(t, status, f.body, f.kv...))
				want := classify.Outcome{Kind: classify.Throttle, Reason: "error code " + code, Unprocessed: true}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Status(%d, %s %s) mismatch (-want +got):\n%s", status, f.name, code, diff)
				}
			}
		}
	}
}

func TestStatusTransientWithEachTransientCodeOn400403(t *testing.T) {
	for _, status := range []int{400, 403} {
		for _, code := range awsTransientCodes {
			for _, f := range codeForms(code) {
				got := classify.Status(newResp(t, status, f.body, f.kv...))
				want := classify.Outcome{Kind: classify.Transient, Reason: "error code " + code}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Status(%d, %s %s) mismatch (-want +got):\n%s", status, f.name, code, diff)
				}
			}
		}
	}
}

func TestStatusTransientCodeOn502503StaysTransient(t *testing.T) {
	for _, status := range []int{502, 503} {
		for _, code := range awsTransientCodes {
			for _, f := range codeForms(code) {
				got := classify.Status(newResp(t, status, f.body, f.kv...))
				if diff := cmp.Diff(transient, got, ignoreReason); diff != "" {
					t.Errorf("Status(%d, %s %s) mismatch (-want +got):\n%s", status, f.name, code, diff)
				}
			}
		}
	}
}

func TestStatusErrorCodeIgnoredOutside400403502503(t *testing.T) {
	for status := 100; status <= 599; status++ {
		switch status {
		case 400, 403, 502, 503:
			continue
		}
		for _, code := range []string{"SlowDown", "RequestTimeout"} {
			for _, f := range codeForms(code) {
				got := classify.Status(newResp(t, status, f.body, f.kv...))
				if diff := cmp.Diff(statusOnly(status), got, ignoreReason); diff != "" {
					t.Errorf("Status(%d, %s %s) mismatch (-want +got):\n%s", status, f.name, code, diff)
				}
			}
		}
	}
}

func TestStatusReasonNamesStatusOrErrorCode(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{200, "", ""},
		{408, "", "status 408"},
		{429, "", "status 429"},
		{500, "", "status 500"},
		{502, "", "status 502"},
		{503, "", "status 503"},
		{503, `<Error><Code>RequestTimeout</Code></Error>`, "status 503"},
		{504, "", "status 504"},
		{509, "", "status 509"},
		{503, `<Error><Code>SlowDown</Code></Error>`, "error code SlowDown"},
		{400, `{"__type":"com.amazon.coral#Throttling"}`, "error code Throttling"},
	}
	for _, tt := range tests {
		if got := classify.Status(newResp(t, tt.status, tt.body)).Reason; got != tt.want {
			t.Errorf("Status(%d, %q).Reason = %q; want %q", tt.status, tt.body, got, tt.want)
		}
	}
}

// Status reads the body only for 400, 403, 502 and 503 without an error-type
// header; every other response keeps the very Body it came with.
func TestStatusPeeksOnlyFor400403502503WithoutErrorTypeHeader(t *testing.T) {
	for status := 100; status <= 599; status++ {
		for _, withHeader := range []bool{false, true} {
			body := &countingBody{data: []byte(`{"__type":"SlowDown"}`)}
			resp := newResp(t, status, "")
			if withHeader {
				resp.Header.Set("X-Amzn-ErrorType", "SlowDown")
			}
			resp.Body = body
			classify.Status(resp)
			peeks := !withHeader && (status == 400 || status == 403 || status == 502 || status == 503)
			if got := body.read > 0; got != peeks {
				t.Errorf("Status(%d, header %t) read %d body bytes; want reading: %t", status, withHeader, body.read, peeks)
			}
			if !peeks && resp.Body != io.ReadCloser(body) {
				t.Errorf("Status(%d, header %t) replaced resp.Body with %T; want it untouched", status, withHeader, resp.Body)
			}
		}
	}
}

func TestStatusAllocatesNothingFor200(t *testing.T) {
	resp := newResp(t, 200, "hello")
	allocs := testing.AllocsPerRun(100, func() {
		if o := classify.Status(resp); o.Kind != classify.Success {
			t.Fatalf("Status(200) = %v; want success", o.Kind)
		}
	})
	if allocs != 0 {
		t.Errorf("Status(200) allocates %v times per call; want 0", allocs)
	}
}
