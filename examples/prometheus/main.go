// Prometheus shows the retry metrics of otelretry exported to Prometheus
// through the OpenTelemetry Prometheus exporter. It builds a MeterProvider
// whose reader is the exporter, registered on a prometheus.Registry of its
// own; gives an http.Client the Transport of otelretry.NewTransport with
// that provider; sends a few dozen requests to a flaky API on 127.0.0.1
// that answers 503, 429 with Retry-After: 0 or 200; and serves the metrics
// at /metrics.
//
// It is a separate module, so run it from its own directory:
//
//	cd examples/prometheus && go run .
//
// and scrape http://127.0.0.1:9464/metrics (-addr changes the address), or
// print the retry metrics of one scrape, histogram buckets left out, and
// exit:
//
//	cd examples/prometheus && go run . -once
//
// It uses no network beyond the loopback interface.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// demoStatuses is what the flaky API answers, in turn, to the program's
// requests. Sent one after the other, each round of 11 answers makes five
// requests: one that succeeds at once, one after a 503, one after a 429,
// one after two 503s, and one that gets 503 three times and gives up.
var demoStatuses = []int{
	200,
	503, 200,
	429, 200,
	503, 503, 200,
	503, 503, 503,
}

// demoRequests is how many requests the program sends: 8 rounds.
const demoRequests = 40

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "`address` to serve /metrics on")
	once := flag.Bool("once", false, "print the retry metrics of one scrape, without histogram buckets, and exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *addr, *once); err != nil {
		log.Fatal(err)
	}
}

// run sends the requests, serves the metrics on addr and, with once,
// prints the retry metrics of one scrape; otherwise it serves until ctx
// is done.
func run(ctx context.Context, out io.Writer, addr string, once bool) error {
	// policy.Standard() with a shorter backoff (under 10 ms, then 20 ms),
	// so that the run takes well under a second.
	p := policy.Standard()
	p.Backoff = backoff.FullJitter{Base: 10 * time.Millisecond}
	ex, err := setup(otelretry.WithRetryOptions(retrytransport.WithPolicy(p)))
	if err != nil {
		return err
	}
	defer ex.close()

	api := httptest.NewServer(flakyAPI(demoStatuses...))
	tally, err := sendRequests(ctx, ex.client, api.URL, demoRequests)
	api.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d requests to %s: %v\n", demoRequests, api.URL, tally)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv, served := serveMetrics(ln, ex.registry)
	url := "http://" + ln.Addr().String() + "/metrics"
	fmt.Fprintln(out, "metrics at", url)
	if once {
		err = printRetryMetrics(ctx, out, url)
	} else {
		select {
		case <-ctx.Done():
		case err = <-served:
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(shutdownCtx))
}

// example is what setup builds: a MeterProvider that the Prometheus
// exporter reads, the registry the exporter is registered on, and a
// client whose Transport reports its retries to the provider.
type example struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	client   *http.Client
}

// setup builds the example's metrics pipeline and client. opts are added
// to WithMeterProvider.
func setup(opts ...otelretry.Option) (*example, error) {
	// A registry of its own, rather than prometheus.DefaultRegisterer, which
	// the exporter would use otherwise: the endpoint shows only these
	// metrics, and a test can build the pipeline more than once.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	opts = append([]otelretry.Option{otelretry.WithMeterProvider(provider)}, opts...)
	client := &http.Client{Transport: otelretry.NewTransport(nil, opts...)}
	return &example{registry: registry, provider: provider, client: client}, nil
}

// close closes the client's idle connections and shuts the provider down.
func (ex *example) close() error {
	ex.client.CloseIdleConnections()
	return ex.provider.Shutdown(context.Background())
}

// flakyAPI returns a handler that answers each request with the next of
// statuses, starting over after the last. A 429 carries Retry-After: 0.
func flakyAPI(statuses ...int) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := statuses[(n.Add(1)-1)%int64(len(statuses))]
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		fmt.Fprintln(w, http.StatusText(code))
	})
}

// sendRequests sends n GET requests to url, one after the other, and
// counts the final statuses.
func sendRequests(ctx context.Context, client *http.Client, url string, n int) (map[int]int, error) {
	tally := make(map[int]int)
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return tally, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return tally, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return tally, err
		}
		tally[resp.StatusCode]++
	}
	return tally, nil
}

// serveMetrics serves registry's metrics at /metrics on ln, until the
// returned server is shut down. The channel receives the error that ended
// serving, nil after a shutdown.
func serveMetrics(ln net.Listener, registry *prometheus.Registry) (*http.Server, <-chan error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
	}()
	return srv, served
}

// printRetryMetrics scrapes url once and prints the lines of the metrics
// named retrytransport_*, leaving out the histograms' buckets.
func printRetryMetrics(ctx context.Context, out io.Writer, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		if strings.HasPrefix(name, "retrytransport_") && !strings.HasSuffix(name, "_bucket") {
			fmt.Fprintln(out, line)
		}
	}
	return sc.Err()
}
