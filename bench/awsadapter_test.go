package main

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// TestAWSTransport checks the adapter against what the SDK's retry loop
// does: retry 5xx and coded throttles up to MaxAttempts, with the body
// replayed, and give the caller the last response when it stops.
func TestAWSTransport(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []int // the server's answers, in order; the last repeats
		code      string
		wantHits  int64
		wantFinal int
	}{
		{"succeeds_after_two_503", []int{503, 503, 200}, "", 3, 200},
		{"gives_up_after_max_attempts", []int{503}, "", 3, 503},
		{"retries_coded_throttle", []int{429, 200}, "ThrottlingException", 2, 200},
		{"does_not_retry_uncoded_429", []int{429, 200}, "", 1, 429},
		{"does_not_retry_400", []int{400, 200}, "", 1, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := newServer(func(w http.ResponseWriter, r *http.Request) {
				n := hits.Add(1)
				body, _ := io.ReadAll(r.Body)
				if string(body) != "payload" {
					t.Errorf("attempt %d body = %q; want %q", n, body, "payload")
				}
				st := tt.statuses[min(int(n), len(tt.statuses))-1]
				if tt.code != "" && st != 200 {
					w.Header().Set("X-Amzn-ErrorType", tt.code)
				}
				w.WriteHeader(st)
			})
			defer srv.Close()
			base := newBase()
			defer base.CloseIdleConnections()
			rt := &awsTransport{base: base, retryer: retry.NewStandard(awsStandardOptions)}

			req, _ := http.NewRequest(http.MethodPut, srv.URL, bytes.NewReader([]byte("payload")))
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err != nil {
				t.Fatalf("awsTransport: PUT = %v; want a response", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantFinal || hits.Load() != tt.wantHits {
				t.Errorf("awsTransport: status %d after %d attempts; want %d after %d",
					resp.StatusCode, hits.Load(), tt.wantFinal, tt.wantHits)
			}
		})
	}
}
