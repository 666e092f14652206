package redisretry_test

import (
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// The interfaces of package ratelimit that the transport looks for.
var (
	_ ratelimit.RetryQuota      = (*redisretry.Quota)(nil)
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
