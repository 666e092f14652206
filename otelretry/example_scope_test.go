package otelretry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A policy whose Scope function keeps one scope per tenant. Such scopes may
// be unbounded, so by default their counters are summed under "_OTHER" and
// the per-request metrics carry no scope; WithScopeAttribute reports each
// tenant under its own name, for a Scope function with a bounded set of keys.
func ExampleWithScopeAttribute() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 { // each request's first attempt is throttled
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer api.Close()

	p := policy.Standard()
	p.Scope = func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }

	run := func(opts ...otelretry.Option) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		transport := otelretry.NewTransport(nil, append(opts,
			otelretry.WithMeterProvider(mp),
			otelretry.WithRetryOptions(retrytransport.WithPolicy(p),
				// Only so that the example does not wait for the backoff.
				retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })))...)
		defer transport.CloseIdleConnections()
		client := &http.Client{Transport: transport}

		for _, tenant := range []string{"a", "a", "b"} {
			req, _ := http.NewRequest("GET", api.URL, nil)
			req.Header.Set("X-Tenant", tenant)
			resp, err := client.Do(req)
			if err != nil {
				fmt.Println(err)
				return
			}
			resp.Body.Close()
		}

		var rm metricdata.ResourceMetrics
		reader.Collect(context.Background(), &rm)
		var lines []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					if m.Name != "retrytransport.throttles" {
						continue
					}
					for _, dp := range d.DataPoints {
						scope, _ := dp.Attributes.Value("retrytransport.scope")
						lines = append(lines, fmt.Sprintf("%s %s=%d", m.Name, scope.Emit(), dp.Value))
					}
				case metricdata.Histogram[int64]:
					if m.Name != "retrytransport.request.attempts" {
						continue
					}
					for _, dp := range d.DataPoints {
						scope, ok := dp.Attributes.Value("retrytransport.scope")
						if !ok {
							lines = append(lines, fmt.Sprintf("%s (no scope) count=%d sum=%d", m.Name, dp.Count, dp.Sum))
							continue
						}
						lines = append(lines, fmt.Sprintf("%s %s count=%d sum=%d", m.Name, scope.Emit(), dp.Count, dp.Sum))
					}
				}
			}
		}
		slices.Sort(lines) // data points come in no set order
		fmt.Println(strings.Join(lines, "\n"))
	}

	fmt.Println("default:")
	run()
	fmt.Println("WithScopeAttribute:")
	run(otelretry.WithScopeAttribute())
	// Output:
	// default:
	// retrytransport.request.attempts (no scope) count=3 sum=6
	// retrytransport.throttles _OTHER=3
	// WithScopeAttribute:
	// retrytransport.request.attempts tenant-a count=2 sum=4
	// retrytransport.request.attempts tenant-b count=1 sum=2
	// retrytransport.throttles tenant-a=2
	// retrytransport.throttles tenant-b=1
}
