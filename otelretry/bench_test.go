package otelretry_test

// The cost of the instrumentation on the happy path: one request whose
// first attempt succeeds. Every benchmark here runs five arms in the same
// process, against the same server or stub:
//
//	bare            the base transport alone
//	otelhttp/sdk    otelhttp.NewTransport over it, with the real SDK providers
//	otelretry/sdk   otelretry.NewTransport over it, with the same kind of providers
//	otelhttp/noop   otelhttp.NewTransport with no-op providers
//	otelretry/noop  otelretry.NewTransport with no-op providers
//
// The requirement is a ratio of arms of one run: otelretry/sdk over
// otelhttp/sdk (and otelretry/noop over otelhttp/noop) at most 1.10 in
// ns/op, and, with the no-op providers, as many allocs/op as otelhttp's.
// Numbers of different runs, or of different machines, are not to be
// compared. Run
//
//	make bench
//
// or, in this directory,
//
//	go test -run '^$' -bench . -benchmem -count 5
//
// and divide the arms' ns/op run by run: the i-th result of one arm by the
// i-th of the other (min, median and max of those ratios), or compare the
// arms' medians with benchstat. -count repeats each arm back to back, so
// on a noisy machine a ratio also measures the drift between the arms'
// turns; a shell loop of processes at -count 1, paired by process, runs
// the arms of a pair closer together. The SDK arms sample every span and
// then drop it, so that what they measure is the spans' making, not an
// exporter. BenchmarkHappyPath goes over loopback to an httptest server,
// which is what a caller pays; BenchmarkOverheadStub answers from memory,
// which leaves the instrumentation's own CPU time with no network to hide
// it, the worst case of the ratio. TestHappyPathAllocations
// (alloc_test.go) pins the allocation counts, deterministically.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/retrytransport/retrytransport/otelretry"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// benchArms are the arms of every benchmark, in the order they run.
var benchArms = []string{"bare", "otelhttp/sdk", "otelretry/sdk", "otelhttp/noop", "otelretry/noop"}

// dropSpans is a span processor that keeps nothing: the SDK still samples,
// builds and ends every span, and then drops it.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// sdkProviders returns a new tracer provider of the SDK that samples every
// span and drops it, and a new meter provider of the SDK with a manual
// reader (never collected); both are shut down when tb's test ends.
func sdkProviders(tb testing.TB) (trace.TracerProvider, metric.MeterProvider) {
	tb.Helper()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(dropSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tb.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	return tp, mp
}

// noopProviders returns the providers of an application without an SDK.
func noopProviders() (trace.TracerProvider, metric.MeterProvider) {
	return tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
}

// newArm returns the round tripper of the arm called name over base.
func newArm(tb testing.TB, name string, base http.RoundTripper) http.RoundTripper {
	tb.Helper()
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	switch name {
	case "bare":
		return base
	case "otelhttp/sdk", "otelretry/sdk":
		tp, mp = sdkProviders(tb)
	case "otelhttp/noop", "otelretry/noop":
		tp, mp = noopProviders()
	default:
		tb.Fatalf("unknown arm %q", name)
	}
	if name == "otelhttp/sdk" || name == "otelhttp/noop" {
		return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp))
	}
	return otelretry.NewTransport(base, otelretry.WithTracerProvider(tp), otelretry.WithMeterProvider(mp))
}

// benchRoundTrips sends newReq() through rt until the benchmark is done,
// reading and closing each response's body, which ends otelhttp's span.
func benchRoundTrips(b *testing.B, rt http.RoundTripper, newReq func() *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(newReq())
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// benchRequests are the requests of the benchmarks, by name: a GET and a
// PUT of 1 KiB from a bytes.Reader (so that it has GetBody), new for each
// round trip, as a caller makes them.
func benchRequests(url string) (names []string, reqs map[string]func() *http.Request) {
	payload := bytes.Repeat([]byte("x"), 1024)
	return []string{"GET", "PUT1KiB"}, map[string]func() *http.Request{
		"GET": func() *http.Request {
			r, _ := http.NewRequest("GET", url, nil)
			return r
		},
		"PUT1KiB": func() *http.Request {
			r, _ := http.NewRequest("PUT", url, bytes.NewReader(payload))
			return r
		},
	}
}

// BenchmarkHappyPath: the arms over loopback, each through its own
// http.Transport, to one httptest server.
func BenchmarkHappyPath(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	b.Cleanup(srv.Close)
	names, reqs := benchRequests(srv.URL)
	for _, op := range names {
		for _, arm := range benchArms {
			b.Run(op+"/"+arm, func(b *testing.B) {
				base := &http.Transport{}
				b.Cleanup(base.CloseIdleConnections)
				benchRoundTrips(b, newArm(b, arm, base), reqs[op])
			})
		}
	}
}

// stubRoundTripper answers every request with the same response, from
// memory, with no body. otelhttp replaces the Body of the response it
// returns with one that ends its span, so the stub puts the response back
// as it was before each answer, which costs no allocation; it is not safe
// for concurrent use, as the benchmarks need none.
type stubRoundTripper struct {
	resp, answer http.Response
}

func newStubRoundTripper() *stubRoundTripper {
	return &stubRoundTripper{resp: http.Response{
		Status: "200 OK", StatusCode: 200,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, ContentLength: 0,
	}}
}

func (s *stubRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body) // as if sent
		req.Body.Close()
	}
	s.answer = s.resp
	s.answer.Request = req
	return &s.answer, nil
}

// BenchmarkOverheadStub: the arms over an in-memory stub, which leaves
// only the CPU time of the layers above it. The GET is one request sent
// again and again (allowed once its response's body is closed); the PUT
// is made anew for each round trip, as its body is read.
func BenchmarkOverheadStub(b *testing.B) {
	names, reqs := benchRequests("http://api.example.com/items")
	get := reqs["GET"]()
	reqs["GET"] = func() *http.Request { return get }
	for _, op := range names {
		for _, arm := range benchArms {
			b.Run(op+"/"+arm, func(b *testing.B) {
				benchRoundTrips(b, newArm(b, arm, newStubRoundTripper()), reqs[op])
			})
		}
	}
}
