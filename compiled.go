package retrytransport

import (
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// compiled is a policy as a Transport runs it: its defaults resolved,
// and the quotas and limiters the Transport made for it (or the user
// supplied). One compiled policy serves every host its pattern matches.
type compiled struct {
	p              policy.Policy
	quota          ratelimit.RetryQuota     // nil when the policy disables it
	requests       ratelimit.RequestCounter // quota, if it counts requests; else nil
	limiter        ratelimit.Limiter        // the adaptive limiter (Policy.Limiter); nil unless the policy is adaptive
	learner        ratelimit.Recorder       // limiter, if it learns from outcomes; else nil
	freeThrottles  bool                     // retries after throttles cost no quota: see pacesThrottles
	fixed          ratelimit.Limiter        // nil unless the policy has a fixed rate (Policy.RateLimit)
	budget         ratelimit.RetryQuota     // Policy.Budget; nil for none
	budgetRequests ratelimit.RequestCounter // budget, if it counts requests; else nil
	endpoints      *endpoints               // Policy.Endpoints in LocationMode's order; nil when the policy does not fail over
	hedges         bool                     // the policy hedges (Policy.Hedge)
	penalty        bool                     // the policy has a Penalty that can apply
	learnsLatency  bool                     // the policy hedges after a latency quantile (Policy.Hedge.Quantile)
	err            error                    // why the policy cannot be used: New's configuration error
	customClassify bool                     // Classify was set: it may read any response body
	unclassified   bool                     // one attempt, no pacing, no time bounds: a response is the caller's as the base transport returned it
}

// compile resolves p. A quota the Transport creates runs on the
// Transport's clock; a quota the user supplied keeps its own.
func compile(p policy.Policy, now func() time.Time) *compiled {
	cp := &compiled{p: p.WithDefaults(), customClassify: p.Classify != nil}
	if !p.DisableQuota {
		cp.quota = p.Quota
		if cp.quota == nil {
			cp.quota = &ratelimit.Quota{Now: now}
		}
	}
	cp.requests, _ = cp.quota.(ratelimit.RequestCounter)
	cp.limiter = p.Limiter
	if cp.limiter == nil && p.Adaptive {
		cp.limiter = &ratelimit.Adaptive{Now: now}
	}
	cp.learner, _ = cp.limiter.(ratelimit.Recorder)
	c, charges := cp.limiter.(throttleCharger)
	cp.freeThrottles = cp.learner != nil && !(charges && c.ChargesThrottles())
	cp.fixed = p.RateLimit
	cp.budget = p.Budget
	cp.budgetRequests, _ = cp.budget.(ratelimit.RequestCounter)
	cp.endpoints, cp.err = newEndpoints(&cp.p)
	cp.hedges = cp.p.Hedge.Enabled()
	cp.penalty = cp.p.Penalty.Enabled()
	cp.learnsLatency = cp.hedges && cp.p.Hedge.Quantile > 0
	cp.unclassified = cp.p.MaxAttempts == 1 && cp.limiter == nil && cp.fixed == nil &&
		cp.p.AttemptTimeout == 0 && cp.p.MaxTotalTime == 0 && cp.p.AttemptHeader == "" &&
		cp.endpoints == nil && !cp.hedges
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
