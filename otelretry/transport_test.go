package otelretry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// spanView is what a test compares of an attempt's span.
type spanView struct {
	Kind       trace.SpanKind
	Parent     trace.SpanID
	Status     string // http.response.status_code
	ResendSeen bool   // http.request.resend_count is set
	Resend     string
}

func viewOf(s sdktrace.ReadOnlySpan) spanView {
	v := spanView{Kind: s.SpanKind(), Parent: s.Parent().SpanID()}
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "http.response.status_code":
			v.Status = kv.Value.Emit()
		case "http.request.resend_count":
			v.ResendSeen, v.Resend = true, kv.Value.Emit()
		}
	}
	return v
}

// eventView is what a test compares of a span event.
type eventView struct {
	Name  string
	Attrs map[string]string
}

func eventsOf(s sdktrace.ReadOnlySpan) []eventView {
	var out []eventView
	for _, e := range s.Events() {
		out = append(out, eventView{e.Name, attrsOf(e.Attributes)})
	}
	return out
}

// TestRecoveredAfterTwo503s: 503, 503, 200 under the standard policy. Each
// attempt is a CLIENT span under the caller's, the retries marked with
// their resend count and each carrying its own trace context to the server;
// the caller's span has one event per retry with the decision's numbers;
// the metrics count one request of three attempts, two retries, 1.5 s of
// waits, and the quota that the recovery refunded.
func TestRecoveredAfterTwo503s(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 503}, answer{status: 200, body: "ok"})
	r := newRig(t, policy.Standard())
	caller, status, err := r.call(t, context.Background(), "GET", srv.URL+"/items?secret=1")
	if err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200", status, err)
	}
	callerSpan, attempts := r.ended(t)

	parent := caller.SpanContext().SpanID()
	want := []spanView{
		{Kind: trace.SpanKindClient, Parent: parent, Status: "503"},
		{Kind: trace.SpanKindClient, Parent: parent, Status: "503", ResendSeen: true, Resend: "1"},
		{Kind: trace.SpanKindClient, Parent: parent, Status: "200", ResendSeen: true, Resend: "2"},
	}
	var got []spanView
	for _, s := range attempts {
		got = append(got, viewOf(s))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempt spans (-want +got):\n%s", diff)
	}

	calls, traceparents, _ := srv.seen()
	if calls != 3 || len(attempts) != 3 {
		t.Fatalf("server saw %d requests, %d attempt spans; want 3 and 3", calls, len(attempts))
	}
	for i, tp := range traceparents {
		sc := attempts[i].SpanContext()
		if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; tp != want {
			t.Errorf("attempt %d carried traceparent %q; want its own span's %q", i+1, tp, want)
		}
	}

	wantEvents := []eventView{
		{"retrytransport.retry", map[string]string{
			"retrytransport.attempt": "1", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
			"http.response.status_code": "503", "retrytransport.waited_seconds": "0", "retrytransport.quota": "495",
			"retrytransport.delay_seconds": "0.5", "retrytransport.server_delay": "false"}},
		{"retrytransport.retry", map[string]string{
			"retrytransport.attempt": "2", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
			"http.response.status_code": "503", "retrytransport.waited_seconds": "0.5", "retrytransport.quota": "490",
			"retrytransport.delay_seconds": "1", "retrytransport.server_delay": "false"}},
	}
	if diff := cmp.Diff(wantEvents, eventsOf(callerSpan)); diff != "" {
		t.Errorf("caller's span events (-want +got):\n%s", diff)
	}

	host, port := hostPort(t, srv.URL)
	attrs := reqAttrs(host, port, "GET", "success", "")
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{attrs, 1, 3}}, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]histogram{{attrs, 1, 2}}, histograms[int64](t, m["retrytransport.request.retries"])); diff != "" {
		t.Errorf("retries histogram (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]histogram{{attrs, 1, 1.5}}, histograms[float64](t, m["retrytransport.request.retry_delay"])); diff != "" {
		t.Errorf("retry delay histogram (-want +got):\n%s", diff)
	}
	scope := map[string]string{"retrytransport.scope": host + ":" + port}
	for name, want := range map[string][]point{
		"retrytransport.throttles":           {{scope, 0}},
		"retrytransport.quota.refusals":      {{scope, 0}},
		"retrytransport.budget.refusals":     {{scope, 0}},
		"retrytransport.rate_limit.refusals": {{scope, 0}},
		"retrytransport.hedges":              {{scope, 0}},
		"retrytransport.quota.level":         {{scope, 495}},
	} {
		if diff := cmp.Diff(want, points(t, m[name])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	for _, name := range []string{"retrytransport.adaptive.fill_rate", "retrytransport.adaptive.measured_rate"} {
		if a, ok := m[name]; ok && len(points(t, a)) > 0 {
			t.Errorf("%s reported %v for a policy that is not adaptive", name, points(t, a))
		}
	}
	for _, s := range attempts {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "secret=1") && kv.Key != "url.full" {
				t.Errorf("attribute %s carries the query: %s", kv.Key, kv.Value.Emit())
			}
		}
	}
}

// TestFirstAttemptSucceeds: a request that needs no retry is one span, no
// event, and one attempt in the histograms; no retry or delay recorded.
func TestFirstAttemptSucceeds(t *testing.T) {
	srv := newServer(t, answer{status: 200, body: "ok"})
	r := newRig(t, policy.Standard())
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v", status, err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 1 || viewOf(attempts[0]).ResendSeen || len(caller.Events()) != 0 {
		t.Fatalf("%d attempt spans (resend count set: %v), caller events %v; want one unmarked span and no event",
			len(attempts), len(attempts) > 0 && viewOf(attempts[0]).ResendSeen, eventsOf(caller))
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	want := []histogram{{reqAttrs(host, port, "GET", "success", ""), 1, 1}}
	if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
	if a, ok := m["retrytransport.request.retries"]; ok && len(histograms[int64](t, a)) > 0 {
		t.Errorf("retries recorded for a request without a retry: %v", histograms[int64](t, a))
	}
	if a, ok := m["retrytransport.request.retry_delay"]; ok && len(histograms[float64](t, a)) > 0 {
		t.Errorf("retry delay recorded for a request that did not wait: %v", histograms[float64](t, a))
	}
}

// TestThrottled: a 429 with Retry-After, then a success. The retry waits
// the server's delay, says so, and the scope counts the throttle.
func TestThrottled(t *testing.T) {
	srv := newServer(t, answer{status: 429, header: http.Header{"Retry-After": {"2"}}}, answer{status: 200})
	r := newRig(t, policy.Standard())
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200", status, err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans; want 2", len(attempts))
	}
	want := []eventView{{"retrytransport.retry", map[string]string{
		"retrytransport.attempt": "1", "retrytransport.outcome": "throttle", "retrytransport.reason": "status 429",
		"http.response.status_code": "429", "retrytransport.waited_seconds": "0", "retrytransport.quota": "490", // a throttle's retry costs 10
		"retrytransport.delay_seconds": "2", "retrytransport.server_delay": "true"}}}
	if diff := cmp.Diff(want, eventsOf(caller)); diff != "" {
		t.Errorf("caller's span events (-want +got):\n%s", diff)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if diff := cmp.Diff([]point{{map[string]string{"retrytransport.scope": host + ":" + port}, 1}}, points(t, m["retrytransport.throttles"])); diff != "" {
		t.Errorf("throttles (-want +got):\n%s", diff)
	}
	attrs := reqAttrs(host, port, "GET", "success", "")
	if diff := cmp.Diff([]histogram{{attrs, 1, 2}}, histograms[float64](t, m["retrytransport.request.retry_delay"])); diff != "" {
		t.Errorf("retry delay (-want +got):\n%s", diff)
	}
}

// TestQuotaRefusal: an outage drains a small retry quota; the retry it
// cannot pay for is refused, the caller's span says so, the caller gets
// the last 503, and the scope counts the refusal.
func TestQuotaRefusal(t *testing.T) {
	srv := newServer(t, answer{status: 503, body: "down"})
	p := policy.Standard()
	p.Quota = &quota.Bucket{Capacity: 5} // one retry's worth
	r := newRig(t, p)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 503 {
		t.Fatalf("GET = %d, %v; want the 503", status, err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans; want 2 (the retry the quota paid for)", len(attempts))
	}
	events := eventsOf(caller)
	want := eventView{"retrytransport.give_up", map[string]string{
		"retrytransport.attempts": "2", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
		"http.response.status_code": "503", "retrytransport.waited_seconds": "0.5", "retrytransport.quota": "0",
		"retrytransport.stop_reason": "quota"}}
	if len(events) != 2 || events[0].Name != "retrytransport.retry" {
		t.Fatalf("caller's span events %v; want a retry, then the give-up", events)
	}
	if diff := cmp.Diff(want, events[1]); diff != "" {
		t.Errorf("give-up event (-want +got):\n%s", diff)
	}
	host, port := hostPort(t, srv.URL)
	scope := map[string]string{"retrytransport.scope": host + ":" + port}
	m := r.collect(t)
	if diff := cmp.Diff([]point{{scope, 1}}, points(t, m["retrytransport.quota.refusals"])); diff != "" {
		t.Errorf("quota refusals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]point{{scope, 0}}, points(t, m["retrytransport.quota.level"])); diff != "" {
		t.Errorf("quota level (-want +got):\n%s", diff)
	}
	attrs := reqAttrs(host, port, "GET", "transient", "quota")
	if diff := cmp.Diff([]histogram{{attrs, 1, 2}}, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// TestBudgetRefusal: a retry budget with nothing to grant refuses the
// retry of a request to a scope with a retry quota. The caller's span says
// the budget stopped it, and the scope counts the refusal as the budget's,
// not the quota's, which had tokens to pay.
func TestBudgetRefusal(t *testing.T) {
	srv := newServer(t, answer{status: 503, body: "down"})
	p := policy.Standard()
	p.Budget = &quota.Budget{Ratio: 0.01, MinPerSecond: -1} // no retry for one request
	r := newRig(t, p)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 503 {
		t.Fatalf("GET = %d, %v; want the 503", status, err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans; want 1 (the retry refused)", len(attempts))
	}
	events := eventsOf(caller)
	if len(events) != 1 || events[0].Name != "retrytransport.give_up" || events[0].Attrs["retrytransport.stop_reason"] != "budget" {
		t.Errorf("caller's span events %v; want one give-up for the budget", events)
	}
	host, port := hostPort(t, srv.URL)
	scope := map[string]string{"retrytransport.scope": host + ":" + port}
	m := r.collect(t)
	for name, want := range map[string][]point{
		"retrytransport.budget.refusals": {{scope, 1}},
		"retrytransport.quota.refusals":  {{scope, 0}},
		"retrytransport.quota.level":     {{scope, 500}},
	} {
		if diff := cmp.Diff(want, points(t, m[name])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestCancelledWhileWaiting: the caller cancels during the wait for the
// retry. The caller gets its context's error, its span a give-up event
// that says canceled, and the metrics one attempt stopped for that reason.
func TestCancelledWhileWaiting(t *testing.T) {
	srv := newServer(t, answer{status: 503})
	ctx, cancel := context.WithCancel(context.Background())
	r := newRig(t, policy.Standard(), otelretry.WithRetryOptions(
		sleepWith(func(context.Context) error { cancel(); return context.Canceled })))
	_, _, err := r.call(t, ctx, "GET", srv.URL)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("GET err = %v; want context.Canceled", err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans; want 1", len(attempts))
	}
	events := eventsOf(caller)
	if len(events) != 2 || events[0].Name != "retrytransport.retry" || events[1].Name != "retrytransport.give_up" ||
		events[1].Attrs["retrytransport.stop_reason"] != "canceled" || events[1].Attrs["retrytransport.attempts"] != "1" {
		t.Fatalf("caller's span events %v; want the retry, then a give-up after 1 attempt, canceled", events)
	}
	host, port := hostPort(t, srv.URL)
	attrs := reqAttrs(host, port, "GET", "transient", "canceled")
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{attrs, 1, 1}}, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// sleepWith makes the retries' waits call f instead of sleeping.
func sleepWith(f func(context.Context) error) retrytransport.Option {
	return retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { return f(ctx) })
}

// TestBreakerAndConcurrencyMetrics: a request refused by an open circuit
// stops for "breaker_open", and the scope's breaker and concurrency limit
// are reported: the circuit's phase and refusals, the limit and what is in
// flight.
func TestBreakerAndConcurrencyMetrics(t *testing.T) {
	srv := newServer(t, answer{status: 200})
	p := policy.Standard()
	p.MaxAttempts = 1
	refused := errors.New("dial tcp: connect: connection refused")
	c := &breaker.Circuit{Failures: 1}
	p.Breaker = c
	p.Concurrency = &concurrency.Fixed{Max: 4}
	r := newRig(t, p)
	host, port := hostPort(t, srv.URL)
	scope := host + ":" + port
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200", status, err)
	}
	// Open the circuit as a refused connection would.
	pass, err := c.Allow(scope)
	if err != nil {
		t.Fatal(err)
	}
	pass.Done(classify.Outcome{Kind: classify.Transient, Reason: "connection refused"}, refused)
	_, _, err = r.call(t, context.Background(), "GET", srv.URL)
	if !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("GET with the circuit open = %v; want breaker.ErrOpen", err)
	}
	caller, _ := r.ended(t) // the last caller's span, the refused request's
	events := eventsOf(caller)
	if len(events) != 1 || events[0].Attrs["retrytransport.stop_reason"] != "breaker_open" {
		t.Errorf("caller's span events %v; want one give-up for breaker_open", events)
	}
	labels := map[string]string{"retrytransport.scope": scope}
	m := r.collect(t)
	for name, want := range map[string][]point{
		"retrytransport.breaker.refusals":      {{labels, 1}},
		"retrytransport.breaker.state":         {{labels, 1}},
		"retrytransport.concurrency.refusals":  {{labels, 0}},
		"retrytransport.concurrency.limit":     {{labels, 4}},
		"retrytransport.concurrency.in_flight": {{labels, 0}},
	} {
		if diff := cmp.Diff(want, points(t, m[name])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
