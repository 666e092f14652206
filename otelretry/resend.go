package otelretry

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/retrytransport/retrytransport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// transportResendEvent is the event, on an attempt's span, of each resend
// that net/http's Transport made of the attempt on its own.
const transportResendEvent = "retrytransport.transport_resend"

// transportResendsKey counts, on an attempt's span, the resends net/http's
// Transport made of the attempt on its own.
const transportResendsKey = attribute.Key("retrytransport.transport_resends")

// resendMarker sits between otelhttp and the base transport, where the
// attempt's span is in the request's context. It marks a retry's span
// with http.request.resend_count, and makes visible the resends the base
// transport makes without telling: net/http's Transport sends an idempotent
// request again on a new connection when the reused one was closed by the
// server, or an HTTP/2 stream again when it was refused. Each of those asks
// for a connection again, which httptrace's GetConn hook sees.
//
// A span that is not recording (no SDK, or not sampled) costs nothing here.
type resendMarker struct{ base http.RoundTripper }

func (m resendMarker) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return m.base.RoundTrip(req)
	}
	if !attemptSpan(ctx, span) {
		return m.base.RoundTrip(req)
	}
	if n := retrytransport.AttemptFromContext(ctx).Count; n > 1 {
		span.SetAttributes(semconv.HTTPRequestResendCount(n - 1))
	}
	c := &connCounter{span: span}
	c.trace.GetConn = c.getConn
	ctx = httptrace.WithClientTrace(ctx, &c.trace)
	return m.base.RoundTrip(req.WithContext(ctx))
}

// attemptSpan reports whether span, the span in ctx, is one otelhttp
// started for the attempt, rather than the caller's span, which is there
// when a filter of otelhttp's skipped the attempt and is not the attempt's
// to mark. otelhttp puts a Labeler beside each span it starts, so without
// one the span is the caller's. A caller inside an otelhttp handler
// already had a Labeler; attemptTransport then names the caller's span.
func attemptSpan(ctx context.Context, span trace.Span) bool {
	if _, ok := otelhttp.LabelerFromContext(ctx); !ok {
		return false
	}
	caller, ok := ctx.Value(callerSpanKey{}).(trace.SpanID)
	return !ok || caller != span.SpanContext().SpanID()
}

// connCounter counts the connections one attempt asked for. It holds the
// trace that calls it, so that both take one allocation.
type connCounter struct {
	trace httptrace.ClientTrace
	span  trace.Span
	n     atomic.Int64
}

// getConn runs before each send of the attempt: the second and later calls
// are resends.
func (c *connCounter) getConn(string) {
	if resends := int(c.n.Add(1)) - 1; resends > 0 {
		c.span.AddEvent(transportResendEvent, trace.WithAttributes(transportResendsKey.Int(resends)))
		c.span.SetAttributes(transportResendsKey.Int(resends))
	}
}
