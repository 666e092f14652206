package retrytransport_test

// A preset named after an SDK keeps that SDK's arithmetic: against a
// server that always throttles, a request makes exactly as many attempts
// as the SDK would.

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

func TestSDKPresetsMakeTheSDKsAttemptsWhenAlwaysThrottled(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Policy
		want int // the SDK's attempts, the first included (docs/aws.md)
	}{
		{"Standard", policy.Standard(), 3},              // the AWS SDKs' standard mode: max_attempts 3
		{"StandardV2", policy.StandardV2(), 3},          // the newer standard behaviour keeps 3
		{"KotlinStandard", policy.KotlinStandard(), 3},  // the Kotlin SDK's default maxAttempts
		{"KotlinAdaptive", policy.KotlinAdaptive(), 10}, // the Kotlin guide's maxAttempts = 10, every attempt counted
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := faketime.NewAt(time.Now())
			if a, ok := tt.p.Limiter.(*ratelimit.Adaptive); ok {
				// The limiter keeps its own clock; on the rig's, its waits pass.
				a.Now = clock.Now
			}
			s := &script{steps: []step{{status: 429}}}
			tr := newRig(t, s, tt.p, onClock(clock))
			if got := attemptsFor(t, tr, s, "http://api.example/x"); got != tt.want {
				t.Errorf("%s() against a server that always answers 429: %d attempts; want %d", tt.name, got, tt.want)
			}
		})
	}
}
