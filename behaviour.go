package retrytransport

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxBehaviourScopes is how many scopes the behaviour table holds before
// a new scope makes it sweep (see behaviourTable).
const maxBehaviourScopes = 10_000

// scopeBehaviour is what a scope's past attempts make the transport do
// differently: its penalty period (Policy.Penalty) and its learned hedge
// delay (the latency histogram of Policy.Hedge.Quantile). Unlike the
// statistics (scopeCounters), which may be evicted and start over, it is
// kept while it changes what a request does.
type scopeBehaviour struct {
	latency atomic.Pointer[latencyHist]   // nil until first used
	penalty atomic.Pointer[penaltyPeriod] // the current period; nil before the first signal
}

// latencies returns the scope's latency histogram, creating it on first
// use.
func (b *scopeBehaviour) latencies() *latencyHist {
	if h := b.latency.Load(); h != nil {
		return h
	}
	b.latency.CompareAndSwap(nil, new(latencyHist))
	return b.latency.Load()
}

// idle reports whether b changes nothing a request does at now: no
// penalty period is running, and its histogram has too few samples to set
// a hedge delay.
func (b *scopeBehaviour) idle(now time.Time) bool {
	if p := b.penalty.Load(); p != nil && now.Before(p.end) {
		return false
	}
	h := b.latency.Load()
	return h == nil || !h.learned()
}

// behaviourTable maps scopes to their scopeBehaviour. Only policies with a
// Penalty or a hedge Quantile use it, so the happy path of any other
// policy never looks it up.
//
// It is bounded apart from the statistics, and differently: a sweep drops
// only the scopes that are idle (no penalty running, no learned hedge
// delay), whose state a new entry would rebuild as it was. A sweep runs
// when a new scope takes the table past maxBehaviourScopes, and then not
// again before another maxBehaviourScopes/16 scopes are added; a table of
// more scopes that are all busy keeps them, as a penalty ends by itself
// after its Period. Past four times maxBehaviourScopes, a sweep drops
// learned hedge delays too (relearned from latencyMinSamples attempts),
// never a running penalty.
type behaviourTable struct {
	m         sync.Map     // scope string -> *scopeBehaviour
	n         atomic.Int64 // entries in m
	nextSweep atomic.Int64 // n at which the next sweep runs; 0 means maxBehaviourScopes
	mu        sync.Mutex   // serialises sweeps
}

// get returns the behaviour of scope, creating it on first use.
func (t *behaviourTable) get(scope string, now func() time.Time) *scopeBehaviour {
	if v, ok := t.m.Load(scope); ok {
		return v.(*scopeBehaviour)
	}
	v, loaded := t.m.LoadOrStore(scope, new(scopeBehaviour))
	if !loaded {
		if n := t.n.Add(1); n > max(t.nextSweep.Load(), maxBehaviourScopes) {
			t.sweep(now())
		}
	}
	return v.(*scopeBehaviour)
}

// sweep drops idle scopes (and, past four times the bound, learned delays)
// and sets when the next sweep runs.
func (t *behaviourTable) sweep(now time.Time) {
	if !t.mu.TryLock() {
		return // another goroutine sweeps
	}
	defer t.mu.Unlock()
	crowded := t.n.Load() > 4*maxBehaviourScopes
	t.m.Range(func(k, v any) bool {
		b := v.(*scopeBehaviour)
		drop := b.idle(now)
		if !drop && crowded {
			p := b.penalty.Load()
			drop = p == nil || !now.Before(p.end)
		}
		if drop && t.m.CompareAndDelete(k, v) {
			t.n.Add(-1)
		}
		return true
	})
	t.nextSweep.Store(t.n.Load() + maxBehaviourScopes/16)
}
