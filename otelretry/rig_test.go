package otelretry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// halfJitter makes every backoff draw 0.5, so retry n waits 2^(n-1) s / 2.
var halfJitter = backoff.FullJitter{Rand: func() float64 { return 0.5 }}

// answer is one scripted response of the test server.
type answer struct {
	status int
	header http.Header
	body   string
}

// server is an httptest server that answers the n-th request with
// answers[n], repeating the last, and records what each request carried.
type server struct {
	*httptest.Server
	mu          sync.Mutex
	answers     []answer
	calls       int
	traceparent []string // the traceparent header of each request
	bodies      []string
}

func newServer(t *testing.T, answers ...answer) *server {
	t.Helper()
	s := &server{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 0, 64)
		buf := make([]byte, 64)
		for {
			n, err := r.Body.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				break
			}
		}
		s.mu.Lock()
		a := s.answers[min(s.calls, len(s.answers)-1)]
		s.calls++
		s.traceparent = append(s.traceparent, r.Header.Get("Traceparent"))
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		for k, v := range a.header {
			w.Header()[k] = v
		}
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) seen() (calls int, traceparents, bodies []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]string(nil), s.traceparent...), append([]string(nil), s.bodies...)
}

// rig is an instrumented Transport with the real OpenTelemetry SDK behind
// it: spans go to an in-memory recorder, metrics to a manual reader, and
// the retries wait on a fake clock.
type rig struct {
	spans     *tracetest.SpanRecorder
	tp        *sdktrace.TracerProvider
	reader    *sdkmetric.ManualReader
	clock     *faketime.Clock
	transport *retrytransport.Transport
	client    *http.Client

	unregistered atomic.Int32 // metric callbacks unregistered
}

func newRig(t *testing.T, p policy.Policy, opts ...otelretry.Option) *rig {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return newRigOver(t, base, p, opts...)
}

// newRigOver is newRig over a base transport of the test's.
func newRigOver(t *testing.T, base http.RoundTripper, p policy.Policy, opts ...otelretry.Option) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), clock: faketime.New()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		r.tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	if fj, ok := p.Backoff.(backoff.FullJitter); p.Backoff == nil || ok && fj.Rand == nil {
		p.Backoff = halfJitter
	}
	opts = append([]otelretry.Option{
		otelretry.WithTracerProvider(r.tp),
		otelretry.WithMeterProvider(countingProvider{mp, &r.unregistered}),
		otelretry.WithPropagators(propagation.TraceContext{}),
		otelretry.WithRetryOptions(
			retrytransport.WithPolicy(p),
			retrytransport.WithClock(r.clock.Now, r.clock.Sleep)),
	}, opts...)
	r.transport = otelretry.NewTransport(base, opts...)
	r.client = &http.Client{Transport: r.transport}
	return r
}

// call sends a method request to url from inside a caller's span, which it returns
// ended, with the response (body read and closed) or the error.
func (r *rig) call(t *testing.T, ctx context.Context, method, url string) (caller trace.Span, status int, err error) {
	t.Helper()
	return callReq(t, r, ctx, method, url, nil, nil)
}

// ended returns the spans that ended, split into the caller's and the
// attempts' (every other span), in the order they ended.
func (r *rig) ended(t *testing.T) (caller sdktrace.ReadOnlySpan, attempts []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range r.spans.Ended() {
		if s.Name() == "caller" {
			caller = s
		} else {
			attempts = append(attempts, s)
		}
	}
	if caller == nil {
		t.Fatal("the caller's span did not end")
	}
	return caller, attempts
}

// collect reads every metric the rig's transport reported.
func (r *rig) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// attrMap renders an attribute set as a map of strings, for comparison.
func attrMap(set attribute.Set) map[string]string {
	m := map[string]string{}
	for _, kv := range set.ToSlice() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func attrsOf(kvs []attribute.KeyValue) map[string]string {
	return attrMap(attribute.NewSet(kvs...))
}

// histogram is what a test compares of one histogram data point.
type histogram struct {
	Attrs map[string]string
	Count uint64
	Sum   float64
}

func histograms[N int64 | float64](t *testing.T, a metricdata.Aggregation) []histogram {
	t.Helper()
	h, ok := a.(metricdata.Histogram[N])
	if !ok {
		t.Fatalf("aggregation %T; want a histogram", a)
	}
	var out []histogram
	for _, dp := range h.DataPoints {
		out = append(out, histogram{Attrs: attrMap(dp.Attributes), Count: dp.Count, Sum: float64(dp.Sum)})
	}
	return out
}

// point is what a test compares of one sum or gauge data point.
type point struct {
	Attrs map[string]string
	Value float64
}

func points(t *testing.T, a metricdata.Aggregation) []point {
	t.Helper()
	var out []point
	switch d := a.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{attrMap(dp.Attributes), float64(dp.Value)})
		}
	case metricdata.Gauge[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{attrMap(dp.Attributes), dp.Value})
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{attrMap(dp.Attributes), float64(dp.Value)})
		}
	default:
		t.Fatalf("aggregation %T; want a sum or a gauge", a)
	}
	return out
}

// hostPort returns the server's address and port attributes.
func hostPort(t *testing.T, url string) (host, port string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.Atoi(req.URL.Port()); err != nil {
		t.Fatalf("server URL %s has no port", url)
	}
	return req.URL.Hostname(), req.URL.Port()
}

// countingProvider is a MeterProvider whose callbacks' registrations count
// their Unregister calls in unregistered.
type countingProvider struct {
	metric.MeterProvider
	unregistered *atomic.Int32
}

func (p countingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return countingMeter{p.MeterProvider.Meter(name, opts...), p.unregistered}
}

type countingMeter struct {
	metric.Meter
	unregistered *atomic.Int32
}

func (m countingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	return countingRegistration{reg, m.unregistered}, err
}

type countingRegistration struct {
	metric.Registration
	unregistered *atomic.Int32
}

func (r countingRegistration) Unregister() error {
	r.unregistered.Add(1)
	return r.Registration.Unregister()
}
