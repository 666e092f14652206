package otelretry

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"go.opentelemetry.io/otel/attribute"
)

// The attributes this package defines. Durations are in seconds, as the
// OpenTelemetry conventions measure time.
const (
	attemptKey       = attribute.Key("retrytransport.attempt")        // the attempt that just ended; 1 is the first
	attemptsKey      = attribute.Key("retrytransport.attempts")       // attempts sent, in all
	outcomeKey       = attribute.Key("retrytransport.outcome")        // success, transient, throttle, timeout or fatal
	reasonKey        = attribute.Key("retrytransport.reason")         // the classifier's few words: "status 503"
	delaySecondsKey  = attribute.Key("retrytransport.delay_seconds")  // the wait before the retry
	serverDelayKey   = attribute.Key("retrytransport.server_delay")   // the wait is the server's Retry-After
	waitedSecondsKey = attribute.Key("retrytransport.waited_seconds") // the waits before the attempts so far
	quotaKey         = attribute.Key("retrytransport.quota")          // retry quota tokens left in the scope
	stopReasonKey    = attribute.Key("retrytransport.stop_reason")    // why retrying stopped (stopReason)
	scopeKey         = attribute.Key("retrytransport.scope")          // the quota and limiter scope
	endpointKey      = attribute.Key("retrytransport.endpoint")       // the host:port an attempt failed over to, when not the URL's
	hedgesKey        = attribute.Key("retrytransport.hedges")         // copies of slow attempts sent so far
	requestPolicyKey = attribute.Key("retrytransport.request_policy") // the request carried rules of its own (retrytransport.WithRequestPolicy)
)

// otherScope is the retrytransport.scope of the counters that sum the
// scopes a policy's Scope function made, when they are not reported one
// by one (WithScopeAttribute).
const otherScope = "_OTHER"

// stopReason names, with one of a few fixed words, why a request stopped
// being retried; "" for a request that ended with a success.
func stopReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, retrytransport.ErrRetryRefused):
		// First: the hook's own error, wrapped with it, may match any other.
		return "refused"
	case errors.Is(err, breaker.ErrOpen):
		// Before the context's errors: an open circuit's error unwraps to
		// the failure that opened it, a deadline's, say.
		return "breaker_open"
	case errors.Is(err, concurrency.ErrLimited):
		return "concurrency_limited"
	case errors.Is(err, retrytransport.ErrInvalidPolicy):
		return "invalid_policy"
	case errors.Is(err, retrytransport.ErrExhausted):
		return "exhausted"
	case errors.Is(err, retrytransport.ErrSDKRetries):
		return "sdk_retries"
	case errors.Is(err, quota.ErrExceeded):
		return "quota"
	case errors.Is(err, quota.ErrOverBudget):
		return "budget"
	case errors.Is(err, ratelimit.ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, retrytransport.ErrServerDelay):
		return "server_delay"
	case errors.Is(err, retrytransport.ErrDeadline):
		return "deadline"
	case errors.Is(err, retrytransport.ErrTimeLimit):
		return "time_limit"
	case errors.Is(err, retrytransport.ErrNotRetryable):
		return "not_retryable"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context_deadline"
	}
	return "other"
}

// method returns the request method as the HTTP conventions record it: a
// known method as it is, any other as "_OTHER", which keeps the attribute
// bounded.
func method(m string) string {
	switch m {
	case "", http.MethodGet:
		return http.MethodGet
	case http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// port returns the port that a request URL's port, or else its scheme,
// names; 0 when neither names a valid one.
func port(scheme, p string) int {
	if p == "" {
		switch scheme {
		case "https", "wss":
			return 443
		case "http", "ws":
			return 80
		}
		return 0
	}
	if n, err := strconv.Atoi(p); err == nil && n > 0 && n <= 65535 {
		return n
	}
	return 0
}
