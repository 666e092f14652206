package otelretry

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The per-scope instruments' names. The metric table of docs/observability.md
// describes each.
const (
	throttlesMetric      = "retrytransport.throttles"
	quotaRefusalsMetric  = "retrytransport.quota.refusals"
	budgetRefusalsMetric = "retrytransport.budget.refusals"
	rateLimitedMetric    = "retrytransport.rate_limit.refusals"
	quotaLevelMetric     = "retrytransport.quota.level"
	fillRateMetric       = "retrytransport.adaptive.fill_rate"
	measuredRateMetric   = "retrytransport.adaptive.measured_rate"
	fallbacksMetric      = "retrytransport.store.fallbacks"
	hedgesMetric         = "retrytransport.hedges"
	breakerRefusals      = "retrytransport.breaker.refusals"
	breakerStateMetric   = "retrytransport.breaker.state"
	concRefusalsMetric   = "retrytransport.concurrency.refusals"
	concLimitMetric      = "retrytransport.concurrency.limit"
	concInFlightMetric   = "retrytransport.concurrency.in_flight"
)

// scopeCounters are the per-scope counters: each instrument's name, unit
// and description, and the field of ScopeStats it reports. A counter added
// here is registered, observed and summed under otherScope with the others.
var scopeCounters = [...]struct {
	name, unit, description string
	value                   func(retrytransport.ScopeStats) uint64
}{
	{throttlesMetric, "{attempt}", "Attempts the server throttled (429, 503 Slow Down, a throttling error code).",
		func(st retrytransport.ScopeStats) uint64 { return st.Throttles }},
	{quotaRefusalsMetric, "{retry}", "Retries to the scope that the retry quota (the circuit breaker) refused.",
		func(st retrytransport.ScopeStats) uint64 { return st.QuotaRefusals }},
	{budgetRefusalsMetric, "{retry}", "Retries of the requests to the scope (their URL's) that the retry budget refused, wherever the retries would have gone.",
		func(st retrytransport.ScopeStats) uint64 { return st.BudgetRefusals }},
	{rateLimitedMetric, "{attempt}", "Attempts a client-side rate limiter refused to wait for.",
		func(st retrytransport.ScopeStats) uint64 { return st.RateLimited }},
	{fallbacksMetric, "{decision}", "Decisions of the scope's retry quota and rate limiters made from the process's own state because the store they share with other processes (Redis) did not answer in time.",
		func(st retrytransport.ScopeStats) uint64 { return st.Fallbacks }},
	{hedgesMetric, "{attempt}", "Copies of slow attempts sent beside them (hedged requests).",
		func(st retrytransport.ScopeStats) uint64 { return st.Hedges }},
	{breakerRefusals, "{attempt}", "Attempts, first ones included, that the scope's circuit breaker refused while open.",
		func(st retrytransport.ScopeStats) uint64 { return st.BreakerRefusals }},
	{concRefusalsMetric, "{attempt}", "Attempts that the scope's concurrency limit had no place for.",
		func(st retrytransport.ScopeStats) uint64 { return st.ConcurrencyRefusals }},
}

// counts are one scope's counters, in the order of scopeCounters.
type counts [len(scopeCounters)]uint64

// countsOf returns st's counters.
func countsOf(st retrytransport.ScopeStats) counts {
	var c counts
	for i, sc := range scopeCounters {
		c[i] = sc.value(st)
	}
	return c
}

// scopeInstruments are read from Transport.Snapshot when the meter
// collects, so requests pay nothing for them.
type scopeInstruments struct {
	counters              [len(scopeCounters)]metric.Int64ObservableCounter
	quota, fill, measured metric.Float64ObservableGauge
	open, limit, inFlight metric.Int64ObservableGauge
}

// observeScopes reports t's per-scope statistics at each collection, for
// as long as t is referenced: the callback holds t weakly, and is
// unregistered once t is collected.
func (m *metrics) observeScopes(t *retrytransport.Transport) {
	var s scopeInstruments
	var errs [len(scopeCounters) + 6]error
	for i, sc := range scopeCounters {
		s.counters[i], errs[i] = m.meter.Int64ObservableCounter(sc.name,
			metric.WithUnit(sc.unit), metric.WithDescription(sc.description))
	}
	gaugeErrs := errs[len(scopeCounters):]
	s.quota, gaugeErrs[0] = m.meter.Float64ObservableGauge(quotaLevelMetric,
		metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in the scope's retry quota."))
	s.fill, gaugeErrs[1] = m.meter.Float64ObservableGauge(fillRateMetric,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The adaptive limiter's send rate, once a throttle made it limit the scope."))
	s.measured, gaugeErrs[2] = m.meter.Float64ObservableGauge(measuredRateMetric,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The adaptive limiter's smoothed measure of the scope's response rate."))
	s.open, gaugeErrs[3] = m.meter.Int64ObservableGauge(breakerStateMetric,
		metric.WithUnit("{state}"),
		metric.WithDescription("The scope's circuit breaker: 0 closed, 1 open, 2 half-open (probing)."))
	s.limit, gaugeErrs[4] = m.meter.Int64ObservableGauge(concLimitMetric,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("How many attempts of the scope its concurrency limit lets be in flight at once."))
	s.inFlight, gaugeErrs[5] = m.meter.Int64ObservableGauge(concInFlightMetric,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts of the scope in flight under its concurrency limit."))
	for _, err := range errs {
		if err != nil {
			otel.Handle(err)
			return
		}
	}
	instruments := []metric.Observable{s.quota, s.fill, s.measured, s.open, s.limit, s.inFlight}
	for _, c := range s.counters {
		instruments = append(instruments, c)
	}
	wt := weak.Make(t)
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if t := wt.Value(); t != nil {
			m.observe(o, &s, t.Snapshot())
		}
		return nil
	}, instruments...)
	if err != nil {
		otel.Handle(err)
		return
	}
	runtime.AddCleanup(t, func(r metric.Registration) { r.Unregister() }, reg)
}

// observe reports each scope of stats. A scope from a policy's Scope
// function is reported under its own name only with WithScopeAttribute;
// otherwise its counters add up under otherScope and its gauges are left
// out, since a gauge of many scopes in one has no meaning.
func (m *metrics) observe(o metric.Observer, s *scopeInstruments, stats []retrytransport.ScopeStats) {
	var custom []retrytransport.ScopeStats
	for _, st := range stats {
		if st.Custom && !m.scopeAttrs {
			custom = append(custom, st)
			continue
		}
		opt := metric.WithAttributeSet(attribute.NewSet(scopeKey.String(st.Scope)))
		observeCounters(o, s, countsOf(st), opt)
		if st.Quota >= 0 {
			o.ObserveFloat64(s.quota, st.Quota, opt)
		}
		if a := st.Adaptive; a.Capacity > 0 || a.MeasuredRate > 0 {
			o.ObserveFloat64(s.measured, a.MeasuredRate, opt)
			if a.Enabled {
				o.ObserveFloat64(s.fill, a.FillRate, opt)
			}
		}
		if st.Breaker != (breaker.State{}) || st.BreakerRefusals > 0 {
			o.ObserveInt64(s.open, int64(st.Breaker.Phase), opt)
		}
		if c := st.Concurrency; c.Limit > 0 {
			o.ObserveInt64(s.limit, int64(c.Limit), opt)
			o.ObserveInt64(s.inFlight, int64(c.InFlight), opt)
		}
	}
	if other, ok := m.other.add(custom); ok {
		observeCounters(o, s, other, metric.WithAttributeSet(attribute.NewSet(scopeKey.String(otherScope))))
	}
}

// otherCounts keeps the counters reported under otherScope cumulative. A
// sum over the scopes that Snapshot tracks would drop when one of them is
// evicted (Snapshot keeps 10,000 scopes), which a backend would take for a
// reset; so the totals grow by each scope's increase since the last
// collection instead, and a scope that is gone is forgotten.
type otherCounts struct {
	mu    sync.Mutex
	last  map[string]counts // the custom scopes of the last collection
	total counts
	seen  bool // a custom scope was ever seen: the series exists
}

// add takes the custom scopes of a new snapshot into the totals, and
// returns them, with false while no custom scope was ever seen.
func (oc *otherCounts) add(custom []retrytransport.ScopeStats) (counts, bool) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	next := make(map[string]counts, len(custom))
	for _, st := range custom {
		prev := oc.last[st.Scope] // zero for a scope new, or evicted and seen again
		cur := countsOf(st)
		for i := range cur {
			oc.total[i] += increase(prev[i], cur[i])
		}
		next[st.Scope] = cur
	}
	oc.last = next
	oc.seen = oc.seen || len(custom) > 0
	return oc.total, oc.seen
}

// increase is how much a counter grew from prev to cur; a counter that
// went down started over (its scope was evicted and seen again) and grew
// by cur.
func increase(prev, cur uint64) uint64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// observeCounters reports one scope's counters c with the attributes of opt.
func observeCounters(o metric.Observer, s *scopeInstruments, c counts, opt metric.ObserveOption) {
	for i, n := range c {
		o.ObserveInt64(s.counters[i], int64(n), opt)
	}
}
