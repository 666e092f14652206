package otelretry

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The per-request instruments' names. The metric table of docs/observability.md
// describes each.
const (
	attemptsMetric   = "retrytransport.request.attempts"
	retriesMetric    = "retrytransport.request.retries"
	retryDelayMetric = "retrytransport.request.retry_delay"
)

// attemptBuckets bound the attempts and retries histograms: one bucket per
// count up to the policies' usual maximums, then wider ones.
var attemptBuckets = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20}

// delayBuckets bound the retry delay histogram, in seconds: from the
// shortest backoff to the longest Retry-After a policy usually accepts.
var delayBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// metrics records the per-request instruments from the final Event of
// each request.
type metrics struct {
	meter      metric.Meter
	scopeAttrs bool // WithScopeAttribute

	attempts metric.Int64Histogram
	retries  metric.Int64Histogram
	delay    metric.Float64Histogram

	sets  attrCache
	other otherCounts // the counters of custom scopes, without WithScopeAttribute
}

func newMetrics(meter metric.Meter, scopeAttrs bool) *metrics {
	m := &metrics{meter: meter, scopeAttrs: scopeAttrs}
	var err error
	if m.attempts, err = meter.Int64Histogram(attemptsMetric,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts sent for one request, the first included; 0 for a request refused before its first attempt."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...)); err != nil {
		otel.Handle(err)
		m.attempts = noop.Int64Histogram{}
	}
	if m.retries, err = meter.Int64Histogram(retriesMetric,
		metric.WithUnit("{retry}"),
		metric.WithDescription("Retries sent for one request; a request without a retry is not recorded."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...)); err != nil {
		otel.Handle(err)
		m.retries = noop.Int64Histogram{}
	}
	if m.delay, err = meter.Float64Histogram(retryDelayMetric,
		metric.WithUnit("s"),
		metric.WithDescription("Time one request waited before its attempts: backoff, Retry-After and send tokens; recorded for requests that retried or waited."),
		metric.WithExplicitBucketBoundaries(delayBuckets...)); err != nil {
		otel.Handle(err)
		m.delay = noop.Float64Histogram{}
	}
	return m
}

// record is the Transport's final observer.
func (m *metrics) record(ev retrytransport.Event) {
	ctx := ev.Request.Context()
	if !m.attempts.Enabled(ctx) && !m.retries.Enabled(ctx) && !m.delay.Enabled(ctx) {
		return // no SDK, or views dropped them: nothing to build
	}
	opts := m.options(m.requestKey(ev))
	m.attempts.Record(ctx, int64(ev.Attempt), opts...)
	if ev.Attempt > 1 {
		m.retries.Record(ctx, int64(ev.Attempt-1), opts...)
	}
	if ev.Attempt > 1 || ev.Waited > 0 {
		m.delay.Record(ctx, ev.Waited.Seconds(), opts...)
	}
}

// requestKey is what the attributes of a request's measurements depend on.
type requestKey struct {
	host, port, method, scope string
	scheme                    string // when port is empty, the default port
	outcome                   classify.Kind
	attempted                 bool // an attempt was sent, so outcome means something
	stop                      string
}

func (m *metrics) requestKey(ev retrytransport.Event) requestKey {
	u := ev.Request.URL
	k := requestKey{
		host:      u.Hostname(),
		port:      u.Port(),
		method:    method(ev.Request.Method),
		outcome:   ev.Outcome.Kind,
		attempted: ev.Attempt > 0,
		stop:      stopReason(ev.Stop),
	}
	if k.port == "" {
		k.scheme = u.Scheme
	}
	if m.scopeAttrs {
		k.scope = ev.Scope
	}
	return k
}

func (m *metrics) requestSet(k requestKey) attribute.Set {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.ServerAddress(k.host), semconv.HTTPRequestMethodKey.String(k.method))
	if p := port(k.scheme, k.port); p > 0 {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	if k.attempted {
		attrs = append(attrs, outcomeKey.String(k.outcome.String()))
	}
	if k.stop != "" {
		attrs = append(attrs, stopReasonKey.String(k.stop))
	}
	if m.scopeAttrs {
		attrs = append(attrs, scopeKey.String(k.scope))
	}
	return attribute.NewSet(attrs...)
}

// maxCachedSets bounds the attribute sets kept for reuse. The attributes
// are bounded by the hosts a client calls; past this many combinations,
// each measurement builds its set anew.
const maxCachedSets = 4096

// attrCache keeps the measurement options of each attribute combination,
// so that a request's measurements allocate nothing once its combination
// was seen. Reads take no lock: the map is replaced, never changed.
type attrCache struct {
	mu sync.Mutex
	m  atomic.Pointer[map[requestKey][]metric.RecordOption]
}

// options returns the measurement options of a request with key k.
func (m *metrics) options(k requestKey) []metric.RecordOption {
	c := &m.sets
	cached := c.m.Load()
	if cached != nil {
		if opts, ok := (*cached)[k]; ok {
			return opts
		}
	}
	opts := []metric.RecordOption{metric.WithAttributeSet(m.requestSet(k))}
	if cached == nil || len(*cached) < maxCachedSets { // a full cache takes no lock
		c.put(k, opts)
	}
	return opts
}

// put keeps opts for k, unless the cache is full.
func (c *attrCache) put(k requestKey, opts []metric.RecordOption) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old == nil {
		old = &map[requestKey][]metric.RecordOption{}
	} else if len(*old) >= maxCachedSets {
		return
	}
	m := maps.Clone(*old)
	m[k] = opts
	c.m.Store(&m)
}
