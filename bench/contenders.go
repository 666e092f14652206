package main

import (
	"net/http"
	"reflect"
	"time"

	awsratelimit "github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// Every retrying contender keeps its library's defaults except its waits:
// the backoff starts at baseWait and never exceeds maxWait (real
// deployments use about 1 s and 20 s). A server's Retry-After is not
// scaled: whoever honours it waits the real time.
const (
	baseWait = time.Millisecond
	maxWait  = 20 * time.Millisecond
)

// waitsNote is a note of every table whose contenders wait.
const waitsNote = "Waits scaled alike: backoff from a 1 ms base to a 20 ms cap for every library, other defaults kept; Retry-After stays real time."

// maxIdlePerHost is the idle-connection pool size per host of every base
// transport: at least the largest worker count, so that the pool, the same
// for everyone, does not churn connections by itself.
const maxIdlePerHost = 64

// kind says what a contender is, for the goals: the bare baseline, this
// library, or a peer library.
type kind int

const (
	kindBare kind = iota
	kindOurs
	kindPeer
)

// A contender is one way of sending requests: the bare base transport, or
// a retrying library wrapped around it.
type contender struct {
	name string
	kind kind
	// wrap returns the contender's RoundTripper around base, with state
	// (quotas, limiters, buckets) of its own.
	wrap func(base http.RoundTripper) http.RoundTripper
}

// newBase returns the base transport every contender sends through:
// go-cleanhttp's pooled transport, with the idle pool per host raised to
// maxIdlePerHost.
func newBase() *http.Transport {
	t := cleanhttp.DefaultPooledTransport()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// adaptiveIsStandard reports whether policy.Adaptive still equals
// policy.Standard, that is, whether its client-side limiter is missing.
func adaptiveIsStandard() bool {
	return reflect.DeepEqual(policy.Adaptive(), policy.Standard())
}

// contenders returns the contenders in table order.
func contenders() []contender {
	return []contender{
		{"bare transport", kindBare, func(base http.RoundTripper) http.RoundTripper { return base }},
		{"retrytransport standard", kindOurs, func(base http.RoundTripper) http.RoundTripper {
			return retrytransport.New(base, retrytransport.WithPolicy(scaled(policy.Standard())))
		}},
		oursAdaptive(),
		{"go-retryablehttp", kindPeer, newRetryablehttp},
		{"failsafe-go", kindPeer, newFailsafe},
		{"aws retry standard", kindPeer, func(base http.RoundTripper) http.RoundTripper {
			return &awsTransport{base: base, retryer: retry.NewStandard(awsStandardOptions)}
		}},
		awsAdaptive(),
	}
}

// oursAdaptive is our adaptive mode, "retrytransport adaptive" (with a
// suffix while it equals standard mode).
func oursAdaptive() contender {
	name := "retrytransport adaptive"
	if adaptiveIsStandard() {
		name += " (= standard)"
	}
	return oursWithLimiter(name, nil)
}

// oursWithLimiter is our adaptive mode under name with the limiter
// newLimiter makes, a fresh one for each transport; nil means the preset's.
func oursWithLimiter(name string, newLimiter func() *ratelimit.Adaptive) contender {
	return contender{name, kindOurs, func(base http.RoundTripper) http.RoundTripper {
		p := scaled(policy.Adaptive())
		if newLimiter != nil {
			p.Limiter = newLimiter()
		}
		return retrytransport.New(base, retrytransport.WithPolicy(p))
	}}
}

// awsAdaptive is the AWS SDK's adaptive retry mode.
func awsAdaptive() contender {
	return contender{"aws retry adaptive", kindPeer, func(base http.RoundTripper) http.RoundTripper {
		return &awsTransport{base: base, retryer: retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, awsStandardOptions)
		})}
	}}
}

// scaled returns p with its backoff scaled to baseWait and maxWait. A
// separate ThrottleBackoff, should the preset set one, is scaled by the
// same factor (1/1000). MaxDelay, the longest Retry-After honoured, keeps
// its default (20 s).
func scaled(p policy.Policy) policy.Policy {
	p.Backoff = backoff.FullJitter{Base: baseWait, Max: maxWait}
	if tb := p.ThrottleBackoff; tb != nil {
		p.ThrottleBackoff = backoff.Func(func(retry int) time.Duration {
			return tb.Delay(retry) / (time.Second / baseWait)
		})
	}
	return p
}

// newRetryablehttp returns go-retryablehttp's RoundTripper with NewClient's
// defaults (5 attempts, DefaultRetryPolicy, DefaultBackoff honouring
// Retry-After on 429 and 503) except the waits and the logger: the default
// logger writes a line per request to stderr, which would both garble the
// tables and charge it for I/O no other contender does.
func newRetryablehttp(base http.RoundTripper) http.RoundTripper {
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: base}
	c.Logger = nil
	c.RetryWaitMin = baseWait
	c.RetryWaitMax = maxWait
	return &retryablehttp.RoundTripper{Client: c}
}

// newFailsafe returns failsafe-go's RoundTripper with failsafehttp's
// default retry policy (3 attempts, Retry-After honoured on 429 and 503)
// plus an exponential backoff from baseWait to maxWait: the library's own
// default is no wait at all.
func newFailsafe(base http.RoundTripper) http.RoundTripper {
	rp := failsafehttp.NewRetryPolicyBuilder().WithBackoff(baseWait, maxWait).Build()
	return failsafehttp.NewRoundTripper(base, rp)
}

// awsStandardOptions keeps the SDK's standard-mode defaults (3 attempts,
// its retryable checks, a retry quota of 500 tokens) and scales the
// backoff: the SDK's own ExponentialJitterBackoff for its 20 s default cap,
// every delay divided by 1000 (so 2 ms, 4 ms, ... 20 ms ceilings). A new
// token bucket is made for every retryer.
func awsStandardOptions(o *retry.StandardOptions) {
	sdk := retry.NewExponentialJitterBackoff(retry.DefaultMaxBackoff)
	o.Backoff = retry.BackoffDelayerFunc(func(attempt int, err error) (time.Duration, error) {
		d, err := sdk.BackoffDelay(attempt, err)
		return d / (time.Second / baseWait), err
	})
	o.MaxBackoff = maxWait
	o.RateLimiter = awsratelimit.NewTokenRateLimit(retry.DefaultRetryRateTokens)
}
