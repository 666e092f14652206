package retrytransport

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// maxStatsScopes bounds how many scopes the counters track, so that a client
// calling many distinct hosts keeps bounded memory. A new scope past it
// first evicts the sixteenth of the tracked scopes that went unused longest
// (see statsTable).
const maxStatsScopes = 10_000

// ScopeStats is a snapshot of what the Transport did for one scope (by
// default a host:port; see policy.Policy.Scope) since the scope was first
// seen, or seen again after its eviction (see Transport.Snapshot), and the
// state of its retry quota and rate limiters.
type ScopeStats struct {
	// Scope is the scope key.
	Scope string
	// Custom reports that Scope came from the policy's Scope function;
	// false means it is the requests' URL host (the default), so that a
	// telemetry exporter knows which keys are bounded by the hosts called.
	Custom bool
	// Attempts counts every request sent to the base transport, retries
	// and hedges included; Retries counts those that were retries, and
	// Hedges the copies sent beside a slow attempt (Policy.Hedge).
	Attempts, Retries, Hedges uint64
	// Throttles counts attempts classified as throttled.
	Throttles uint64
	// QuotaRefusals counts retries to this scope that the retry quota
	// (Policy.Quota, the circuit breaker) refused, in the scope each retry
	// would have gone to, whose bucket pays for it. BudgetRefusals counts
	// retries that the retry budget (Policy.Budget) refused, in the
	// scope of the request's URL, where the budget is kept, wherever the
	// retry would have gone. A retry whose quota or budget asks for a
	// longer wait than MaxDelay is refused too, and counted under the one
	// whose wait is the longer (the quota's, if they are equal).
	// RateLimited counts attempts a client-side rate limiter refused to
	// wait for. BreakerRefusals counts attempts, first ones included, that
	// the scope's circuit breaker (Policy.Breaker) refused while open, and
	// ConcurrencyRefusals those its concurrency limit (Policy.Concurrency)
	// had no place for. A hedge that either would refuse is not sent, and
	// not counted: the caller asked for its request, not for the hedge.
	QuotaRefusals, BudgetRefusals, RateLimited uint64
	BreakerRefusals, ConcurrencyRefusals       uint64
	// Quota is the retry quota's level in tokens, or -1 when the scope's
	// policy has no quota.
	Quota float64
	// Adaptive is the state of the scope's adaptive rate limiter (fill
	// rate, measured rate, tokens); the zero value when the policy's
	// Limiter does not report one, as a *ratelimit.Adaptive does.
	Adaptive ratelimit.AdaptiveState
	// Breaker is the state of the scope's circuit breaker (its phase, the
	// failures counted, until when it is open, the last failure); the zero
	// value, a closed circuit, when the policy's Breaker does not report
	// one, as a *breaker.Circuit does.
	Breaker breaker.State
	// Concurrency is the state of the scope's concurrency limit (the
	// limit, the attempts in flight and waiting, the no-load latency
	// learned); the zero value when the policy's Concurrency does not
	// report one, as *concurrency.Adaptive and *concurrency.Fixed do.
	Concurrency concurrency.State
	// Fallbacks counts the decisions of the scope's retry quotas (the
	// policy's Quota and Budget) and rate limiters that were made from the
	// process's own state because the store they share with other
	// processes (Redis, for example) did not answer in time: those that
	// implement ratelimit.FallbackCounter. It is zero for the in-process
	// ones.
	Fallbacks uint64
}

// adaptiveStater is a limiter that reports the state of its scopes, as
// ratelimit.Adaptive does.
type adaptiveStater interface {
	State(scope string) ratelimit.AdaptiveState
}

// breakerStater is a breaker that reports the state of its scopes, as
// breaker.Circuit does.
type breakerStater interface {
	State(scope string) breaker.State
}

// concurrencyStater is a concurrency limit that reports the state of its
// scopes, as concurrency.Adaptive and concurrency.Fixed do.
type concurrencyStater interface {
	State(scope string) concurrency.State
}

// fallbacks returns v's fallback count for scope if v keeps one.
func fallbacks(v any, scope string) uint64 {
	if f, ok := v.(ratelimit.FallbackCounter); ok {
		return f.Fallbacks(scope)
	}
	return 0
}

// scopeCounters are the live counters behind a ScopeStats.
type scopeCounters struct {
	cp    *compiled
	scope string // the key it is stored under

	attempts, retries, throttles, quotaRefusals, rateLimited atomic.Uint64

	// used is the table's epoch when the scope was last used. It sits next
	// to the counters each request writes anyway, so stamping it dirties no
	// other cache line.
	used atomic.Uint64

	hedges, budgetRefusals               atomic.Uint64
	breakerRefusals, concurrencyRefusals atomic.Uint64
}

// statsTable maps scopes to their counters, and keeps at most
// maxStatsScopes of them by evicting the least recently used.
//
// Recency is measured in epochs: the epoch counts the scopes ever added,
// and each use of a scope, its first included, stamps it with the current
// epoch. Scopes used since the same new scope was added share a stamp, and
// among them eviction picks in no particular order; otherwise a scope used
// more recently than another is never evicted before it. A new scope past
// maxStatsScopes evicts, in one pass under mu, the sixteenth of the scopes
// with the oldest stamps, so a stream of new scopes pays one O(n log n)
// pass per maxStatsScopes/16 of them, not one per scope.
//
// Using a scope already tracked (every request but a scope's first) takes
// no lock and allocates nothing: a look at the scope added last (a client
// of one host, the common case, stops there) or else a sync.Map load, whose
// hashing of the key costs more than the rest; then a read of the epoch,
// which changes only when a scope is added, and a write of the stamp only
// when the epoch moved since the scope's last use. So requests to a steady
// set of scopes write no memory that scopes share.
//
// Each goroutine adding a scope counts it in n before storing it, and
// first evicts until n is within maxStatsScopes. Goroutines adding scopes
// at the same moment can therefore take the table past maxStatsScopes by
// one scope each, and once they return it is within maxStatsScopes again
// (unless more than maxStatsScopes of them were adding at once). An
// attempt counted at the very moment its scope is evicted is lost with it;
// that can only happen to a scope among the sixteenth unused longest.
type statsTable struct {
	m      sync.Map                      // scope string -> *scopeCounters
	newest atomic.Pointer[scopeCounters] // the scope added last, while stored; nil for none
	n      atomic.Int64                  // scopes in m, plus those being added
	epoch  atomic.Uint64                 // scopes ever added (a lost race to add one counts too)
	mu     sync.Mutex                    // serialises eviction
}

// get returns the counters of scope, creating them on first use, and
// records the use. They keep the host's compiled policy, whose state
// Snapshot reads, also when cp is a request's own rules (see
// compiled.shared).
func (s *statsTable) get(scope string, cp *compiled) *scopeCounters {
	if c := s.newest.Load(); c != nil && c.scope == scope {
		s.touch(c)
		return c
	}
	if v, ok := s.m.Load(scope); ok {
		c := v.(*scopeCounters)
		s.touch(c)
		return c
	}
	if s.n.Add(1) > maxStatsScopes {
		s.evict()
	}
	c := &scopeCounters{cp: cp.shared(), scope: scope}
	c.used.Store(s.epoch.Add(1))
	v, loaded := s.m.LoadOrStore(scope, c)
	if loaded {
		// Another goroutine added scope first; give back the slot.
		s.n.Add(-1)
		c = v.(*scopeCounters)
		s.touch(c)
		return c
	}
	s.newest.Store(c)
	if v, ok := s.m.Load(scope); !ok || v != c {
		s.newest.CompareAndSwap(c, nil) // evicted meanwhile: not to be found
	}
	return c
}

// touch stamps c with the current epoch. Stamps only grow: a goroutine
// that read the epoch before another's newer stamp landed leaves it alone.
// Once a scope has been stamped with the current epoch, touch only reads.
func (s *statsTable) touch(c *scopeCounters) {
	e := s.epoch.Load()
	for {
		u := c.used.Load()
		if u >= e || c.used.CompareAndSwap(u, e) {
			return
		}
	}
}

// evict drops the sixteenth of the scopes with the oldest stamps until at
// most maxStatsScopes are stored or being added. Another goroutine may have
// made room already while this one waited for mu.
func (s *statsTable) evict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.n.Load() > maxStatsScopes && s.evictBatch() {
	}
}

// evictBatch drops the sixteenth (at least one) of the stored scopes with
// the oldest stamps, and reports whether it dropped any. The caller holds
// s.mu.
func (s *statsTable) evictBatch() bool {
	stamps := make([]uint64, 0, maxStatsScopes)
	s.m.Range(func(_, v any) bool {
		stamps = append(stamps, v.(*scopeCounters).used.Load())
		return true
	})
	if len(stamps) == 0 {
		return false
	}
	slices.Sort(stamps)
	k := max(1, len(stamps)/16)
	oldest := stamps[k-1]
	dropped := 0
	s.m.Range(func(key, v any) bool {
		// Read the stamp again: a scope used since the first pass is kept.
		if c := v.(*scopeCounters); c.used.Load() <= oldest && s.m.CompareAndDelete(key, v) {
			s.newest.CompareAndSwap(c, nil)
			s.n.Add(-1)
			dropped++
		}
		return dropped < k
	})
	return dropped > 0
}

// Snapshot returns the statistics of every scope the Transport tracks,
// sorted by scope. It tracks up to 10,000 scopes: a new scope beyond that
// first evicts the 625 (a sixteenth) that went unused longest, a scope's
// first request counting as a use, and an evicted scope's counts start over
// from zero if it is seen again. Recency is kept to the granularity of new
// scopes: scopes used since the same new scope was first seen count as
// equally recent, and are evicted in no particular order. Calling Snapshot
// is not a use.
//
// Snapshot is safe to call while requests are in flight; each scope's
// numbers are read without stopping them, so they may be a request apart
// from each other.
func (t *Transport) Snapshot() []ScopeStats {
	var out []ScopeStats
	t.stats.m.Range(func(k, v any) bool {
		c := v.(*scopeCounters)
		scope := k.(string)
		s := ScopeStats{
			Scope:          scope,
			Custom:         c.cp.p.Scope != nil,
			Attempts:       c.attempts.Load(),
			Retries:        c.retries.Load(),
			Hedges:         c.hedges.Load(),
			Throttles:      c.throttles.Load(),
			QuotaRefusals:  c.quotaRefusals.Load(),
			BudgetRefusals: c.budgetRefusals.Load(),
			RateLimited:    c.rateLimited.Load(),
			Quota:          c.cp.quotaLevel(scope),

			BreakerRefusals:     c.breakerRefusals.Load(),
			ConcurrencyRefusals: c.concurrencyRefusals.Load(),
		}
		if a, ok := c.cp.limiter.(adaptiveStater); ok {
			s.Adaptive = a.State(scope)
		}
		if b, ok := c.cp.breaker.(breakerStater); ok {
			s.Breaker = b.State(scope)
		}
		if l, ok := c.cp.conc.(concurrencyStater); ok {
			s.Concurrency = l.State(scope)
		}
		s.Fallbacks = fallbacks(c.cp.quota, scope) + fallbacks(c.cp.budget, scope) +
			fallbacks(c.cp.limiter, scope) + fallbacks(c.cp.fixed, scope) + fallbacks(c.cp.breaker, scope)
		out = append(out, s)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out
}
