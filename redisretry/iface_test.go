package redisretry_test

import (
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
	_ ratelimit.FallbackCounter = (*redisretry.Adaptive)(nil)
	_ interface {
		State(scope string) ratelimit.AdaptiveState
	} = (*redisretry.Adaptive)(nil)
)
