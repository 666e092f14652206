package retrytransport

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// RequestPolicy is a policy for single requests, compiled once: reuse it.
// A request carries it in its context (WithRequestPolicy), and the
// Transport then retries that request by its rules instead of its host's,
// while the scope's shared state stays the host's (see WithRequestPolicy
// for which fields are which).
//
// A RequestPolicy keeps, for each host policy it was used under, the two
// merged into one, so that reusing it costs no allocation per request
// after the first under each host policy; it holds them as long as it
// lives, so make one per set of rules, not one per request. It is safe
// for concurrent use, and by several Transports. It must not be copied
// after first use. The zero RequestPolicy changes nothing: make one with
// NewRequestPolicy.
type RequestPolicy struct {
	own *compiled // the rules alone, defaults resolved; own.err says why they cannot be used

	// byHost maps a host's *compiled to the rules merged with its shared
	// state (withRules). last is the entry made last, found without
	// hashing: a client of one host never looks in the map.
	byHost sync.Map
	last   atomic.Pointer[compiled]
}

// NewRequestPolicy returns p, compiled, as the rules of the requests that
// carry it (WithRequestPolicy). It never fails: a p that New could not use
// (one that p.Validate rejects, Failover endpoints that do not parse)
// ends each request that carries it before its first attempt, with a
// *RetryError whose Reason is ErrInvalidPolicy and whose Err names the
// field. Only the fields the request uses are checked: those that the
// host's policy provides (see WithRequestPolicy) are ignored, whatever
// their value. The zero policy.Policy means policy.Standard()'s rules, as
// for a host.
func NewRequestPolicy(p policy.Policy) *RequestPolicy {
	// A scope's shared state is never the request's: drop it before the
	// rules are checked or compiled, so that compile makes no quota.
	p.Quota, p.Budget, p.Limiter, p.RateLimit = quota.None, nil, nil, nil
	p.Breaker, p.Concurrency, p.Penalty, p.Scope = nil, nil, nil, nil
	err := p.Validate()
	own := compile(p, nil)
	if err == nil {
		err = own.err
	}
	if err != nil {
		own.err = &requestPolicyError{err}
	}
	return &RequestPolicy{own: own}
}

// requestRulesKey is the context key of a request's own rules: a
// *RequestPolicy, or a shorthand.
type requestRulesKey struct{}

// shorthand is the rules of WithoutRetries or WithReplay, which each host
// policy compiles once for itself (compiled.shorthand).
type shorthand uint8

const (
	noRetries shorthand = iota + 1 // WithoutRetries
	replay                         // WithReplay
)

// WithRequestPolicy returns a copy of ctx that carries rp: a request sent
// with it through a Transport is retried by rp's rules rather than by
// those of its host's policy, as httptrace.WithClientTrace hands a trace
// to one request. A nil rp means no request policy: the host's rules
// again, even when ctx carried rules of its own. Each of
// WithRequestPolicy, WithoutRetries and WithReplay replaces the rules that
// ctx carried; to combine them, set the fields in the policy given to
// NewRequestPolicy.
//
// Everything about how this request is retried comes from rp: MaxAttempts,
// Backoff, ThrottleBackoff, MaxDelay, ServerDelay, AttemptTimeout,
// MaxTotalTime, MaxTotalWait, TerminationBuffer, Classify,
// RetryNonIdempotent, MaxBodyBuffer, Hedge, Failover, MaxDrain,
// ReadTimeout, AttemptHeader and IgnoreSDKAttempts. The scope's shared
// state is the host's, whatever rp sets in those fields: the retry quota
// (Quota), the retry budget (Budget), the adaptive and fixed rate limiters
// (Limiter, RateLimit), the circuit breaker (Breaker), the concurrency
// limit (Concurrency), the penalty (Penalty), the Scope function and the
// statistics (Transport.Snapshot) all come from the host's policy. So one
// call cannot escape a fleet's quota or pace: its retries pay the host's
// quota, in the host's scopes, and its attempts are paced, admitted and
// counted there. Which quotas a response publishes to the host's limiter
// is decided by the host's ServerDelay too; rp's decides only which
// headers set this request's waits. The SDK marks are read as for any
// request (unless rp sets IgnoreSDKAttempts): an SDK's own attempts count
// against rp's MaxAttempts.
//
// The request's Events say it carried its own rules (Event.RequestPolicy).
// An rp that New could not use ends the request before its first attempt
// (see NewRequestPolicy).
func WithRequestPolicy(ctx context.Context, rp *RequestPolicy) context.Context {
	return context.WithValue(ctx, requestRulesKey{}, rp)
}

// WithoutRetries returns a copy of ctx with which a request gets one
// attempt: it is sent once, never retried nor hedged, by its host's
// policy otherwise (time limits, classification, the scope's shared
// state: see WithRequestPolicy). A health check, say, or a call whose
// caller has retries of its own. It replaces any rules ctx carried.
func WithoutRetries(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestRulesKey{}, noRetries)
}

// WithReplay returns a copy of ctx with which the caller vouches that a
// request may be sent again after any retryable outcome, whatever its
// method, as policy.Policy.RetryNonIdempotent does for a whole policy: a
// POST that the server deduplicates, for one. Its host's policy applies
// otherwise. Hedging still requires an idempotent method, as it does
// under RetryNonIdempotent: two copies of a POST in flight at once are
// not what one replay after another is. It replaces any rules ctx
// carried.
func WithReplay(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestRulesKey{}, replay)
}

// forRequest returns the compiled policy of a request with context ctx
// under cp, a host's policy: cp itself, unless ctx carries rules of its
// own (one context lookup when it does not). Rules that cannot be used come back
// with their err set.
func (cp *compiled) forRequest(ctx context.Context) *compiled {
	switch v := ctx.Value(requestRulesKey{}).(type) {
	case *RequestPolicy:
		return v.under(cp)
	case shorthand:
		return cp.shorthand(v)
	}
	return cp
}

// under returns rp's rules merged with host's shared state, made on the
// first request under host and kept. A nil or zero rp is host.
func (rp *RequestPolicy) under(host *compiled) *compiled {
	if rp == nil || rp.own == nil {
		return host
	}
	if rp.own.err != nil {
		return rp.own
	}
	if m := rp.last.Load(); m != nil && m.hostPolicy == host {
		return m
	}
	if v, ok := rp.byHost.Load(host); ok {
		return v.(*compiled)
	}
	v, loaded := rp.byHost.LoadOrStore(host, host.withRules(rp.own.p, rp.own.customClassify))
	if !loaded {
		rp.last.Store(v.(*compiled))
	}
	return v.(*compiled)
}

// shorthandRules are host's policy under WithoutRetries and WithReplay,
// each compiled on its first request.
type shorthandRules struct {
	noRetriesOnce, replayOnce sync.Once
	noRetries, replay         *compiled
}

// shorthand returns cp, a host's policy, under s, compiled on first use.
func (cp *compiled) shorthand(s shorthand) *compiled {
	sr := &cp.shorthands
	switch s {
	case noRetries:
		sr.noRetriesOnce.Do(func() {
			p := cp.p
			p.MaxAttempts, p.Hedge = 1, nil
			sr.noRetries = cp.withRules(p, cp.customClassify)
		})
		return sr.noRetries
	case replay:
		sr.replayOnce.Do(func() {
			p := cp.p
			p.RetryNonIdempotent = true
			sr.replay = cp.withRules(p, cp.customClassify)
		})
		return sr.replay
	}
	return cp
}

// withRules compiles p, a request's own rules with their defaults
// resolved, with the shared state of cp, a host's policy: the fields of p
// that hold it are replaced by cp's, the quota and limiter instances cp
// made or was given, so that compile derives what depends on them
// (freeThrottles, throttleExtra, ...) as it did for cp, and makes nothing
// new. customClassify says whether the rules' Classify was set, as p's,
// its default resolved, always is. Which quotas responses publish to
// cp's limiter stays cp's decision (quotas).
func (cp *compiled) withRules(p policy.Policy, customClassify bool) *compiled {
	if !customClassify {
		p.Classify = nil // the default, which reads only failed responses' bodies (mayBeRead)
	}
	p.Quota = cp.quota
	if cp.quota == nil {
		p.Quota = quota.None
	}
	p.Budget, p.Limiter, p.RateLimit = cp.budget, cp.limiter, cp.fixed
	p.Breaker, p.Concurrency = cp.breaker, cp.conc
	p.Penalty, p.Scope = cp.p.Penalty, cp.p.Scope
	m := compile(p, nil)
	m.hostPolicy, m.quotas = cp, cp.quotas
	return m
}

// shared returns the compiled policy whose shared state cp uses: the
// host's, for a request's own rules, else cp itself. Statistics are kept
// with it.
func (cp *compiled) shared() *compiled {
	if cp.hostPolicy != nil {
		return cp.hostPolicy
	}
	return cp
}

// requestPolicyError is why a RequestPolicy cannot be used: what
// policy.Policy.Validate, or New, found wrong, naming the field.
type requestPolicyError struct{ err error }

// Error returns "retrytransport: request policy: <field>: <what is
// wrong>", without the "policy: " that starts the errors of package
// policy, one line for each mistake.
func (e *requestPolicyError) Error() string {
	msg := e.err.Error()
	if pe, ok := e.err.(*policyError); ok {
		msg = pe.field + ": " + pe.err.Error()
	}
	msg = strings.TrimPrefix(msg, "policy: ")
	return "retrytransport: request policy: " + strings.ReplaceAll(msg, "\npolicy: ", "\n")
}

func (e *requestPolicyError) Unwrap() error { return e.err }
