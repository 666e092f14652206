package retrytransport_test

// SDK marks: requests an SDK retries itself (AWS amz-sdk-request, Google
// gccl-attempt-count) are not retried again, in the mark's forms, with
// their events and logs, unless the policy ignores the marks.

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// sdkCall plays an SDK that retries on its own: it sends the request up to
// sdkMax times, marking each attempt as the AWS SDKs do, and stops at the
// first answer that is not a 503. It returns the server hits of the call.
func sdkCall(t *testing.T, tr http.RoundTripper, s *script, sdkMax int) int {
	t.Helper()
	before := s.count()
	for n := 1; n <= sdkMax; n++ {
		req := newReq(t, "POST", url, `{"TableName":"t"}`)
		req.Header.Set("amz-sdk-request", fmt.Sprintf("attempt=%d; max=%d", n, sdkMax))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("SDK attempt %d: RoundTrip: %v", n, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			break
		}
	}
	return s.count() - before
}

// Marks in the forms the SDKs send them: the order of the keys, spaces and
// botocore's ttl do not matter.
func TestSDKMarkForms(t *testing.T) {
	for _, mark := range []string{"attempt=1; max=3", "attempt=1;max=3", "max=3; attempt=1", "ttl=20261124T101500Z; attempt=1; max=3", " Attempt = 1 ; MAX = 3 "} {
		s := &script{steps: []step{{status: 503}}}
		tr := newRig(t, s, policy.Policy{})
		req := newReq(t, "GET", url, "")
		req.Header.Set("amz-sdk-request", mark)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%q: RoundTrip: %v", mark, err)
		}
		resp.Body.Close()
		if s.count() != 1 {
			t.Errorf("amz-sdk-request %q: server hits = %d; want 1, the SDK retrying", mark, s.count())
		}
	}
}

// The Google Cloud clients count their attempts without saying how many
// they will make, and Cloud Storage counts them even with its retries off:
// a first attempt gets the policy's attempts, and each later one, which
// proves the client retries on its own, is sent once.
func TestGoogleClientAttemptsAreSentOnce(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
	}{
		{"gl-go/1.24.0 gdcl/0.311.0 gccl-invocation-id/5c9d gccl-attempt-count/2", 1},
		{"gccl-invocation-id/5c9d gccl-attempt-count/7 gccl/1.50.0", 1},
		{"gl-go/1.24.0 gdcl/0.311.0 gccl-invocation-id/5c9d gccl-attempt-count/1", 3}, // its retries may be off
		{"gl-go/1.24.0 gdcl/0.311.0", 3},
		{"gl-go/1.24.0 gccl-attempt-count/x", 3},        // does not parse
		{"gl-go/1.24.0 xgccl-attempt-count/2", 3},       // another token
		{"gl-go/1.24.0 gccl-attempt-count/0 gccl/1", 3}, // no attempt 0
	} {
		s := &script{steps: []step{{status: 503}}}
		tr := newRig(t, s, policy.Policy{})
		req := newReq(t, "GET", url, "")
		req.Header.Set("x-goog-api-client", tt.value)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%q: RoundTrip: %v", tt.value, err)
		}
		resp.Body.Close()
		if s.count() != tt.want {
			t.Errorf("x-goog-api-client %q: server hits = %d; want %d", tt.value, s.count(), tt.want)
		}
	}
}

// An SDK that marks its attempts and retries them never multiplies with
// the policy: the server sees the larger of the two attempt counts.
func TestSDKRetriesAreNotMultiplied(t *testing.T) {
	for _, tt := range []struct{ sdk, policy, want int }{
		{3, 3, 3},
		{3, 5, 5},
		{5, 3, 5},
		{2, 3, 3},
		{1, 3, 3}, // "max=1": the SDK's retries are off, so the policy's apply
		{10, 1, 10},
	} {
		s := &script{steps: []step{{status: 503}}}
		p := policy.Policy{MaxAttempts: tt.policy, RetryNonIdempotent: true}
		tr := newRig(t, s, p)
		if got := sdkCall(t, tr, s, tt.sdk); got != tt.want {
			t.Errorf("SDK max %d, policy MaxAttempts %d: server hits per call = %d; want %d", tt.sdk, tt.policy, got, tt.want)
		}
	}
}

// The SDK's attempts that recover still succeed, and each gets one hit.
func TestSDKAttemptThatSucceeds(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200, body: "ok"}}}
	tr := newRig(t, s, policy.Policy{RetryNonIdempotent: true})
	if got := sdkCall(t, tr, s, 3); got != 2 {
		t.Errorf("server hits = %d; want 2 (SDK attempt 1 failed, attempt 2 succeeded)", got)
	}
}

func TestSDKRetriesEvents(t *testing.T) {
	var stops []error
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{RetryNonIdempotent: true}, withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if e.Final {
				stops = append(stops, e.Stop)
			}
		})))
	sdkCall(t, tr, s, 3)
	want := []error{retrytransport.ErrSDKRetries, retrytransport.ErrSDKRetries, retrytransport.ErrExhausted}
	if len(stops) != len(want) {
		t.Fatalf("final events' Stop = %v; want %v", stops, want)
	}
	for i := range want {
		if !errors.Is(stops[i], want[i]) {
			t.Errorf("SDK attempt %d: Stop = %v; want %v", i+1, stops[i], want[i])
		}
	}
}

// A mark that does not parse, or a policy that ignores marks, leaves the
// policy's attempts to every request.
func TestSDKMarkIgnored(t *testing.T) {
	for _, tt := range []struct {
		name, mark string
		ignore     bool
	}{
		{"Garbage", "attempt=x; max=3", false},
		{"AttemptPastMax", "attempt=4; max=3", false},
		{"NoMax", "attempt=1", false},
		{"Zero", "attempt=0; max=3", false},
		{"Twice", "attempt=1; max=3; attempt=x", false},
		{"IgnoreSDKAttempts", "attempt=1; max=3", true},
	} {
		s := &script{steps: []step{{status: 503}}}
		tr := newRig(t, s, policy.Policy{RetryNonIdempotent: true, IgnoreSDKAttempts: tt.ignore})
		req := newReq(t, "GET", url, "")
		req.Header.Set("amz-sdk-request", tt.mark)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: RoundTrip: %v", tt.name, err)
		}
		resp.Body.Close()
		if s.count() != 3 {
			t.Errorf("%s: server hits = %d; want the policy's 3", tt.name, s.count())
		}
	}
}

// The logger hears once, at Warn, that the SDK retries too, and how to
// turn that off.
func TestSDKRetriesLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{RetryNonIdempotent: true}, withOptions(retrytransport.WithLogger(logger)))
	for range 3 {
		sdkCall(t, tr, s, 3)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, " level=WARN ") || !strings.Contains(out, "aws.NopRetryer") {
		t.Errorf("log = %q; want one line, a warning naming aws.NopRetryer", out)
	}
}

// Cloud Storage marks every request with gccl-attempt-count/1, also when
// its retries are off (storage.WithPolicy(storage.RetryNever)) and for the
// operations it never retries. A first attempt's mark therefore proves
// nothing: the policy's retries apply.
func TestGoogleMarkOfAFirstAttemptKeepsThePolicy(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200, body: "ok"}}}
	var stops []error
	tr := newRig(t, s, policy.Policy{}, withOptions(retrytransport.WithObserver(func(e retrytransport.Event) {
		if e.Final {
			stops = append(stops, e.Stop)
		}
	})))
	req := newReq(t, "GET", url, "")
	// What cloud.google.com/go/storage sends with WithPolicy(RetryNever).
	req.Header.Set("x-goog-api-client", "gccl-invocation-id/5c9d4f1e-0b7a-4c1e-9a51-2f0e4b8c7d11 gccl-attempt-count/1 gl-go/1.24.0 gccl/1.50.0")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 3 {
		t.Errorf("storage request with its retries off: status %d after %d server hits, final Stop %v; want 200 after 3 (the policy's attempts: the SDK will not retry)",
			resp.StatusCode, s.count(), stops)
	}
}
