// Package otelretry makes a retrytransport.Transport visible to
// OpenTelemetry: a CLIENT span for every attempt sent over the wire, events
// on the caller's span for every retry decision, and retry metrics.
//
// One line gives an http.Client both the retries and the telemetry:
//
//	client := &http.Client{Transport: otelretry.NewTransport(nil)}
//
// The providers are the global ones unless WithTracerProvider and
// WithMeterProvider say otherwise, as with otelhttp.
//
// # Traces
//
// Each attempt goes through otelhttp, inside the retries, so each gets its
// own CLIENT span under the caller's span, named and attributed by the HTTP
// semantic conventions; a retry's span has http.request.resend_count set
// (1 for the first retry). When net/http's Transport silently resends an
// attempt on a fresh connection, because the reused one turned out to be
// closed, the attempt's span gets a "retrytransport.transport_resend" event
// and the retrytransport.transport_resends attribute. The caller's span, if
// it is recording, gets a "retrytransport.retry" event for each retry
// (attempt, outcome, reason, status, delay, whether the server set it,
// quota left) and a "retrytransport.give_up" event when the transport stops
// retrying before a success. Both say, in retrytransport.endpoint, the
// alternate endpoint (policy.Policy.Failover) the last attempt failed over
// to, when it was not the request URL's host, and, in
// retrytransport.hedges, the copies of slow attempts the request has sent
// so far (policy.Policy.Hedge), when it sent any, and, in
// retrytransport.request_policy (true), that the request carried rules of
// its own (retrytransport.WithRequestPolicy, WithoutRetries, WithReplay),
// when it did. Each copy has a CLIENT span of its own, with its attempt's
// http.request.resend_count.
//
// Do not wrap the result in otelhttp.NewTransport as well: that adds a
// second CLIENT span for the same request and counts it twice in the HTTP
// client metrics. A span for the whole call belongs to the caller, around
// client.Do.
//
// # Metrics
//
// Per request, recorded when it ends: retrytransport.request.attempts,
// retrytransport.request.retries and retrytransport.request.retry_delay
// (histograms), with server.address, server.port, http.request.method,
// retrytransport.outcome and retrytransport.stop_reason. Per scope, read
// from Transport.Snapshot at each collection: the throttles, quota
// refusals (counted in the scope a retry would have gone to), budget
// refusals (in the scope of the request's URL, where the retry budget is
// kept), rate-limit refusals, hedges (copies sent beside slow attempts)
// and store fallbacks (of a quota or limiter kept in Redis, module
// redisretry) counters, and gauges of the retry quota level and the
// adaptive limiter's fill rate and measured rate, with
// retrytransport.scope. A scope made by a policy's Scope function may be
// unbounded, so it is reported only after WithScopeAttribute. docs/observability.md
// in the repository has the table.
//
// The metrics come from a final observer (retrytransport.WithFinalObserver),
// so a policy with MaxAttempts 1 has its responses classified: a 503 under
// it ends with a give-up event, and observers of your own given with
// WithRetryOptions hear of it too.
//
// With no-op providers (no SDK installed) the instrumentation allocates
// nothing on a request whose first attempt succeeds, beyond what otelhttp
// itself does.
package otelretry
