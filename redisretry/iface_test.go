package redisretry_test

import (
	"testing"

	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// The interfaces of packages quota and ratelimit that the transport looks for.
var (
	_ quota.Quota               = (*redisretry.Quota)(nil)
	_ ratelimit.FallbackCounter = (*redisretry.Quota)(nil)
	_ ratelimit.Limiter         = (*redisretry.Fixed)(nil)
	_ ratelimit.Queue           = (*redisretry.Fixed)(nil)
	_ ratelimit.FallbackCounter = (*redisretry.Fixed)(nil)
	_ ratelimit.Limiter         = (*redisretry.Adaptive)(nil)
	_ ratelimit.Queue           = (*redisretry.Adaptive)(nil)
	_ ratelimit.Recorder        = (*redisretry.Adaptive)(nil)
	_ ratelimit.Releaser        = (*redisretry.Adaptive)(nil)
	_ ratelimit.QuotaRecorder   = (*redisretry.Adaptive)(nil)
	_ ratelimit.FallbackCounter = (*redisretry.Adaptive)(nil)
	_ interface {
		State(scope string) ratelimit.AdaptiveState
	} = (*redisretry.Adaptive)(nil)
	_ interface{ ExtraThrottleRetries() int } = (*redisretry.Adaptive)(nil)
)

// The shared limiter allows the retries after throttles that its Local
// parameters say, as a ratelimit.Adaptive with them would.
func TestAdaptiveThrottleRetriesAreLocals(t *testing.T) {
	for _, tt := range []struct {
		local *ratelimit.Adaptive
		want  int
	}{
		{nil, ratelimit.DefaultThrottleRetries},
		{&ratelimit.Adaptive{ThrottleRetries: 2}, 2},
		{&ratelimit.Adaptive{ThrottleRetries: -1}, 0},
	} {
		if got := (&redisretry.Adaptive{Local: tt.local}).ExtraThrottleRetries(); got != tt.want {
			t.Errorf("ExtraThrottleRetries with Local %+v = %d; want %d", tt.local, got, tt.want)
		}
	}
}
