package otelretry

import (
	"context"
	"net/http"
	"slices"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter of the retry
// metrics. The attempts' spans and otelhttp's HTTP client metrics carry
// otelhttp's own scope, otelhttp.ScopeName.
const ScopeName = "github.com/retrytransport/retrytransport/otelretry"

// An Option configures NewTransport.
type Option func(*config)

type config struct {
	tp         trace.TracerProvider
	mp         metric.MeterProvider
	props      propagation.TextMapPropagator
	retry      []retrytransport.Option
	http       []otelhttp.Option
	scopeAttrs bool
}

// WithTracerProvider sets the provider of the attempts' spans. The default
// is the global provider (otel.GetTracerProvider) at the time NewTransport
// is called, which forwards to the one installed later.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the provider of the retry metrics and of
// otelhttp's HTTP client metrics. The default is the global provider
// (otel.GetMeterProvider) at the time NewTransport is called, which forwards
// to the one installed later.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPropagators sets the propagators that write the trace context into
// each attempt's header. The default is the global one
// (otel.GetTextMapPropagator).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.props = p }
}

// WithRetryOptions passes opts to retrytransport.New: the policies, a
// logger, observers of your own (they are called as well as this
// package's). The default is none: policy.Standard() for every host.
func WithRetryOptions(opts ...retrytransport.Option) Option {
	return func(c *config) { c.retry = append(c.retry, opts...) }
}

// WithHTTPOptions passes opts to otelhttp.NewTransport, which makes each
// attempt's span: a span name formatter, a filter, client trace hooks. Its
// providers and propagators are this package's unless opts set them too.
// An attempt that a filter skips has no span, and nothing marks the
// caller's span in its place; the metrics and the caller's span events are
// unaffected. The default is none.
func WithHTTPOptions(opts ...otelhttp.Option) Option {
	return func(c *config) { c.http = append(c.http, opts...) }
}

// WithScopeAttribute adds the retrytransport.scope attribute to the
// per-request metrics, and reports the per-scope metrics of scopes that a
// policy's Scope function made. Without it, the per-request metrics carry
// the server's address and port but not the scope, and the per-scope
// metrics report each host scope (the default: the URL's host, as bounded
// as the hosts the client calls) under its own name, and sum the counters
// of every scope a Scope function made under the scope "_OTHER" (their
// gauges are not reported). Use it when the Scope functions make a bounded
// number of keys.
func WithScopeAttribute() Option {
	return func(c *config) { c.scopeAttrs = true }
}

// NewTransport returns a retrytransport.Transport that sends each attempt
// through otelhttp, and then base (a nil base means a pooled transport
// from go-cleanhttp, as for retrytransport.New), and reports its retries
// to OpenTelemetry as the package comment describes. Options passed with
// WithRetryOptions configure the retries as they would for
// retrytransport.New.
//
// The per-scope metrics stop being reported once the Transport is no longer
// referenced and has been garbage collected.
func NewTransport(base http.RoundTripper, opts ...Option) *retrytransport.Transport {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if base == nil {
		base = cleanhttp.DefaultPooledTransport()
	}
	hopts := []otelhttp.Option{otelhttp.WithTracerProvider(c.tp), otelhttp.WithMeterProvider(c.mp)}
	if c.props != nil {
		hopts = append(hopts, otelhttp.WithPropagators(c.props))
	}
	hopts = append(hopts, c.http...)
	attempts := &attemptTransport{
		traced: otelhttp.NewTransport(resendMarker{base}, hopts...),
		base:   base,
	}

	m := newMetrics(c.mp.Meter(ScopeName), c.scopeAttrs)
	ropts := append(slices.Clip(c.retry),
		retrytransport.WithObserver(addSpanEvent),
		retrytransport.WithFinalObserver(m.record))
	t := retrytransport.New(attempts, ropts...)
	m.observeScopes(t)
	return t
}

// attemptTransport is the base of the retrying Transport: each attempt
// goes through otelhttp, and closing idle connections reaches the base
// transport, which otelhttp's Transport does not pass on.
type attemptTransport struct {
	traced *otelhttp.Transport
	base   http.RoundTripper
}

func (a *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if _, ok := otelhttp.LabelerFromContext(ctx); ok {
		if caller := trace.SpanFromContext(ctx); caller.IsRecording() {
			// Sent from inside an otelhttp handler, whose Labeler is
			// already in the context: resendMarker cannot tell from it
			// whether otelhttp started the attempt's span, so it is told
			// which span is the caller's. Other callers pay nothing.
			ctx = context.WithValue(ctx, callerSpanKey{}, caller.SpanContext().SpanID())
			req = req.WithContext(ctx)
		}
	}
	return a.traced.RoundTrip(req)
}

// callerSpanKey is the context key of the caller's span ID, set by
// attemptTransport when the context already holds an otelhttp Labeler.
type callerSpanKey struct{}

// CloseIdleConnections closes the idle connections of the base transport,
// if it has such a method.
func (a *attemptTransport) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := a.base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}
