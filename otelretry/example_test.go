package otelretry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/otelretry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A request that succeeds at its second attempt: two CLIENT spans, the
// second marked as a resend, a retry event on the caller's span, and the
// attempts in the metrics.
func ExampleNewTransport() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())

	transport := otelretry.NewTransport(nil,
		otelretry.WithTracerProvider(tp),
		otelretry.WithMeterProvider(mp),
		// Only so that the example does not wait for the backoff.
		otelretry.WithRetryOptions(retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })))
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}

	ctx, span := tp.Tracer("example").Start(context.Background(), "list items")
	req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+"/items", nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	span.End()

	for _, s := range spans.Ended() {
		fmt.Print(s.Name(), " ", s.SpanKind())
		for _, kv := range s.Attributes() {
			if kv.Key == "http.response.status_code" || kv.Key == "http.request.resend_count" {
				fmt.Print(" ", kv.Key, "=", kv.Value.Emit())
			}
		}
		for _, e := range s.Events() {
			fmt.Print(" event:", e.Name)
		}
		fmt.Println()
	}

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "retrytransport.request.attempts" {
				fmt.Println(m.Name, "count", h.DataPoints[0].Count, "sum", h.DataPoints[0].Sum)
			}
		}
	}
	// Output:
	// HTTP GET client http.response.status_code=503
	// HTTP GET client http.request.resend_count=1 http.response.status_code=200
	// list items internal event:retrytransport.retry
	// retrytransport.request.attempts count 1 sum 2
}
