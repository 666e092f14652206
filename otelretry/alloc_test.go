package otelretry_test

import (
	"net/http"
	"testing"

	"github.com/retrytransport/retrytransport/otelretry"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// sdkExtraAllocs is what a GET whose first attempt succeeds allocates
// through otelretry.NewTransport beyond otelhttp.NewTransport alone, with
// the SDK's providers. All of it is resendMarker's, for a span that
// records, for its per-attempt httptrace hook that sees net/http's own
// resends: the connCounter, the httptrace.ClientTrace, the method value
// c.getConn, the context.WithValue of httptrace.WithClientTrace, and
// req.WithContext. The retries and the metrics add none: the final
// observer's attribute options are cached. (Under -race both counts are
// higher, by the same number.)
const sdkExtraAllocs = 4

// allocsPerGet returns the allocations of one GET through rt, whose first
// attempt succeeds, the response's body closed (which ends otelhttp's
// span).
func allocsPerGet(t *testing.T, rt http.RoundTripper) float64 {
	t.Helper()
	get, err := http.NewRequest("GET", "http://api.example.com/items", nil)
	if err != nil {
		t.Fatal(err)
	}
	return testing.AllocsPerRun(1000, func() {
		resp, err := rt.RoundTrip(get)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

// TestHappyPathAllocations compares, on a stub base transport, what a GET
// whose first attempt succeeds allocates through otelretry.NewTransport
// and through otelhttp.NewTransport, with the same providers: with no-op
// providers the retries and the instrumentation add no allocation to
// otelhttp's; with the SDK's they add sdkExtraAllocs. Counts, unlike
// times, are deterministic; BenchmarkOverheadStub measures the time.
func TestHappyPathAllocations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		providers func(testing.TB) (trace.TracerProvider, metric.MeterProvider)
		extra     float64
	}{
		{"noop", func(testing.TB) (trace.TracerProvider, metric.MeterProvider) { return noopProviders() }, 0},
		{"sdk", sdkProviders, sdkExtraAllocs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, mp := tc.providers(t)
			plain := allocsPerGet(t, otelhttp.NewTransport(newStubRoundTripper(),
				otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp)))
			tp, mp = tc.providers(t)
			retried := allocsPerGet(t, otelretry.NewTransport(newStubRoundTripper(),
				otelretry.WithTracerProvider(tp), otelretry.WithMeterProvider(mp)))
			t.Logf("allocations per GET: otelhttp %v, otelretry %v", plain, retried)
			switch extra := retried - plain; {
			case tc.extra == 0 && extra != 0:
				t.Errorf("otelretry allocates %v times per GET, otelhttp %v; want as many", retried, plain)
			case extra > tc.extra:
				t.Errorf("otelretry allocates %v times per GET, %v more than otelhttp's %v; want %v more at most",
					retried, extra, plain, tc.extra)
			}
		})
	}
}
