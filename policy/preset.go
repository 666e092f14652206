package policy

import (
	"strconv"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file holds the named presets of the AWS SDKs and of Azure's
// Transient Fault Handling and Storage guidance, and the table of every
// preset's name; preset_azure_services.go holds the Azure service presets
// and sns.go the SNS ones. Each is a function that returns a new value on
// every call. Most leave Quota nil, so that every transport creates its
// own; those that need a quota with other settings, or a limiter, return a
// new one on every call, which transports given the same returned value
// share, as Policy.Quota and Policy.Limiter say.

// Standard returns AWS standard retry mode (docs/aws.md): 3 attempts, full
// jitter backoff 2^(n-1) s capped at 20 s, Retry-After honoured up to 20 s,
// and a retry quota of 500 tokens per host (retry cost 5, timeout and
// throttle cost 10, +1 for each first-attempt success). It returns a fresh
// value, so every transport built with it owns its own quota.
func Standard() Policy {
	return Policy{MaxAttempts: DefaultMaxAttempts, Backoff: backoff.FullJitter{}}
}

// Adaptive returns AWS adaptive retry mode (docs/aws.md): Standard plus a
// client-side rate limiter that paces every attempt of a scope, the first
// included, from the throttles the scope receives: Limiter is a
// &ratelimit.Adaptive{} with the default parameters, which fix the SDKs'
// cold start (see ratelimit.Adaptive).
//
// It returns a new *ratelimit.Adaptive on every call. A transport uses it
// as given: two transports built with the same returned Policy share its
// send rates, per scope, so call Adaptive once per transport unless that
// is what you want.
func Adaptive() Policy {
	p := Standard()
	p.Limiter = &ratelimit.Adaptive{}
	return p
}

// None returns a policy that never retries: one attempt, as the "legacy"
// or "off" retry mode of docs/aws.md.
func None() Policy { return Policy{MaxAttempts: 1} }

// StandardV2 returns the newer standard retry behaviour of the AWS SDKs
// (docs/aws.md, opt-in in the SDKs since 2026): Standard with shorter waits
// after transient failures, longer ones after throttles, and costs that
// let throttled clients retry longer than failing ones:
//
//	MaxAttempts       3
//	Backoff           backoff.FullJitter{Base: 50ms}: retry n waits under
//	                  50ms·2^(n-1), capped at 20s: 50ms, 100ms, 200ms, ...
//	ThrottleBackoff   backoff.FullJitter{Base: 1s}: 1s, 2s, 4s, ... after a
//	                  Throttle outcome
//	Quota             quota.Bucket{RetryCost: 14, ThrottleCost: 5}:
//	                  500 tokens, 14 per retry after a Transient outcome,
//	                  5 after a Throttle; docs/aws.md gives no timeout cost, so
//	                  a Timeout keeps standard mode's 10
//	ServerDelay       ServerDelay{Bound: 5s}: a server's delay d is used as
//	                  max(backoff, min(d, backoff + 5s)), as the SDKs
//	                  treat x-amz-retry-after
//
// The SDKs read only x-amz-retry-after; StandardV2 trusts every delay header
// (ServerDelay.Headers zero) and bounds each the same way, which for AWS
// responses comes to the same.
//
// Since its costs are not the defaults, StandardV2 returns a new
// *quota.Bucket on every call. A transport uses it as given: two
// transports built with the same returned Policy share its buckets, so call
// StandardV2 once per transport unless that is what you want.
func StandardV2() Policy {
	return Policy{
		MaxAttempts:     DefaultMaxAttempts,
		Backoff:         backoff.FullJitter{Base: 50 * time.Millisecond},
		ThrottleBackoff: backoff.FullJitter{Base: time.Second},
		Quota:           &quota.Bucket{RetryCost: 14, ThrottleCost: 5},
		ServerDelay:     ServerDelay{Bound: 5 * time.Second},
	}
}

// KotlinStandard returns the standard retry strategy of the AWS SDK for
// Kotlin with its defaults (docs/aws.md):
//
//	MaxAttempts  3
//	Backoff      backoff.ScaledJitter{InitialDelay: 10ms, ScaleFactor: 1.5,
//	             MaxBackoff: 20s, Jitter: 1}, the SDK's delay provider:
//	             retry n waits up to min(10ms·1.5^(n-1), 20s), cut by a
//	             random share of up to all of it: at most 10ms, 15ms,
//	             22.5ms, ...
//	Quota        nil: the transport's own quota.Bucket, whose defaults
//	             are the SDK's token bucket (500 tokens, retry cost 5,
//	             timeout and throttle cost 10, +1 for each first-attempt
//	             success, no refill over time, circuit-breaker mode)
//
// It is Standard with the SDK's smaller, slower-growing delays.
func KotlinStandard() Policy {
	return Policy{
		MaxAttempts: DefaultMaxAttempts,
		Backoff:     backoff.ScaledJitter{InitialDelay: 10 * time.Millisecond, ScaleFactor: 1.5, MaxBackoff: 20 * time.Second, Jitter: 1},
	}
}

// KotlinAdaptive returns the adaptive retry strategy of the AWS SDK for
// Kotlin as its guide configures it (docs/aws.md): KotlinStandard with 10
// attempts and a client-side rate limiter with a minimum fill rate of 1
// request per second and a smoothing of 0.75,
// &ratelimit.Adaptive{MinFillRate: 1, Smoothing: 0.75, ThrottleRetries: -1}.
// As in the SDK, the 10 attempts are all a request gets: ThrottleRetries
// -1 gives it none of the retries after paced throttles that Adaptive
// does not count, so a server that always throttles sees 10 attempts, not
// 15. The limiter's other parameters are the defaults (see
// ratelimit.Adaptive for where its rates depart from the SDKs' arithmetic;
// set Reference for the SDKs' own).
//
// It returns a new *ratelimit.Adaptive on every call. A transport uses it
// as given: two transports built with the same returned Policy share its
// send rates, so call KotlinAdaptive once per transport unless that is what
// you want.
func KotlinAdaptive() Policy {
	p := KotlinStandard()
	p.MaxAttempts = 10
	p.Limiter = &ratelimit.Adaptive{MinFillRate: 1, Smoothing: 0.75, ThrottleRetries: -1}
	return p
}

// The Azure presets follow the Azure retry guidance (docs/azure.md).
// Azure counts retries where Policy counts attempts, so MaxAttempts is
// always one more than the guide's retry count. The guide's end-to-end
// budgets, such as the Storage client's MaximumExecutionTime, become
// MaxTotalTime, and MaxDelay is raised to the strategy's cap where that is
// above 20s, so that no delay is cut. They keep the retry quota, which
// Azure's clients lack but which acts only when most attempts fail.

// AzureStorageExponential returns the Azure Storage client's default,
// ExponentialRetry: 3 retries with MinBackoff 3s, MaxBackoff 30s and
// deltaBackoff 4s, waiting about 3, 7 and 15 s (see backoff.Exponential for
// the ranges), within MaximumExecutionTime's 120s.
func AzureStorageExponential() Policy {
	return Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 120 * time.Second,
	}
}

// AzureStorageLinear returns the Azure Storage client's LinearRetry with its
// defaults: 3 retries 30s apart (backoff.Constant), within
// MaximumExecutionTime's 120s.
func AzureStorageLinear() Policy {
	return Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 30 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 120 * time.Second,
	}
}

// AzureStorageInteractive returns the Storage guide's starting point for
// interactive and UI requests: LinearRetry(500ms, 3), three retries 500ms
// apart, with a 2s end-to-end budget (MaximumExecutionTime).
func AzureStorageInteractive() Policy {
	return Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 500 * time.Millisecond},
		MaxTotalTime: 2 * time.Second,
	}
}

// AzureStorageBackground returns the Storage guide's starting point for
// background and batch requests: ExponentialRetry with 5 retries and
// deltaBackoff 4s, waiting up to 3, 7 and 15 s and then 30s, within a 30s
// end-to-end budget (MaximumExecutionTime in the guide's example). The
// budget, not the count, ends it: the first three waits take 21.8 to 28.2 s,
// so the fourth wait, 25.4 to 30 s, is never started.
func AzureStorageBackground() Policy {
	return Policy{
		MaxAttempts:  6,
		Backoff:      backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second},
		MaxDelay:     30 * time.Second,
		MaxTotalTime: 30 * time.Second,
	}
}

// AzureInteractive returns the guide's Transient Fault Handling ("Topaz")
// starting point for interactive requests (its SQL Database and Active
// Directory sections): FixedInterval, 3 retries of 500ms with a fast first
// retry, so the waits are 0, 500ms and 500ms, within a 2s end-to-end budget.
func AzureInteractive() Policy {
	return Policy{
		MaxAttempts:  4,
		Backoff:      backoff.Constant{Interval: 500 * time.Millisecond, FastFirstRetry: true},
		MaxTotalTime: 2 * time.Second,
	}
}

// AzureBackground returns the guide's Topaz starting point for background
// and batch requests: ExponentialBackoff with 5 retries, minBackoff 0,
// maxBackoff 60s and deltaBackoff 2s, waiting 0 and then about 2, 6, 14 and
// 30 s, within a 60s end-to-end budget. The budget is the Active Directory
// section's (see docs/azure.md); the SQL Database section gives 30s for the
// same strategy.
func AzureBackground() Policy {
	return Policy{
		MaxAttempts:  6,
		Backoff:      backoff.Exponential{NoMinBackoff: true, MaxBackoff: 60 * time.Second, DeltaBackoff: 2 * time.Second},
		MaxDelay:     60 * time.Second,
		MaxTotalTime: 60 * time.Second,
	}
}

// namedPreset is a preset and the name Preset knows it by.
type namedPreset struct {
	name string
	fn   func() Policy
}

// presets returns the named presets in PresetNames' order. It builds the
// table on each call, so that no caller can change it.
func presets() []namedPreset {
	return []namedPreset{
		{"standard", Standard},
		{"adaptive", Adaptive},
		{"none", None},
		{"standard-v2", StandardV2},
		{"kotlin-standard", KotlinStandard},
		{"kotlin-adaptive", KotlinAdaptive},
		{"sns-aws-managed", SNSAWSManaged},
		{"sns-customer-managed", SNSCustomerManaged},
		{"azure-storage-exponential", AzureStorageExponential},
		{"azure-storage-linear", AzureStorageLinear},
		{"azure-storage-interactive", AzureStorageInteractive},
		{"azure-storage-background", AzureStorageBackground},
		{"azure-interactive", AzureInteractive},
		{"azure-background", AzureBackground},
		{"azure-cosmos-db", AzureCosmosDB},
		{"azure-service-bus", AzureServiceBus},
		{"azure-search", AzureSearch},
		{"azure-active-directory", AzureActiveDirectory},
	}
}

// PresetNames returns the names that [Preset] knows, in this order:
// standard, adaptive, none, standard-v2, kotlin-standard, kotlin-adaptive,
// sns-aws-managed, sns-customer-managed, azure-storage-exponential,
// azure-storage-linear, azure-storage-interactive,
// azure-storage-background, azure-interactive, azure-background,
// azure-cosmos-db, azure-service-bus, azure-search and
// azure-active-directory. Each is the name of the preset function in lower
// case with its words joined by "-". The slice is new on every call.
func PresetNames() []string {
	var names []string
	for _, p := range presets() {
		names = append(names, p.name)
	}
	return names
}

// Preset returns the preset named name, one of [PresetNames] in any case,
// for configuration files and command lines: Preset("Standard") returns
// Standard(). Like the preset functions, it returns new values on every
// call.
//
// A preset has one name: the Go name of its function is not one, so that
// a configuration is written one way and can be searched for. For an
// unknown name Preset returns a zero Policy and a *[FieldError] for the
// field "preset" whose Want lists the names and whose Suggestion is the
// name meant, when one is close (see the example):
//
//	policy: preset = "AzureBackground"; did you mean "azure-background"?
func Preset(name string) (Policy, error) {
	if p, ok := lookupPreset(name); ok {
		return p, nil
	}
	names := PresetNames()
	return Policy{}, &FieldError{Field: "preset", Value: strconv.Quote(name), Want: "one of " + strings.Join(names, ", "), Suggestion: closest(name, names)}
}

// lookupPreset returns the preset named name, in any case.
func lookupPreset(name string) (Policy, bool) {
	for _, p := range presets() {
		if strings.EqualFold(name, p.name) {
			return p.fn(), true
		}
	}
	return Policy{}, false
}
