package retrytransport

import (
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// compiled is a policy as a Transport runs it: its defaults resolved,
// and the quotas and limiters the Transport made for it (or the user
// supplied). One compiled policy serves every host its pattern matches.
type compiled struct {
	p              policy.Policy
	quota          quota.Quota          // Policy.Quota; nil for quota.None
	requests       quota.RequestCounter // quota, if it counts requests; else nil
	limiter        ratelimit.Limiter    // the adaptive limiter (Policy.Limiter); nil for none
	learner        ratelimit.Recorder   // limiter, if it learns from outcomes; else nil
	releaser       ratelimit.Releaser   // limiter, if it counts the attempts in flight; else nil
	freeThrottles  bool                 // retries after throttles cost no quota: see pacesThrottles
	throttleExtra  int                  // retries after paced throttles that MaxAttempts does not count: see throttleRetrier
	fixed          ratelimit.Limiter    // nil unless the policy has a fixed rate (Policy.RateLimit)
	breaker        breaker.Breaker      // Policy.Breaker; nil for none
	conc           concurrency.Limiter  // Policy.Concurrency; nil for none
	budget         quota.Quota          // Policy.Budget; nil for none
	budgetRequests quota.RequestCounter // budget, if it counts requests; else nil
	endpoints      *endpoints           // Policy.Failover, resolved; nil when the policy does not fail over
	hedge          *hedgeConfig         // Policy.Hedge; nil when the policy does not hedge
	penalty        *penaltyConfig       // Policy.Penalty; nil for none
	learnsLatency  bool                 // the policy hedges after a latency quantile (Policy.Hedge.Quantile)
	err            error                // why the policy cannot be used: New's configuration error
	customClassify bool                 // Classify was set: it may read any response body
	unclassified   bool                 // one attempt, no pacing, no time bounds: a response is the caller's as the base transport returned it

	// quotas is the limiter, if it paces by the quotas that responses
	// publish and the policy trusts the fields they come in; else nil.
	quotas ratelimit.QuotaRecorder

	// hostPolicy is, for a request's own rules (RequestPolicy), the host's
	// compiled policy whose shared state they use (see withRules); nil for
	// a host's own.
	hostPolicy *compiled
	// shorthands are this host policy under WithoutRetries and
	// WithReplay, compiled on first use.
	shorthands shorthandRules
}

// compile resolves p. A quota the Transport creates runs on the
// Transport's clock; a quota or limiter the user supplied keeps its own.
//
// A quota that counts requests (a *quota.Budget) belongs in
// Policy.Budget, and policy.Policy.Validate rejects one in Quota. Given
// there all the same, it hears of each request in the request's own
// scope, and is paid, as any Quota is, in the scope each retry goes to:
// with Failover, a retry to an alternate endpoint, where no request is
// counted, gets only the budget's floor.
func compile(p policy.Policy, now func() time.Time) *compiled {
	// The quotas and limiters are read from cp.p, where WithDefaults made a
	// nil *quota.Bucket and the like nil, which they mean: a method call on
	// one would panic.
	cp := &compiled{p: p.WithDefaults(), customClassify: p.Classify != nil}
	switch cp.p.Quota {
	case nil:
		cp.quota = &quota.Bucket{Now: now}
	case quota.None:
		// no quota at all: no charge, no refund, level -1
	default:
		cp.quota = cp.p.Quota
	}
	cp.requests, _ = cp.quota.(quota.RequestCounter)
	cp.limiter = cp.p.Limiter
	cp.learner, _ = cp.limiter.(ratelimit.Recorder)
	cp.releaser, _ = cp.limiter.(ratelimit.Releaser)
	if cp.p.ServerDelay.Headers&(retryafter.IETFRateLimit|retryafter.RateLimitReset) != 0 {
		cp.quotas, _ = cp.limiter.(ratelimit.QuotaRecorder)
	}
	c, charges := cp.limiter.(throttleCharger)
	cp.freeThrottles = cp.learner != nil && !(charges && c.ChargesThrottles())
	if r, ok := cp.limiter.(throttleRetrier); ok && cp.freeThrottles {
		cp.throttleExtra = max(r.ExtraThrottleRetries(), 0)
	}
	cp.fixed = cp.p.RateLimit
	cp.breaker, cp.conc = cp.p.Breaker, cp.p.Concurrency
	if cp.p.Budget != quota.None {
		cp.budget = cp.p.Budget
	}
	cp.budgetRequests, _ = cp.budget.(quota.RequestCounter)
	// WithDefaults made a Failover, Hedge or Penalty that can never act
	// (one that Validate rejects) nil, and copied the others: cp.p shares
	// nothing with the caller's.
	cp.endpoints, cp.err = newEndpoints(cp.p.Failover)
	cp.hedge, cp.penalty = (*hedgeConfig)(cp.p.Hedge), (*penaltyConfig)(cp.p.Penalty)
	cp.learnsLatency = cp.hedge != nil && cp.hedge.Quantile > 0
	cp.unclassified = cp.p.MaxAttempts == 1 && cp.limiter == nil && cp.fixed == nil && cp.breaker == nil && cp.conc == nil &&
		cp.p.AttemptTimeout == 0 && cp.p.MaxTotalTime == 0 && cp.p.AttemptHeader == "" &&
		cp.endpoints == nil && cp.hedge == nil
	return cp
}

// countRequest tells the retry quotas that count requests of a request
// in scope, its own.
func (cp *compiled) countRequest(scope string) {
	if cp.requests != nil {
		cp.requests.Request(scope)
	}
	if cp.budgetRequests != nil {
		cp.budgetRequests.Request(scope)
	}
}

// scope returns the key of req's quota and limiter buckets.
func (cp *compiled) scope(req *http.Request) string {
	if cp.p.Scope != nil {
		return cp.p.Scope(req)
	}
	return canonicalHost(req.URL.Host)
}

// quotaLevel returns the level of scope's retry quota, or -1 when the
// policy has none.
func (cp *compiled) quotaLevel(scope string) float64 {
	if cp.quota == nil {
		return -1
	}
	return cp.quota.Level(scope)
}

// idempotent reports whether req may be sent again after any retryable
// outcome: its method or an idempotency key says so, or the policy treats
// every request so.
func (cp *compiled) idempotent(req *http.Request) bool {
	return cp.p.RetryNonIdempotent || classify.IsIdempotent(req)
}

// errorOutcome classifies an attempt that got err and no response. A base
// transport that returned neither breaks the RoundTripper contract; that
// is final.
func (cp *compiled) errorOutcome(req *http.Request, err error) classify.Outcome {
	if err == errNoResponse {
		return classify.Outcome{Kind: classify.Fatal, Reason: "no response"}
	}
	return cp.p.Classify(req, nil, err)
}
