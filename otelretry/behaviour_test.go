package otelretry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// boundWait bounds a wait for something that must happen promptly (a
// request body closed by net/http's write loop after the response came).
// It is a limit on a bug, not a delay: a passing test never comes near it.
const boundWait = 10 * time.Second

// callReq is r.call for a request that edit may change (header, body,
// method) before it is sent.
func callReq(t *testing.T, r *rig, ctx context.Context, method, url string, body io.Reader, edit func(*http.Request)) (caller trace.Span, status int, err error) {
	t.Helper()
	ctx, caller = r.tp.Tracer("caller").Start(ctx, "caller")
	defer caller.End()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	status, err = send(r.client, req)
	return caller, status, err
}

// send sends req through c and returns its status, the body read and
// closed, or the error. It is safe to call from any goroutine.
func send(c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// reqAttrs returns the attributes of a per-request measurement; an empty
// outcome or stop means the attribute is absent.
func reqAttrs(host, port, method, outcome, stop string) map[string]string {
	m := map[string]string{"server.address": host, "http.request.method": method}
	if port != "" {
		m["server.port"] = port
	}
	if outcome != "" {
		m["retrytransport.outcome"] = outcome
	}
	if stop != "" {
		m["retrytransport.stop_reason"] = stop
	}
	return m
}

// sortedHistograms is histograms, in a stable order.
func sortedHistograms[N int64 | float64](t *testing.T, a metricdata.Aggregation) []histogram {
	t.Helper()
	h := histograms[N](t, a)
	sortHistograms(h)
	return h
}

func sortHistograms(h []histogram) {
	slices.SortFunc(h, func(a, b histogram) int { return strings.Compare(fmt.Sprint(a.Attrs), fmt.Sprint(b.Attrs)) })
}

func sortPoints(p []point) {
	slices.SortFunc(p, func(a, b point) int { return strings.Compare(fmt.Sprint(a.Attrs), fmt.Sprint(b.Attrs)) })
}

// sortedPoints is points, in a stable order; none for a metric that is
// not there at all.
func sortedPoints(t *testing.T, m map[string]metricdata.Aggregation, name string) []point {
	t.Helper()
	a, ok := m[name]
	if !ok {
		return nil
	}
	p := points(t, a)
	sortPoints(p)
	return p
}

// scopeOnly is the attributes of a per-scope measurement.
func scopeOnly(scope string) map[string]string {
	return map[string]string{"retrytransport.scope": scope}
}

// attemptSpans returns the recorded spans other than the callers'.
func attemptSpans(r *rig) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() != "caller" {
			out = append(out, s)
		}
	}
	return out
}

// fakeBase is a base transport that answers without a network: status
// decides each answer from the request and the number of the call (from
// 1). It counts the calls of CloseIdleConnections.
type fakeBase struct {
	status    func(req *http.Request, n int) int
	calls     atomic.Int64
	closeIdle atomic.Int64
}

func (b *fakeBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	n := int(b.calls.Add(1))
	return &http.Response{
		StatusCode: b.status(req, n), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: req,
	}, nil
}

func (b *fakeBase) CloseIdleConnections() { b.closeIdle.Add(1) }

// closeRecorder is a request body without GetBody that records its Close.
type closeRecorder struct {
	io.Reader
	once   sync.Once
	closed chan struct{}
}

func newCloseRecorder(s string) *closeRecorder {
	return &closeRecorder{Reader: strings.NewReader(s), closed: make(chan struct{})}
}

func (b *closeRecorder) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// TestBodiesSurviveRetry: a PUT answered 503, then 200, sends its whole
// body at both attempts, whether the body can be rewound with GetBody or
// has to be recorded as it is sent; and the caller's body is closed.
func TestBodiesSurviveRetry(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB: many reads
	tests := []struct {
		name string
		edit func(*http.Request) *closeRecorder
	}{
		{"GetBody", func(req *http.Request) *closeRecorder {
			if req.GetBody == nil {
				t.Fatal("a bytes.Reader body has no GetBody: the case is not tested")
			}
			return nil
		}},
		{"NopCloserWithoutGetBody", func(req *http.Request) *closeRecorder {
			req.Body, req.GetBody = io.NopCloser(strings.NewReader(payload)), nil
			req.ContentLength = int64(len(payload))
			return nil
		}},
		{"OwnBodyWithoutGetBody", func(req *http.Request) *closeRecorder {
			b := newCloseRecorder(payload)
			req.Body, req.GetBody = b, nil
			req.ContentLength = int64(len(payload))
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, answer{status: 503}, answer{status: 200, body: "ok"})
			r := newRig(t, policy.Standard())
			var body *closeRecorder
			_, status, err := callReq(t, r, context.Background(), "PUT", srv.URL, bytes.NewReader([]byte(payload)),
				func(req *http.Request) { body = tt.edit(req) })
			if err != nil || status != 200 {
				t.Fatalf("PUT = %d, %v; want 200", status, err)
			}
			calls, _, bodies := srv.seen()
			if calls != 2 {
				t.Fatalf("server saw %d requests; want 2", calls)
			}
			for i, b := range bodies {
				if b != payload {
					t.Errorf("attempt %d sent %d bytes (prefix %.20q); want the whole %d-byte body", i+1, len(b), b, len(payload))
				}
			}
			if n := len(attemptSpans(r)); n != 2 {
				t.Errorf("%d attempt spans; want 2", n)
			}
			if body != nil {
				select {
				case <-body.closed:
				case <-time.After(boundWait):
					t.Fatal("the caller's request body was never closed")
				}
			}
		})
	}
}

// TestPostNotRetried: a POST without an idempotency key answered 503 may
// have been processed: it is sent once, and the caller's span says why
// there was no retry. With an Idempotency-Key, the same POST is retried.
func TestPostNotRetried(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	r := newRig(t, policy.Standard())
	_, status, err := r.call(t, context.Background(), "POST", srv.URL)
	if err != nil || status != 503 {
		t.Fatalf("POST = %d, %v; want the 503", status, err)
	}
	caller, attempts := r.ended(t)
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans; want 1", len(attempts))
	}
	want := []eventView{{"retrytransport.give_up", map[string]string{
		"retrytransport.attempts": "1", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
		"http.response.status_code": "503", "retrytransport.waited_seconds": "0", "retrytransport.quota": "500",
		"retrytransport.stop_reason": "not_retryable"}}}
	if diff := cmp.Diff(want, eventsOf(caller)); diff != "" {
		t.Errorf("caller's span events (-want +got):\n%s", diff)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{reqAttrs(host, port, "POST", "transient", "not_retryable"), 1, 1}},
		histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}

	// The contrast: the same POST with a key is retried (server: 200 now,
	// so answer 503 again first).
	srv2 := newServer(t, answer{status: 503}, answer{status: 200})
	r2 := newRig(t, policy.Standard())
	_, status, err = callReq(t, r2, context.Background(), "POST", srv2.URL, nil,
		func(req *http.Request) { req.Header.Set("Idempotency-Key", "k1") })
	if err != nil || status != 200 {
		t.Fatalf("POST with Idempotency-Key = %d, %v; want 200 after a retry", status, err)
	}
	if n := len(attemptSpans(r2)); n != 2 {
		t.Errorf("POST with Idempotency-Key: %d attempt spans; want 2", n)
	}
}

// TestCustomScopes: a policy's Scope function makes one scope per tenant,
// which may be unbounded. Without WithScopeAttribute the per-scope
// counters add the tenants up under "_OTHER", with no gauge, and the
// per-request histograms have no scope; with it, each tenant has its own
// series, and the histograms say the scope.
func TestCustomScopes(t *testing.T) {
	p := policy.Standard()
	p.Scope = func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }
	run := func(t *testing.T, opts ...otelretry.Option) (r *rig, host, port string) {
		srv := newServer(t, answer{status: 429}, answer{status: 200}, answer{status: 429}, answer{status: 200},
			answer{status: 429}, answer{status: 200})
		r = newRig(t, p, opts...)
		for _, tenant := range []string{"a", "a", "b"} {
			_, status, err := callReq(t, r, context.Background(), "GET", srv.URL, nil,
				func(req *http.Request) { req.Header.Set("X-Tenant", tenant) })
			if err != nil || status != 200 {
				t.Fatalf("GET for tenant %s = %d, %v; want 200 after a throttle", tenant, status, err)
			}
		}
		host, port = hostPort(t, srv.URL)
		return r, host, port
	}

	t.Run("Bounded", func(t *testing.T) {
		r, host, port := run(t)
		m := r.collect(t)
		for name, want := range map[string][]point{
			"retrytransport.throttles":           {{scopeOnly("_OTHER"), 3}},
			"retrytransport.quota.refusals":      {{scopeOnly("_OTHER"), 0}},
			"retrytransport.budget.refusals":     {{scopeOnly("_OTHER"), 0}},
			"retrytransport.rate_limit.refusals": {{scopeOnly("_OTHER"), 0}},
			"retrytransport.hedges":              {{scopeOnly("_OTHER"), 0}},
			"retrytransport.quota.level":         nil,
		} {
			if diff := cmp.Diff(want, sortedPoints(t, m, name)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		want := []histogram{{reqAttrs(host, port, "GET", "success", ""), 3, 6}}
		if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
			t.Errorf("attempts histogram (-want +got):\n%s", diff)
		}
	})
	t.Run("WithScopeAttribute", func(t *testing.T) {
		r, host, port := run(t, otelretry.WithScopeAttribute())
		m := r.collect(t)
		a, b := scopeOnly("tenant-a"), scopeOnly("tenant-b")
		for name, want := range map[string][]point{
			"retrytransport.throttles":           {{a, 2}, {b, 1}},
			"retrytransport.quota.refusals":      {{a, 0}, {b, 0}},
			"retrytransport.budget.refusals":     {{a, 0}, {b, 0}},
			"retrytransport.rate_limit.refusals": {{a, 0}, {b, 0}},
			"retrytransport.hedges":              {{a, 0}, {b, 0}},
			"retrytransport.quota.level":         {{a, 500}, {b, 500}}, // each throttle's 10 refunded by the success
		} {
			sortPoints(want)
			if diff := cmp.Diff(want, sortedPoints(t, m, name)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		withScope := func(scope string) map[string]string {
			attrs := reqAttrs(host, port, "GET", "success", "")
			attrs["retrytransport.scope"] = scope
			return attrs
		}
		want := []histogram{{withScope("tenant-a"), 2, 4}, {withScope("tenant-b"), 1, 2}}
		sortHistograms(want)
		if diff := cmp.Diff(want, sortedHistograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
			t.Errorf("attempts histogram (-want +got):\n%s", diff)
		}
	})
}

// TestOwnObservers: observers passed with WithRetryOptions are called as
// well as the instrumentation's, which still adds events and metrics.
func TestOwnObservers(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200}, answer{status: 200})
	var mu sync.Mutex
	var observed, finals []retrytransport.Event
	r := newRig(t, policy.Standard(), otelretry.WithRetryOptions(
		retrytransport.WithObserver(func(ev retrytransport.Event) {
			mu.Lock()
			observed = append(observed, ev)
			mu.Unlock()
		}),
		retrytransport.WithFinalObserver(func(ev retrytransport.Event) {
			mu.Lock()
			finals = append(finals, ev)
			mu.Unlock()
		})))
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	caller, _ := r.ended(t)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("second GET = %d, %v; want 200", status, err)
	}

	type seen struct {
		Attempt int
		Final   bool
	}
	var gotObserved, gotFinals []seen
	mu.Lock()
	for _, ev := range observed {
		gotObserved = append(gotObserved, seen{ev.Attempt, ev.Final})
	}
	for _, ev := range finals {
		gotFinals = append(gotFinals, seen{ev.Attempt, ev.Final})
	}
	mu.Unlock()
	if diff := cmp.Diff([]seen{{1, false}, {2, true}}, gotObserved); diff != "" {
		t.Errorf("the caller's WithObserver observer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]seen{{2, true}, {1, true}}, gotFinals); diff != "" {
		t.Errorf("the caller's WithFinalObserver observer (-want +got):\n%s", diff)
	}
	if ev := eventsOf(caller); len(ev) != 1 || ev[0].Name != "retrytransport.retry" {
		t.Errorf("caller's span events %v; want the one retry", ev)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{reqAttrs(host, port, "GET", "success", ""), 2, 3}},
		histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// TestNoCallerSpan: a request whose context has no span works, its
// attempts' spans are roots, and its metrics are recorded.
func TestNoCallerSpan(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	r := newRig(t, policy.Standard())
	req, err := http.NewRequestWithContext(context.Background(), "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := send(r.client, req); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	spans := r.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans; want the 2 attempts'", len(spans))
	}
	for i, s := range spans {
		if s.Parent().IsValid() {
			t.Errorf("attempt %d's span has parent %v; want a root", i+1, s.Parent().SpanID())
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("attempt %d's span is %v; want a CLIENT span", i+1, s.SpanKind())
		}
	}
	if v := viewOf(spans[1]); v.Resend != "1" {
		t.Errorf("the retry's span has http.request.resend_count %q; want 1", v.Resend)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{reqAttrs(host, port, "GET", "success", ""), 1, 2}},
		histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// TestUnsampledCaller: under a caller's span that is not sampled, no span
// is recorded and no event added, the trace context still goes to the
// server unsampled, and the metrics are recorded all the same.
func TestUnsampledCaller(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	r := newRig(t, policy.Standard())
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { never.Shutdown(context.Background()) })
	ctx, caller := never.Tracer("caller").Start(context.Background(), "caller")
	if caller.IsRecording() || caller.SpanContext().IsSampled() {
		t.Fatal("the caller's span is sampled: the case is not tested")
	}
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	status, err := send(r.client, req)
	caller.End()
	if err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	if spans := r.spans.Ended(); len(spans) != 0 {
		t.Errorf("%d spans recorded under an unsampled caller; want none", len(spans))
	}
	calls, traceparents, _ := srv.seen()
	if calls != 2 {
		t.Fatalf("server saw %d requests; want 2", calls)
	}
	for i, tp := range traceparents {
		prefix := "00-" + caller.SpanContext().TraceID().String() + "-"
		if !strings.HasPrefix(tp, prefix) || !strings.HasSuffix(tp, "-00") {
			t.Errorf("attempt %d carried traceparent %q; want the caller's trace, unsampled", i+1, tp)
		}
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{reqAttrs(host, port, "GET", "success", ""), 1, 2}},
		histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// TestScopeCallbackStopsAfterGC: the per-scope metrics are reported while
// the Transport is referenced, and no longer once it was collected.
func TestScopeCallbackStopsAfterGC(t *testing.T) {
	srv := newServer(t, answer{status: 429}, answer{status: 200})
	r := newRig(t, policy.Standard())
	throttledOnce(t, r, srv.URL)
	host, port := hostPort(t, srv.URL)
	scope := scopeOnly(host + ":" + port)
	m := r.collect(t)
	if diff := cmp.Diff([]point{{scope, 1}}, sortedPoints(t, m, "retrytransport.throttles")); diff != "" {
		t.Fatalf("throttles while the Transport is referenced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]point{{scope, 500}}, sortedPoints(t, m, "retrytransport.quota.level")); diff != "" {
		t.Fatalf("quota level while the Transport is referenced (-want +got):\n%s", diff)
	}

	// The rig keeps the reader and the recorder; the Transport and the
	// client go. newRig's cleanup holds the rig, not them.
	r.transport, r.client = nil, nil
	reported := func() bool {
		m := r.collect(t)
		return len(sortedPoints(t, m, "retrytransport.throttles")) > 0 ||
			len(sortedPoints(t, m, "retrytransport.quota.level")) > 0
	}
	for i := 0; i < 10 && (reported() || r.unregistered.Load() == 0); i++ {
		runtime.GC()
	}
	if n := r.unregistered.Load(); n != 1 {
		t.Errorf("%d callbacks unregistered after the Transport was collected; want its one", n)
	}
	m = r.collect(t)
	for _, name := range []string{"retrytransport.throttles", "retrytransport.quota.refusals",
		"retrytransport.budget.refusals", "retrytransport.rate_limit.refusals", "retrytransport.hedges", "retrytransport.quota.level"} {
		if p := sortedPoints(t, m, name); len(p) > 0 {
			t.Errorf("%s still reported after the Transport was collected: %v", name, p)
		}
	}
	// The per-request histograms were recorded, and stay.
	if h := histograms[int64](t, m["retrytransport.request.attempts"]); len(h) != 1 || h[0].Count != 1 {
		t.Errorf("attempts histogram %v; want the one request", h)
	}
}

// throttledOnce sends one GET that is throttled and then succeeds, in a
// function of its own so that no frame of the test's keeps the response.
func throttledOnce(t *testing.T, r *rig, url string) {
	t.Helper()
	if _, status, err := r.call(t, context.Background(), "GET", url); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a throttle", status, err)
	}
}

// TestCloseIdleConnectionsReachesBase: http.Client.CloseIdleConnections
// goes through the retrying transport and otelhttp to the base transport.
func TestCloseIdleConnectionsReachesBase(t *testing.T) {
	base := &fakeBase{status: func(*http.Request, int) int { return 200 }}
	r := newRigOver(t, base, policy.Standard())
	req, err := http.NewRequest("GET", "http://example.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := send(r.client, req); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want the fake base's 200", status, err)
	}
	r.client.CloseIdleConnections()
	if n := base.closeIdle.Load(); n != 1 {
		t.Errorf("base's CloseIdleConnections called %d times; want 1", n)
	}
	// A base without the method, and the default base, do not panic.
	otelretry.NewTransport(roundTripperFunc(base.RoundTrip)).CloseIdleConnections()
	otelretry.NewTransport(nil).CloseIdleConnections()
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestStopReasons: each reason a request stops being retried before a
// success, on the caller's span and in the per-request metrics.
func TestStopReasons(t *testing.T) {
	refuse := errors.New("no fresh token")
	tests := []struct {
		name    string
		policy  func() policy.Policy
		answers []answer
		opts    []otelretry.Option
		setup   func(t *testing.T, r *rig) context.Context // nil: context.Background()
		edit    func(*http.Request)

		wantStatus   int // 0: an error
		wantCalls    int
		wantAttempts string
		wantOutcome  string
		wantStop     string
	}{
		{
			name:       "Exhausted",
			policy:     func() policy.Policy { p := policy.Standard(); p.MaxAttempts = 2; return p },
			answers:    []answer{{status: 503}},
			wantStatus: 503, wantCalls: 2, wantAttempts: "2", wantOutcome: "transient", wantStop: "exhausted",
		},
		{
			// A final observer makes a MaxAttempts 1 policy classify its
			// responses: the 503 ends with a give-up event.
			name:       "ExhaustedAtOne",
			policy:     func() policy.Policy { p := policy.Standard(); p.MaxAttempts = 1; return p },
			answers:    []answer{{status: 503}},
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "exhausted",
		},
		{
			name:       "ServerDelay",
			policy:     policy.Standard,
			answers:    []answer{{status: 429, header: http.Header{"Retry-After": {"30"}}}, {status: 200}},
			wantStatus: 429, wantCalls: 1, wantAttempts: "1", wantOutcome: "throttle", wantStop: "server_delay",
		},
		{
			name:    "Refused",
			policy:  policy.Standard,
			answers: []answer{{status: 503}, {status: 200}},
			opts: []otelretry.Option{otelretry.WithRetryOptions(retrytransport.WithBeforeRetry(
				func(*http.Request, retrytransport.Event) error { return refuse }))},
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "refused",
		},
		{
			name: "Budget",
			policy: func() policy.Policy {
				p := policy.Standard()
				p.Budget = &quota.Budget{Ratio: -1, MinPerSecond: -1} // grants no retry
				return p
			},
			answers:    []answer{{status: 503}, {status: 200}},
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "budget",
		},
		{
			name: "TimeLimit",
			policy: func() policy.Policy {
				p := policy.Standard()
				p.Backoff = backoff.Constant{Interval: 60 * time.Second}
				p.MaxDelay = 60 * time.Second
				p.MaxTotalTime = 100 * time.Second // room for one 60 s wait, not two
				return p
			},
			answers:    []answer{{status: 503}},
			wantStatus: 503, wantCalls: 2, wantAttempts: "2", wantOutcome: "transient", wantStop: "time_limit",
		},
		{
			name:    "Deadline",
			policy:  policy.Standard,
			answers: []answer{{status: 503}, {status: 200}},
			setup: func(t *testing.T, r *rig) context.Context {
				// The fake clock goes an hour past the real one, so that a
				// deadline 100 ms after it is real and far: the 0.5 s wait
				// passes it, and no real time does.
				r.clock.Advance(time.Since(r.clock.Now()) + time.Hour)
				ctx, cancel := context.WithDeadline(context.Background(), r.clock.Now().Add(100*time.Millisecond))
				t.Cleanup(cancel)
				return ctx
			},
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "deadline",
		},
		{
			name:       "SDKRetries",
			policy:     policy.Standard,
			answers:    []answer{{status: 503}, {status: 200}},
			edit:       func(req *http.Request) { req.Header.Set("amz-sdk-request", "attempt=1; max=3") },
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "sdk_retries",
		},
		{
			name:       "FatalAfterRetry",
			policy:     policy.Standard,
			answers:    []answer{{status: 503}, {status: 404}},
			wantStatus: 404, wantCalls: 2, wantAttempts: "2", wantOutcome: "fatal", wantStop: "not_retryable",
		},
		{
			name:    "ContextDeadline",
			policy:  policy.Standard,
			answers: []answer{{status: 503}, {status: 200}},
			opts: []otelretry.Option{otelretry.WithRetryOptions(
				sleepWith(func(context.Context) error { return context.DeadlineExceeded }))},
			wantStatus: 503, wantCalls: 1, wantAttempts: "1", wantOutcome: "transient", wantStop: "context_deadline",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.answers...)
			r := newRig(t, tt.policy(), tt.opts...)
			ctx := context.Background()
			if tt.setup != nil {
				ctx = tt.setup(t, r)
			}
			_, status, err := callReq(t, r, ctx, "GET", srv.URL, nil, tt.edit)
			if status != tt.wantStatus || (tt.wantStatus != 0) != (err == nil) {
				t.Fatalf("GET = %d, %v; want %d", status, err, tt.wantStatus)
			}
			if calls, _, _ := srv.seen(); calls != tt.wantCalls {
				t.Errorf("server saw %d requests; want %d", calls, tt.wantCalls)
			}
			caller, attempts := r.ended(t)
			if len(attempts) != tt.wantCalls {
				t.Errorf("%d attempt spans; want %d", len(attempts), tt.wantCalls)
			}
			events := eventsOf(caller)
			if len(events) == 0 || events[len(events)-1].Name != "retrytransport.give_up" {
				t.Fatalf("caller's span events %v; want a give-up last", events)
			}
			got := events[len(events)-1].Attrs
			if got["retrytransport.stop_reason"] != tt.wantStop || got["retrytransport.attempts"] != tt.wantAttempts ||
				got["retrytransport.outcome"] != tt.wantOutcome {
				t.Errorf("give-up event %v; want stop_reason %s after %s attempts, outcome %s", got, tt.wantStop, tt.wantAttempts, tt.wantOutcome)
			}
			host, port := hostPort(t, srv.URL)
			m := r.collect(t)
			want := []histogram{{reqAttrs(host, port, "GET", tt.wantOutcome, tt.wantStop), 1, float64(tt.wantCalls)}}
			if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
				t.Errorf("attempts histogram (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStopReasonRateLimited: a fixed rate that fails fast lets the first
// request go and refuses the second before its first attempt. The second
// is recorded with 0 attempts and no outcome, its caller's span says why,
// and its caller gets a *RetryError of 0 attempts.
func TestStopReasonRateLimited(t *testing.T) {
	srv := newServer(t, answer{status: 200})
	frozen := faketime.New()
	p := policy.Standard()
	p.RateLimit = &ratelimit.Fixed{Rate: 0.001, FailFast: true, Now: frozen.Now}
	r := newRig(t, p)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("first GET = %d, %v; want 200", status, err)
	}
	caller, _, err := r.call(t, context.Background(), "GET", srv.URL)
	var re *retrytransport.RetryError
	if !errors.Is(err, ratelimit.ErrRateLimited) || !errors.As(err, &re) || re.Attempts != 0 {
		t.Fatalf("second GET err = %v; want a *RetryError of 0 attempts wrapping ratelimit.ErrRateLimited", err)
	}
	if calls, _, _ := srv.seen(); calls != 1 {
		t.Fatalf("server saw %d requests; want 1", calls)
	}
	var events []eventView
	for _, s := range r.spans.Ended() {
		if s.SpanContext().SpanID() == caller.SpanContext().SpanID() {
			events = eventsOf(s)
		}
	}
	want := []eventView{{"retrytransport.give_up", map[string]string{
		"retrytransport.attempts": "0", "retrytransport.waited_seconds": "0", "retrytransport.quota": "500",
		"retrytransport.stop_reason": "rate_limited"}}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("second caller's span events (-want +got):\n%s", diff)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	wantH := []histogram{
		{reqAttrs(host, port, "GET", "", "rate_limited"), 1, 0},
		{reqAttrs(host, port, "GET", "success", ""), 1, 1},
	}
	sortHistograms(wantH)
	if diff := cmp.Diff(wantH, sortedHistograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]point{{scopeOnly(host + ":" + port), 1}}, sortedPoints(t, m, "retrytransport.rate_limit.refusals")); diff != "" {
		t.Errorf("rate-limit refusals (-want +got):\n%s", diff)
	}
}

// TestConcurrentRequests: 32 goroutines share one instrumented Transport
// against a server that fails every third request; every request is
// recorded once, and the attempts recorded are the requests the server
// saw.
func TestConcurrentRequests(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1)%3 == 0 {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	r := newRig(t, policy.Standard())
	const workers, each = 32, 20
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ctx, span := r.tp.Tracer("caller").Start(context.Background(), "caller")
				req, err := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
				if err != nil {
					t.Error(err)
					span.End()
					return
				}
				if _, err := send(r.client, req); err != nil {
					failed.Add(1)
				}
				span.End()
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d requests failed with an error", n)
	}
	m := r.collect(t)
	var count uint64
	var sum float64
	for _, h := range histograms[int64](t, m["retrytransport.request.attempts"]) {
		count += h.Count
		sum += h.Sum
	}
	if count != workers*each || sum != float64(served.Load()) {
		t.Errorf("attempts histogram: %d requests, %v attempts; want %d requests and the server's %d", count, sum, workers*each, served.Load())
	}
	var retries float64
	if a, ok := m["retrytransport.request.retries"]; ok {
		for _, h := range histograms[int64](t, a) {
			retries += h.Sum
		}
	}
	if want := float64(served.Load() - workers*each); retries != want {
		t.Errorf("retries histogram sums %v; want %v", retries, want)
	}
	if n, want := len(attemptSpans(r)), int(served.Load()); n != want {
		t.Errorf("%d attempt spans; want one per request the server saw, %d", n, want)
	}
}

// TestNilURL: a request without a URL fails without a panic, a span or a
// measurement.
func TestNilURL(t *testing.T) {
	r := newRig(t, policy.Standard())
	resp, err := r.transport.RoundTrip(&http.Request{Method: "GET", Header: http.Header{}})
	if err == nil || resp != nil {
		t.Fatalf("RoundTrip without a URL = %v, %v; want an error", resp, err)
	}
	if spans := r.spans.Ended(); len(spans) != 0 {
		t.Errorf("%d spans for a request without a URL", len(spans))
	}
	m := r.collect(t)
	if a, ok := m["retrytransport.request.attempts"]; ok && len(histograms[int64](t, a)) > 0 {
		t.Errorf("attempts recorded for a request without a URL: %v", histograms[int64](t, a))
	}
}

// TestMethodAttribute: http.request.method is a method of the HTTP
// conventions, exactly (they are case-sensitive), or "_OTHER", so that it
// stays bounded; an empty method is a GET.
func TestMethodAttribute(t *testing.T) {
	srv := newServer(t, answer{status: 200})
	host, port := hostPort(t, srv.URL)
	for _, tt := range []struct{ method, want string }{
		{"", "GET"}, {"DELETE", "DELETE"}, {"get", "_OTHER"}, {"PURGE", "_OTHER"}, {"QUERY", "_OTHER"},
	} {
		t.Run(tt.method, func(t *testing.T) {
			r := newRig(t, policy.Standard())
			_, status, err := callReq(t, r, context.Background(), "GET", srv.URL, nil,
				func(req *http.Request) { req.Method = tt.method })
			if err != nil || status != 200 {
				t.Fatalf("%q = %d, %v; want 200", tt.method, status, err)
			}
			m := r.collect(t)
			want := []histogram{{reqAttrs(host, port, tt.want, "success", ""), 1, 1}}
			if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
				t.Errorf("attempts histogram (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoSecretsInTelemetry: a URL's password never reaches an attribute,
// and its query only otelhttp's url.full.
func TestNoSecretsInTelemetry(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	r := newRig(t, policy.Standard())
	u := strings.Replace(srv.URL, "http://", "http://alice:hunter2@", 1) + "/path?token=s3cr3t"
	if _, status, err := r.call(t, context.Background(), "GET", u); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	check := func(where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			v := kv.Value.Emit()
			if strings.Contains(v, "hunter2") || strings.Contains(v, "alice") {
				t.Errorf("%s: attribute %s carries the user information: %s", where, kv.Key, v)
			}
			if strings.Contains(v, "s3cr3t") && kv.Key != "url.full" {
				t.Errorf("%s: attribute %s carries the query: %s", where, kv.Key, v)
			}
		}
	}
	spans := r.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans; want the caller's and 2 attempts'", len(spans))
	}
	for _, s := range spans {
		check("span "+s.Name(), s.Attributes())
		for _, e := range s.Events() {
			check("event "+e.Name, e.Attributes)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			for _, set := range attributeSets(t, mt.Data) {
				check("metric "+mt.Name, set.ToSlice())
			}
		}
	}
}

// attributeSets returns the attributes of each data point of a, of one of
// the aggregations the SDK makes of this module's and otelhttp's
// instruments; another fails the test, so that no metric goes unchecked.
func attributeSets(t *testing.T, a metricdata.Aggregation) []attribute.Set {
	t.Helper()
	var out []attribute.Set
	switch d := a.(type) {
	case metricdata.Histogram[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Gauge[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	default:
		t.Fatalf("aggregation %T is not checked", a)
	}
	return out
}

// TestIPv6Host: a bracketed IPv6 host is server.address without brackets,
// with the URL's port or the scheme's, and its scope is the URL's host.
func TestIPv6Host(t *testing.T) {
	base := &fakeBase{status: func(_ *http.Request, n int) int {
		if n%2 == 1 {
			return 503
		}
		return 200
	}}
	r := newRigOver(t, base, policy.Standard())
	for _, u := range []string{"http://[::1]:8443/x", "http://[::1]/x"} {
		if _, status, err := r.call(t, context.Background(), "GET", u); err != nil || status != 200 {
			t.Fatalf("GET %s = %d, %v; want 200 after a retry", u, status, err)
		}
	}
	m := r.collect(t)
	want := []histogram{
		{reqAttrs("::1", "80", "GET", "success", ""), 1, 2},
		{reqAttrs("::1", "8443", "GET", "success", ""), 1, 2},
	}
	sortHistograms(want)
	if diff := cmp.Diff(want, sortedHistograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
	// Each retry's 5 tokens are refunded by the success.
	wantQuota := []point{{scopeOnly("[::1]"), 500}, {scopeOnly("[::1]:8443"), 500}}
	sortPoints(wantQuota)
	if diff := cmp.Diff(wantQuota, sortedPoints(t, m, "retrytransport.quota.level")); diff != "" {
		t.Errorf("quota level (-want +got):\n%s", diff)
	}
}

// TestPortOutOfRange: a URL whose port is digits but no port (url.Parse
// takes "99999") gives no server.port, as otelhttp gives none on the span.
func TestPortOutOfRange(t *testing.T) {
	base := &fakeBase{status: func(*http.Request, int) int { return 200 }}
	r := newRigOver(t, base, policy.Standard())
	for _, u := range []string{"http://127.0.0.1:99999/", "http://127.0.0.1:65536/"} {
		if _, status, err := r.call(t, context.Background(), "GET", u); err != nil || status != 200 {
			t.Fatalf("GET %s = %d, %v; want the fake base's 200", u, status, err)
		}
	}
	_, attempts := r.ended(t)
	for _, s := range attempts {
		if p, ok := attrsOf(s.Attributes())["server.port"]; ok {
			t.Errorf("otelhttp's span has server.port %s", p)
		}
	}
	m := r.collect(t)
	want := []histogram{{reqAttrs("127.0.0.1", "", "GET", "success", ""), 2, 2}}
	if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram: a port above 65535 is no port (-want +got):\n%s", diff)
	}
}

// TestFilteredAttemptsLeaveCallerSpanAlone: an otelhttp filter that turns
// the attempts' spans off (WithHTTPOptions) leaves the caller's span as
// it is: no attempt's attribute lands on it.
func TestFilteredAttemptsLeaveCallerSpanAlone(t *testing.T) {
	for _, tt := range []struct {
		name string
		ctx  context.Context
	}{
		{"client", context.Background()},
		// A request sent from inside an otelhttp handler: its context
		// holds the handler's Labeler before any attempt's span exists.
		{"inside_handler", otelhttp.ContextWithLabeler(context.Background(), &otelhttp.Labeler{})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, answer{status: 503}, answer{status: 200})
			r := newRig(t, policy.Standard(), otelretry.WithHTTPOptions(otelhttp.WithFilter(func(*http.Request) bool { return false })))
			if _, status, err := r.call(t, tt.ctx, "GET", srv.URL); err != nil || status != 200 {
				t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
			}
			caller, attempts := r.ended(t)
			if len(attempts) != 0 {
				t.Errorf("%d attempt spans; the filter turns them off", len(attempts))
			}
			for _, kv := range caller.Attributes() {
				if strings.HasPrefix(string(kv.Key), "http.") || strings.HasPrefix(string(kv.Key), "retrytransport.") {
					t.Errorf("the caller's span got attribute %s = %s, meant for an attempt's CLIENT span", kv.Key, kv.Value.Emit())
				}
			}
			if ev := eventsOf(caller); len(ev) != 1 || ev[0].Name != "retrytransport.retry" {
				t.Errorf("caller's span events %v; want the retry only", ev)
			}
		})
	}
}

// TestStopReasonRefusedByRetryingHook: a WithBeforeRetry hook that
// refreshes a token through a retrying client of its own, and fails with
// that client's *RetryError, refuses the retry: the stop reason is
// "refused", not the reason the token request stopped for.
func TestStopReasonRefusedByRetryingHook(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	tokenErr := &retrytransport.RetryError{Attempts: 3, Reason: retrytransport.ErrExhausted, Err: errors.New("token server down")}
	r := newRig(t, policy.Standard(), otelretry.WithRetryOptions(retrytransport.WithBeforeRetry(
		func(*http.Request, retrytransport.Event) error {
			return fmt.Errorf("refreshing the token: %w", tokenErr)
		})))
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 503 {
		t.Fatalf("GET = %d, %v; want the 503", status, err)
	}
	caller, _ := r.ended(t)
	events := eventsOf(caller)
	if len(events) != 2 || events[1].Name != "retrytransport.give_up" {
		t.Fatalf("caller's span events %v; want a retry, then the give-up", events)
	}
	if got := events[1].Attrs["retrytransport.stop_reason"]; got != "refused" {
		t.Errorf("stop_reason %q; want refused: the request made 1 of its 3 attempts, its hook refused the retry", got)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	want := []histogram{{reqAttrs(host, port, "GET", "transient", "refused"), 1, 1}}
	if diff := cmp.Diff(want, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram (-want +got):\n%s", diff)
	}
}

// TestOtherScopeCounterIsMonotonic: the "_OTHER" counters are
// cumulative counters, so they never go down: not even when the Transport
// stops tracking a tenant scope (past 10,000 scopes it evicts the oldest).
func TestOtherScopeCounterIsMonotonic(t *testing.T) {
	var throttled atomic.Bool
	base := &fakeBase{status: func(req *http.Request, _ int) int {
		if req.Header.Get("X-Tenant") == "0" && throttled.CompareAndSwap(false, true) {
			return 429
		}
		return 200
	}}
	p := policy.Standard()
	p.Scope = func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }
	r := newRigOver(t, base, p, otelretry.WithTracerProvider(tracenoop.NewTracerProvider()))
	get := func(tenant int) {
		req, err := http.NewRequest("GET", "http://api.example/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Tenant", fmt.Sprint(tenant))
		if status, err := send(r.client, req); err != nil || status != 200 {
			t.Fatalf("GET for tenant %d = %d, %v", tenant, status, err)
		}
	}
	throttles := func() float64 {
		p := sortedPoints(t, r.collect(t), "retrytransport.throttles")
		if len(p) != 1 || p[0].Attrs["retrytransport.scope"] != "_OTHER" {
			t.Fatalf("throttles %v; want the one _OTHER series", p)
		}
		return p[0].Value
	}
	get(0)
	if n := throttles(); n != 1 {
		t.Fatalf("_OTHER throttles = %v after one throttle; want 1", n)
	}
	for tenant := 1; tenant <= 10_000; tenant++ { // the 10,001st scope evicts the oldest
		get(tenant)
	}
	if n := throttles(); n < 1 {
		t.Errorf("_OTHER throttles went down from 1 to %v: a counter that decreases reads as a reset", n)
	}
}

// TestTwoTransportsOneProvider: two instrumented Transports that share a
// meter provider, as two clients of one program do with the global one,
// both report the same host scope; the counters of the two add up.
func TestTwoTransportsOneProvider(t *testing.T) {
	srv := newServer(t, answer{status: 429}, answer{status: 200}, answer{status: 429}, answer{status: 200})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	clock := faketime.New()
	var clients []*http.Client
	for range 2 {
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		p := policy.Standard()
		p.Backoff = halfJitter
		tr := otelretry.NewTransport(base, otelretry.WithMeterProvider(mp),
			otelretry.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelretry.WithRetryOptions(retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep)))
		clients = append(clients, &http.Client{Transport: tr})
	}
	for i, c := range clients {
		req, err := http.NewRequest("GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := send(c, req); err != nil || status != 200 {
			t.Fatalf("client %d: GET = %d, %v; want 200 after a throttle", i, status, err)
		}
	}
	r := &rig{reader: reader}
	host, port := hostPort(t, srv.URL)
	if diff := cmp.Diff([]point{{scopeOnly(host + ":" + port), 2}}, sortedPoints(t, r.collect(t), "retrytransport.throttles")); diff != "" {
		t.Errorf("throttles of the two transports (-want +got):\n%s", diff)
	}
	runtime.KeepAlive(clients)
}

// TestCallerClientTraceStillCalled: the instrumentation's own client
// trace hook, which counts net/http's resends, does not replace one the
// caller put in the request's context.
func TestCallerClientTraceStillCalled(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	r := newRig(t, policy.Standard())
	var getConn, gotConn atomic.Int64
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GetConn: func(string) { getConn.Add(1) },
		GotConn: func(httptrace.GotConnInfo) { gotConn.Add(1) },
	})
	if _, status, err := r.call(t, ctx, "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	if getConn.Load() != 2 || gotConn.Load() != 2 {
		t.Errorf("the caller's hooks saw GetConn %d, GotConn %d times; want 2 each, one per attempt", getConn.Load(), gotConn.Load())
	}
	_, attempts := r.ended(t)
	for i, s := range attempts {
		if ev := eventsOf(s); len(ev) != 0 {
			t.Errorf("attempt %d, sent once, has events %v", i+1, ev)
		}
	}
}

// TestAdaptiveGauges: under the adaptive policy a throttle turns the
// scope's limiter on, and its fill and measured rates are reported.
func TestAdaptiveGauges(t *testing.T) {
	srv := newServer(t, answer{status: 429}, answer{status: 200})
	r := newRig(t, policy.Adaptive())
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a throttle", status, err)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	for _, name := range []string{"retrytransport.adaptive.fill_rate", "retrytransport.adaptive.measured_rate"} {
		p := sortedPoints(t, m, name)
		if len(p) != 1 || p[0].Attrs["retrytransport.scope"] != host+":"+port || !(p[0].Value > 0) {
			t.Errorf("%s = %v; want one positive rate for the scope %s:%s", name, p, host, port)
		}
	}
	if diff := cmp.Diff([]point{{scopeOnly(host + ":" + port), 1}}, sortedPoints(t, m, "retrytransport.throttles")); diff != "" {
		t.Errorf("throttles (-want +got):\n%s", diff)
	}
}

// TestNoQuota: a policy without a retry quota has no quota attribute on
// its events and no quota level gauge; its counters are still reported.
func TestNoQuota(t *testing.T) {
	srv := newServer(t, answer{status: 503}, answer{status: 200})
	p := policy.Standard()
	p.Quota = quota.None
	r := newRig(t, p)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 after a retry", status, err)
	}
	caller, _ := r.ended(t)
	events := eventsOf(caller)
	if len(events) != 1 {
		t.Fatalf("caller's span events %v; want the one retry", events)
	}
	if q, ok := events[0].Attrs["retrytransport.quota"]; ok {
		t.Errorf("retry event has retrytransport.quota = %s under a policy without a quota", q)
	}
	host, port := hostPort(t, srv.URL)
	m := r.collect(t)
	if p := sortedPoints(t, m, "retrytransport.quota.level"); len(p) != 0 {
		t.Errorf("quota level %v reported for a policy without a quota", p)
	}
	if diff := cmp.Diff([]point{{scopeOnly(host + ":" + port), 0}}, sortedPoints(t, m, "retrytransport.throttles")); diff != "" {
		t.Errorf("throttles (-want +got):\n%s", diff)
	}
}
