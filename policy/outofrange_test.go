package policy_test

// Validate, WithDefaults (which New applies) and the field comments agree
// on every out-of-range value: a value a comment gives a meaning passes
// Validate and WithDefaults resolves it to that meaning; a value a comment
// calls an error fails Validate, and WithDefaults still gives it the value
// the comment names.

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

func TestOutOfRangeValuesAgreeWithTheDocs(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	below1 := math.Nextafter(1, 0)
	signal := []string{"ServerBusy"}
	b := []string{"b.example"}
	tests := []struct {
		name  string
		p     policy.Policy
		field string // the field Validate names; "" when it accepts p
		get   func(policy.Policy) any
		want  any // get(p.WithDefaults())
	}{
		// "Zero means DefaultMaxAttempts (3); 1 disables retries ... A negative value is an error, which Validate reports ...; New treats it as zero."
		{"MaxAttemptsZero", policy.Policy{MaxAttempts: 0}, "", attempts, 3},
		{"MaxAttemptsNegative", policy.Policy{MaxAttempts: -1}, "MaxAttempts", attempts, 3},
		{"MaxAttemptsMinInt", policy.Policy{MaxAttempts: math.MinInt}, "MaxAttempts", attempts, 3},
		{"MaxAttemptsOne", policy.Policy{MaxAttempts: 1}, "", attempts, 1},
		{"MaxAttemptsHuge", policy.Policy{MaxAttempts: math.MaxInt}, "", attempts, math.MaxInt},
		// "Zero or negative means DefaultMaxDelay (20 s)."
		{"MaxDelayZero", policy.Policy{}, "", maxDelay, 20 * time.Second},
		{"MaxDelayNegative", policy.Policy{MaxDelay: -time.Second}, "", maxDelay, 20 * time.Second},
		{"MaxDelayHuge", policy.Policy{MaxDelay: huge}, "", maxDelay, huge},
		// ServerDelay.Bound: "Zero means the server's delay is used as given. Validate rejects a negative value, which New treats as zero."
		{"ServerDelayBoundZero", policy.Policy{}, "", serverDelayBound, time.Duration(0)},
		{"ServerDelayBoundNegative", policy.Policy{ServerDelay: policy.ServerDelay{Bound: -time.Second}}, "ServerDelay.Bound", serverDelayBound, time.Duration(0)},
		{"ServerDelayBoundHuge", policy.Policy{ServerDelay: policy.ServerDelay{Bound: huge}}, "", serverDelayBound, huge},
		// ServerDelay.Headers: "Zero means retryafter.DefaultSources; retryafter.None trusts none. Validate rejects None together with other headers, which New treats as those headers alone."
		{"ServerDelayHeadersZero", policy.Policy{}, "", serverDelayHeaders, retryafter.DefaultSources},
		{"ServerDelayHeadersNone", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.None}}, "", serverDelayHeaders, retryafter.None},
		{"ServerDelayHeadersNoneAndOthers", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.None | retryafter.RetryAfter}}, "ServerDelay.Headers", serverDelayHeaders, retryafter.RetryAfter},
		// "Zero means no per-attempt timeout. Validate rejects a negative value, which New treats as zero, and one longer than a non-zero MaxTotalTime."
		{"AttemptTimeoutNegative", policy.Policy{AttemptTimeout: -1}, "AttemptTimeout", attemptTimeout, time.Duration(0)},
		{"AttemptTimeoutHuge", policy.Policy{AttemptTimeout: huge}, "", attemptTimeout, huge},
		{"AttemptTimeoutOverBudget", policy.Policy{AttemptTimeout: 2 * time.Second, MaxTotalTime: time.Second}, "AttemptTimeout", attemptTimeout, 2 * time.Second},
		// "Zero means no budget. Validate rejects a negative value, which New treats as zero."
		{"MaxTotalTimeNegative", policy.Policy{MaxTotalTime: -1}, "MaxTotalTime", maxTotalTime, time.Duration(0)},
		{"MaxTotalTimeHuge", policy.Policy{MaxTotalTime: huge}, "", maxTotalTime, huge},
		// "Zero means no cap. Validate rejects a negative value, which New treats as zero."
		{"MaxTotalWaitNegative", policy.Policy{MaxTotalWait: -1}, "MaxTotalWait", maxTotalWait, time.Duration(0)},
		{"MaxTotalWaitHuge", policy.Policy{MaxTotalWait: huge}, "", maxTotalWait, huge},
		// "Zero means no buffer. Validate rejects a negative value, which New treats as zero, and one not shorter than a non-zero MaxTotalTime."
		{"TerminationBufferNegative", policy.Policy{TerminationBuffer: -1}, "TerminationBuffer", terminationBuffer, time.Duration(0)},
		{"TerminationBufferHugeWithoutBudget", policy.Policy{TerminationBuffer: huge}, "", terminationBuffer, huge},
		{"TerminationBufferNotShorter", policy.Policy{TerminationBuffer: time.Second, MaxTotalTime: time.Second}, "TerminationBuffer", terminationBuffer, time.Second},
		// "Zero or negative means DefaultMaxBodyBuffer (1 MiB)."
		{"MaxBodyBufferNegative", policy.Policy{MaxBodyBuffer: -1}, "", maxBodyBuffer, int64(1 << 20)},
		{"MaxBodyBufferHuge", policy.Policy{MaxBodyBuffer: math.MaxInt64}, "", maxBodyBuffer, int64(math.MaxInt64)},
		// "Zero or negative means DefaultMaxDrain (64 KiB)."
		{"MaxDrainNegative", policy.Policy{MaxDrain: math.MinInt64}, "", maxDrain, int64(64 << 10)},
		{"MaxDrainHuge", policy.Policy{MaxDrain: math.MaxInt64}, "", maxDrain, int64(math.MaxInt64)},
		// "Zero or negative means DefaultReadTimeout (1 s)."
		{"ReadTimeoutNegative", policy.Policy{ReadTimeout: -time.Second}, "", readTimeout, time.Second},
		{"ReadTimeoutHuge", policy.Policy{ReadTimeout: huge}, "", readTimeout, huge},
		// Failover: "Validate rejects a Failover without Endpoints", which fails nothing over: nil. Mode: "Validate rejects a value that is not one of the four modes", kept as it is: New then fails the requests of the policy.
		{"FailoverWithoutEndpoints", policy.Policy{Failover: &policy.Failover{Methods: []string{"GET"}}}, "Failover.Endpoints", failoverOf, (*policy.Failover)(nil)},
		{"FailoverModeNegative", policy.Policy{Failover: &policy.Failover{Endpoints: b, Mode: -1}}, "Failover.Mode", failoverOf, &policy.Failover{Endpoints: b, Mode: -1}},
		{"FailoverModeAbove", policy.Policy{Failover: &policy.Failover{Endpoints: b, Mode: 4}}, "Failover.Mode", failoverOf, &policy.Failover{Endpoints: b, Mode: 4}},
		{"FailoverModeAboveWithoutEndpoints", policy.Policy{Failover: &policy.Failover{Mode: 4}}, "Failover.Mode", failoverOf, (*policy.Failover)(nil)},
		// Hedge: "Validate rejects a negative one, which the transport treats as zero", and so on; a Hedge with neither a Delay nor a Quantile is treated as nil.
		{"HedgeNothing", policy.Policy{Hedge: &policy.Hedge{MinDelay: time.Second, MaxHedges: 2}}, "Hedge", hedge, (*policy.Hedge)(nil)},
		{"HedgeDelayNegative", policy.Policy{Hedge: &policy.Hedge{Delay: -1}}, "Hedge.Delay", hedge, (*policy.Hedge)(nil)},
		{"HedgeDelayNegativeWithQuantile", policy.Policy{Hedge: &policy.Hedge{Delay: -1, Quantile: 0.5}}, "Hedge.Delay", hedge, &policy.Hedge{Quantile: 0.5}},
		{"HedgeQuantileNegative", policy.Policy{Hedge: &policy.Hedge{Quantile: -0.5}}, "Hedge.Quantile", hedge, (*policy.Hedge)(nil)},
		{"HedgeQuantileNegativeWithDelay", policy.Policy{Hedge: &policy.Hedge{Delay: time.Second, Quantile: -0.5}}, "Hedge.Quantile", hedge, &policy.Hedge{Delay: time.Second}},
		{"HedgeQuantileOne", policy.Policy{Hedge: &policy.Hedge{Quantile: 1}}, "Hedge.Quantile", hedge, &policy.Hedge{Quantile: below1}},
		{"HedgeMinDelayNegative", policy.Policy{Hedge: &policy.Hedge{Delay: time.Second, MinDelay: -1}}, "Hedge.MinDelay", hedge, &policy.Hedge{Delay: time.Second}},
		{"HedgeMaxHedgesNegative", policy.Policy{Hedge: &policy.Hedge{Delay: time.Second, MaxHedges: -1}}, "Hedge.MaxHedges", hedge, &policy.Hedge{Delay: time.Second}},
		{"HedgeMaxHedgesAboveLimit", policy.Policy{Hedge: &policy.Hedge{Delay: time.Second, MaxHedges: 5}}, "Hedge.MaxHedges", hedge, &policy.Hedge{Delay: time.Second, MaxHedges: policy.HedgeLimit}},
		// Penalty: "Validate rejects one without either [a positive Delay and a signal], which never applies and which New treats as nil, a negative For, which New treats as zero".
		{"PenaltyDelayNegative", policy.Policy{Penalty: &policy.Penalty{Codes: signal, Delay: -time.Second}}, "Penalty.Delay", penalty, (*policy.Penalty)(nil)},
		{"PenaltyDelayZero", policy.Policy{Penalty: &policy.Penalty{Codes: signal, For: time.Second}}, "Penalty.Delay", penalty, (*policy.Penalty)(nil)},
		{"PenaltyForNegative", policy.Policy{Penalty: &policy.Penalty{Codes: signal, Delay: time.Second, For: -time.Second}}, "Penalty.For", penalty, &policy.Penalty{Codes: signal, Delay: time.Second}},
		{"PenaltyDelayWithoutSignal", policy.Policy{Penalty: &policy.Penalty{Delay: time.Second}}, "Penalty.Codes", penalty, (*policy.Penalty)(nil)},
		{"PenaltyEmptyLists", policy.Policy{Penalty: &policy.Penalty{Codes: []string{}, Statuses: []int{}, Delay: time.Second}}, "Penalty.Codes", penalty, (*policy.Penalty)(nil)},
		{"PenaltyStatusOutOfRange", policy.Policy{Penalty: &policy.Penalty{Statuses: []int{600}, Delay: time.Second}}, "Penalty.Statuses[0]", penalty, &policy.Penalty{Statuses: []int{600}, Delay: time.Second}},
		// package ratelimit: "A negative int field, or a negative or NaN RefillPerSecond, is treated as zero", and Wait "needs RefillPerSecond > 0".
		{"QuotaNegativeInts", policy.Policy{Quota: &quota.Bucket{Capacity: -1, RetryCost: -1, TimeoutCost: -1, ThrottleCost: -1, SuccessIncrement: -1, MaxScopes: -1}}, "", nil, nil},
		{"QuotaRefillNegative", policy.Policy{Quota: &quota.Bucket{RefillPerSecond: -1}}, "", nil, nil},
		{"QuotaRefillNaN", policy.Policy{Quota: &quota.Bucket{RefillPerSecond: math.NaN()}}, "", nil, nil},
		{"QuotaWaitWithoutRefill", policy.Policy{Quota: &quota.Bucket{Wait: true}}, "Quota.Wait", nil, nil},
		{"QuotaWaitNegativeRefill", policy.Policy{Quota: &quota.Bucket{Wait: true, RefillPerSecond: -1}}, "Quota.Wait", nil, nil},
		{"QuotaWaitNaNRefill", policy.Policy{Quota: &quota.Bucket{Wait: true, RefillPerSecond: math.NaN()}}, "Quota.Wait", nil, nil},
		// Quota: "quota.None turns it off"; "Validate rejects a quota that counts requests (a *quota.Budget)".
		{"QuotaNone", policy.Policy{Quota: quota.None}, "", nil, nil},
		{"QuotaBudget", policy.Policy{Quota: &quota.Budget{}}, "Quota", nil, nil},
		// Budget, Adaptive and Fixed give every value a meaning.
		{"BudgetNegatives", policy.Policy{Budget: &quota.Budget{Ratio: -1, MinPerSecond: -1, Window: -1, MaxScopes: -1}}, "", nil, nil},
		{"LimiterOutOfRange", policy.Policy{Limiter: &ratelimit.Adaptive{Beta: 2, Scale: -1, Smoothing: 5, MinFillRate: math.NaN(), Additive: -1}}, "", nil, nil},
		{"RateLimitNegatives", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: -1, Burst: -1}}, "", nil, nil},
		// package breaker: each field "Zero or negative means" its default; a MaxOpenFor "below OpenFor means OpenFor"; Stalls "of Failures or more turns the rule off".
		{"BreakerNegatives", policy.Policy{Breaker: &breaker.Circuit{Failures: -1, Stalls: -1, StallFor: -1, OpenFor: -1, MaxOpenFor: -1, Probes: -1, ProbeLease: -1, MaxScopes: -1}}, "", nil, nil},
		{"BreakerMaxOpenForBelowOpenFor", policy.Policy{Breaker: &breaker.Circuit{OpenFor: time.Minute, MaxOpenFor: time.Second, Stalls: 9, Failures: 2}}, "", nil, nil},
		// package concurrency: negative counts mean the defaults, "a value outside [Min, Max] means the nearer bound", a Max "below Min, Min", a Tolerance "of 1 or less, NaN or +Inf" and a Backoff "outside (0, 1)" the defaults; a Fixed's Max "Zero or negative means no limit".
		{"ConcurrencyAdaptiveNegatives", policy.Policy{Concurrency: &concurrency.Adaptive{Initial: -1, Min: -1, Max: -1, MaxWait: -1, MaxScopes: -1}}, "", nil, nil},
		{"ConcurrencyAdaptiveOutOfRange", policy.Policy{Concurrency: &concurrency.Adaptive{Initial: 500, Min: 50, Max: 10, Tolerance: 0.5, Backoff: 2}}, "", nil, nil},
		{"ConcurrencyAdaptiveNaN", policy.Policy{Concurrency: &concurrency.Adaptive{Tolerance: math.NaN(), Backoff: math.NaN()}}, "", nil, nil},
		{"ConcurrencyFixedNegatives", policy.Policy{Concurrency: &concurrency.Fixed{Max: -1, MaxWait: -1, MaxScopes: -1}}, "", nil, nil},
		// Nil pointers: a nil one of the module's types "means what nil means there: Validate reports it, naming the field, and New, WithDefaults, MarshalJSON and FromEnv treat it as nil."
		{"QuotaNilBucket", policy.Policy{Quota: (*quota.Bucket)(nil)}, "Quota", quotaOf, nil},
		{"BudgetNilBudget", policy.Policy{Budget: (*quota.Budget)(nil)}, "Budget", budgetOf, nil},
		{"LimiterNilAdaptive", policy.Policy{Limiter: (*ratelimit.Adaptive)(nil)}, "Limiter", limiterOf, nil},
		{"RateLimitNilFixed", policy.Policy{RateLimit: (*ratelimit.Fixed)(nil)}, "RateLimit", rateLimitOf, nil},
		{"BreakerNilCircuit", policy.Policy{Breaker: (*breaker.Circuit)(nil)}, "Breaker", breakerOf, nil},
		{"ConcurrencyNilAdaptive", policy.Policy{Concurrency: (*concurrency.Adaptive)(nil)}, "Concurrency", concurrencyOf, nil},
		{"ConcurrencyNilFixed", policy.Policy{Concurrency: (*concurrency.Fixed)(nil)}, "Concurrency", concurrencyOf, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("%s: Validate() = %v; want nil", tt.name, err)
			case tt.field != "" && (err == nil || !strings.Contains(err.Error(), "policy: "+tt.field+" ")):
				t.Errorf("%s: Validate() = %v; want an error naming %s", tt.name, err, tt.field)
			}
			if tt.get == nil {
				return
			}
			if diff := cmp.Diff(tt.want, tt.get(tt.p.WithDefaults())); diff != "" {
				t.Errorf("%s: WithDefaults() mismatch (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

// The getters of TestOutOfRangeValuesAgreeWithTheDocs.
func attempts(p policy.Policy) any           { return p.MaxAttempts }
func maxDelay(p policy.Policy) any           { return p.MaxDelay }
func serverDelayBound(p policy.Policy) any   { return p.ServerDelay.Bound }
func serverDelayHeaders(p policy.Policy) any { return p.ServerDelay.Headers }
func attemptTimeout(p policy.Policy) any     { return p.AttemptTimeout }
func maxTotalTime(p policy.Policy) any       { return p.MaxTotalTime }
func maxTotalWait(p policy.Policy) any       { return p.MaxTotalWait }
func terminationBuffer(p policy.Policy) any  { return p.TerminationBuffer }
func maxBodyBuffer(p policy.Policy) any      { return p.MaxBodyBuffer }
func maxDrain(p policy.Policy) any           { return p.MaxDrain }
func readTimeout(p policy.Policy) any        { return p.ReadTimeout }
func failoverOf(p policy.Policy) any         { return p.Failover }
func hedge(p policy.Policy) any              { return p.Hedge }
func penalty(p policy.Policy) any            { return p.Penalty }
func quotaOf(p policy.Policy) any            { return p.Quota }
func budgetOf(p policy.Policy) any           { return p.Budget }
func limiterOf(p policy.Policy) any          { return p.Limiter }
func rateLimitOf(p policy.Policy) any        { return p.RateLimit }
func breakerOf(p policy.Policy) any          { return p.Breaker }
func concurrencyOf(p policy.Policy) any      { return p.Concurrency }
