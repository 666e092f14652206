package retrytransport

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/retrytransport/retrytransport/ratelimit"
)

// maxStatsScopes bounds how many scopes the counters track, so that a client
// calling many distinct hosts keeps bounded memory. Past it, an arbitrary
// tracked scope is forgotten to make room.
const maxStatsScopes = 10_000

// ScopeStats is a snapshot of what the Transport did for one scope (by
// default a host:port; see policy.Policy.Scope) since the scope was first
// seen, and the state of its retry quota and rate limiters.
type ScopeStats struct {
	// Scope is the scope key.
	Scope string
	// Attempts counts every request sent to the base transport, retries
	// included; Retries counts those that were retries.
	Attempts, Retries uint64
	// Throttles counts attempts classified as throttled.
	Throttles uint64
	// QuotaRefusals counts retries the retry quota refused (the circuit
	// breaker); RateLimited counts attempts a client-side rate limiter
	// refused to wait for.
	QuotaRefusals, RateLimited uint64
	// Quota is the retry quota's level in tokens, or -1 when the scope's
	// policy has no quota.
	Quota float64
	// Adaptive is the state of the scope's adaptive rate limiter (fill
	// rate, measured rate, tokens); the zero value when the policy is not
	// adaptive.
	Adaptive ratelimit.AdaptiveState
}

// scopeCounters are the live counters behind a ScopeStats.
type scopeCounters struct {
	st                                                       *hostState
	attempts, retries, throttles, quotaRefusals, rateLimited atomic.Uint64
}

// statsTable maps scopes to their counters. A sync.Map keeps the common
// case, an existing scope, free of locks and allocations.
type statsTable struct {
	m sync.Map // scope string -> *scopeCounters
	n atomic.Int64
}

// get returns the counters of scope, creating them on first use.
func (s *statsTable) get(scope string, st *hostState) *scopeCounters {
	if c, ok := s.m.Load(scope); ok {
		return c.(*scopeCounters)
	}
	if s.n.Load() >= maxStatsScopes {
		s.m.Range(func(k, _ any) bool {
			if _, loaded := s.m.LoadAndDelete(k); loaded {
				s.n.Add(-1)
			}
			return false
		})
	}
	c, loaded := s.m.LoadOrStore(scope, &scopeCounters{st: st})
	if !loaded {
		s.n.Add(1)
	}
	return c.(*scopeCounters)
}

// Snapshot returns the statistics of every scope the Transport has seen
// (up to 10,000 of the most recent), sorted by scope. It is safe to call
// while requests are in flight; each scope's numbers are read without
// stopping them, so they may be a request apart from each other.
func (t *Transport) Snapshot() []ScopeStats {
	var out []ScopeStats
	t.stats.m.Range(func(k, v any) bool {
		c := v.(*scopeCounters)
		scope := k.(string)
		s := ScopeStats{
			Scope:         scope,
			Attempts:      c.attempts.Load(),
			Retries:       c.retries.Load(),
			Throttles:     c.throttles.Load(),
			QuotaRefusals: c.quotaRefusals.Load(),
			RateLimited:   c.rateLimited.Load(),
			Quota:         -1,
		}
		if c.st.quota != nil {
			s.Quota = c.st.quota.Level(scope)
		}
		if c.st.adaptive != nil {
			s.Adaptive = c.st.adaptive.State(scope)
		}
		out = append(out, s)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out
}
