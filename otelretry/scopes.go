package otelretry

import (
	"context"
	"runtime"
	"weak"

	"github.com/retrytransport/retrytransport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The per-scope instruments' names. The metric table of the README
// describes each.
const (
	throttlesMetric     = "retrytransport.throttles"
	quotaRefusalsMetric = "retrytransport.quota.refusals"
	rateLimitedMetric   = "retrytransport.rate_limit.refusals"
	quotaLevelMetric    = "retrytransport.quota.level"
	fillRateMetric      = "retrytransport.adaptive.fill_rate"
	measuredRateMetric  = "retrytransport.adaptive.measured_rate"
)

// scopeInstruments are read from Transport.Snapshot when the meter
// collects, so requests pay nothing for them.
type scopeInstruments struct {
	throttles, quotaRefusals, rateLimited metric.Int64ObservableCounter
	quota, fill, measured                 metric.Float64ObservableGauge
}

// observeScopes reports t's per-scope statistics at each collection, for
// as long as t is referenced: the callback holds t weakly, and is
// unregistered once t is collected.
func (m *metrics) observeScopes(t *retrytransport.Transport) {
	var s scopeInstruments
	var errs [6]error
	s.throttles, errs[0] = m.meter.Int64ObservableCounter(throttlesMetric,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts the server throttled (429, 503 Slow Down, a throttling error code)."))
	s.quotaRefusals, errs[1] = m.meter.Int64ObservableCounter(quotaRefusalsMetric,
		metric.WithUnit("{retry}"),
		metric.WithDescription("Retries the retry quota refused: the circuit breaker was open."))
	s.rateLimited, errs[2] = m.meter.Int64ObservableCounter(rateLimitedMetric,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts a client-side rate limiter refused to wait for."))
	s.quota, errs[3] = m.meter.Float64ObservableGauge(quotaLevelMetric,
		metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in the scope's retry quota."))
	s.fill, errs[4] = m.meter.Float64ObservableGauge(fillRateMetric,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The adaptive limiter's send rate, once a throttle made it limit the scope."))
	s.measured, errs[5] = m.meter.Float64ObservableGauge(measuredRateMetric,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The adaptive limiter's smoothed measure of the scope's response rate."))
	for _, err := range errs {
		if err != nil {
			otel.Handle(err)
			return
		}
	}
	wt := weak.Make(t)
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if t := wt.Value(); t != nil {
			m.observe(o, &s, t.Snapshot())
		}
		return nil
	}, s.throttles, s.quotaRefusals, s.rateLimited, s.quota, s.fill, s.measured)
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
	var other retrytransport.ScopeStats
	hasOther := false
	for _, st := range stats {
		if st.Custom && !m.scopeAttrs {
			other.Throttles += st.Throttles
			other.QuotaRefusals += st.QuotaRefusals
			other.RateLimited += st.RateLimited
			hasOther = true
			continue
		}
		opt := metric.WithAttributeSet(attribute.NewSet(scopeKey.String(st.Scope)))
		observeCounters(o, s, st, opt)
		if st.Quota >= 0 {
			o.ObserveFloat64(s.quota, st.Quota, opt)
		}
		if a := st.Adaptive; a.Capacity > 0 || a.MeasuredRate > 0 {
			o.ObserveFloat64(s.measured, a.MeasuredRate, opt)
			if a.Enabled {
				o.ObserveFloat64(s.fill, a.FillRate, opt)
			}
		}
	}
	if hasOther {
		observeCounters(o, s, other, metric.WithAttributeSet(attribute.NewSet(scopeKey.String(otherScope))))
	}
}

func observeCounters(o metric.Observer, s *scopeInstruments, st retrytransport.ScopeStats, opt metric.ObserveOption) {
	o.ObserveInt64(s.throttles, int64(st.Throttles), opt)
	o.ObserveInt64(s.quotaRefusals, int64(st.QuotaRefusals), opt)
	o.ObserveInt64(s.rateLimited, int64(st.RateLimited), opt)
}
