package otelretry

import (
	"github.com/retrytransport/retrytransport"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The events on the caller's span.
const (
	retryEvent  = "retrytransport.retry"   // a retry follows, after a delay
	giveUpEvent = "retrytransport.give_up" // no retry follows an attempt that failed, or none was sent
)

// addSpanEvent is the Transport's observer: it tells the caller's span, if
// it records, of each retry and of the end of a request that stopped
// before a success. Events of requests that recovered add nothing: their
// attempts' spans show it.
func addSpanEvent(ev retrytransport.Event) {
	span := trace.SpanFromContext(ev.Request.Context())
	if !span.IsRecording() {
		return
	}
	switch {
	case ev.Stop == nil && !ev.Final:
		attrs := eventAttrs(ev, attemptKey.Int(ev.Attempt))
		attrs = append(attrs,
			delaySecondsKey.Float64(ev.Delay.Seconds()),
			serverDelayKey.Bool(ev.ServerDelay))
		span.AddEvent(retryEvent, trace.WithAttributes(attrs...))
	case ev.Stop != nil:
		attrs := eventAttrs(ev, attemptsKey.Int(ev.Attempt))
		attrs = append(attrs, stopReasonKey.String(stopReason(ev.Stop)))
		span.AddEvent(giveUpEvent, trace.WithAttributes(attrs...))
	}
}

// eventAttrs returns the attributes both events have: first, then the
// endpoint the last attempt failed over to (none when it went to the URL's
// own host), the copies hedged so far (none without hedging), the last
// attempt's outcome (none for a request refused before its first attempt),
// the time waited, the quota, and whether the request carried rules of its
// own (only when it did); with room for two more.
func eventAttrs(ev retrytransport.Event, first attribute.KeyValue) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 11)
	attrs = append(attrs, first)
	if failedOver(ev) {
		attrs = append(attrs, endpointKey.String(ev.Endpoint))
	}
	if ev.Hedges > 0 {
		attrs = append(attrs, hedgesKey.Int(ev.Hedges))
	}
	if ev.Attempt > 0 {
		attrs = append(attrs, outcomeKey.String(ev.Outcome.Kind.String()))
	}
	if ev.Outcome.Reason != "" {
		attrs = append(attrs, reasonKey.String(ev.Outcome.Reason))
	}
	if ev.StatusCode != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(ev.StatusCode))
	}
	attrs = append(attrs, waitedSecondsKey.Float64(ev.Waited.Seconds()))
	if ev.Quota >= 0 {
		attrs = append(attrs, quotaKey.Float64(ev.Quota))
	}
	if ev.RequestPolicy {
		attrs = append(attrs, requestPolicyKey.Bool(true))
	}
	return attrs
}

// failedOver reports whether ev's attempt went to an alternate endpoint
// (policy.Policy.Failover) rather than to the request URL's host.
func failedOver(ev retrytransport.Event) bool {
	return ev.Endpoint != "" && ev.Request.URL != nil && ev.Endpoint != ev.Request.URL.Host
}
