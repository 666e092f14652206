package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noSleep is a timer that returns at once: the backoff is recorded, not
// waited.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// rig is the example's pipeline with a flaky API and the /metrics
// endpoint running, each on 127.0.0.1.
type rig struct {
	ex         *example
	api        *httptest.Server
	metricsURL string
}

// newRig starts a rig whose API answers statuses in turn, and whose client
// retries with policy p and never sleeps. Cleanup stops everything.
func newRig(t *testing.T, p policy.Policy, now func() time.Time, statuses ...int) *rig {
	t.Helper()
	ex, err := setup(otelretry.WithRetryOptions(
		retrytransport.WithPolicy(p),
		retrytransport.WithClock(now, noSleep)))
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	api := httptest.NewServer(flakyAPI(statuses...))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, served := serveMetrics(ln, ex.registry)
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections() // the scrapes' connections
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("metrics server Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serving metrics: %v", err)
		}
		if err := ex.close(); err != nil {
			t.Errorf("close: %v", err)
		}
		api.Close()
	})
	return &rig{ex: ex, api: api, metricsURL: "http://" + ln.Addr().String() + "/metrics"}
}

// send sends n requests and checks their final statuses.
func (r *rig) send(t *testing.T, n int, want map[int]int) {
	t.Helper()
	got, err := sendRequests(t.Context(), r.ex.client, r.api.URL, n)
	if err != nil {
		t.Fatalf("sendRequests: %v", err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("final statuses = %v, want %v", got, want)
	}
}

// scrape gets the metrics endpoint once and returns its samples.
func (r *rig) scrape(t *testing.T) samples {
	t.Helper()
	resp, err := http.Get(r.metricsURL)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	s, err := parseSamples(body)
	if err != nil {
		t.Fatalf("scrape: %v\n%s", err, body)
	}
	return s
}

// port is the API's port, as server_port shows it.
func (r *rig) port(t *testing.T) string {
	u, err := url.Parse(r.api.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestScrape sends three requests through the instrumented client and
// checks every retry series of one scrape: a request that succeeds after
// two 503s (3 attempts, 2 retries of 100 ms each), one that succeeds after
// a 429 with Retry-After: 0 (2 attempts, 1 retry, no wait), and one that
// gets 503 three times and gives up (3 attempts, 2 retries of 100 ms).
func TestScrape(t *testing.T) {
	p := policy.Standard()
	p.Backoff = backoff.Constant{Interval: 100 * time.Millisecond}
	r := newRig(t, p, nil,
		503, 503, 200,
		429, 200,
		503, 503, 503)
	r.send(t, 3, map[int]int{200: 2, 503: 1})

	port := r.port(t)
	otel := map[string]string{
		"otel_scope_name":       otelretry.ScopeName,
		"otel_scope_schema_url": "",
		"otel_scope_version":    "",
	}
	request := func(outcome, stop string) map[string]string {
		l := maps.Clone(otel)
		l["server_address"] = "127.0.0.1"
		l["server_port"] = port
		l["http_request_method"] = "GET"
		l["retrytransport_outcome"] = outcome
		if stop != "" {
			l["retrytransport_stop_reason"] = stop
		}
		return l
	}
	scope := maps.Clone(otel)
	scope["retrytransport_scope"] = "127.0.0.1:" + port // host and port, as in the URL
	ok, exhausted := request("success", ""), request("transient", "exhausted")
	// The retry quota starts at 500 tokens. A retry after a 503 costs 5 and
	// one after a 429 costs 10; a success gives back the cost of its last
	// retry only. The first request keeps one retry spent, the third both.
	const quota = 500 - 5 - 2*5

	want := samples{
		key("retrytransport_request_attempts_count", ok):                   2,
		key("retrytransport_request_attempts_sum", ok):                     3 + 2,
		key("retrytransport_request_attempts_count", exhausted):            1,
		key("retrytransport_request_attempts_sum", exhausted):              3,
		key("retrytransport_request_retries_count", ok):                    2,
		key("retrytransport_request_retries_sum", ok):                      2 + 1,
		key("retrytransport_request_retries_count", exhausted):             1,
		key("retrytransport_request_retries_sum", exhausted):               2,
		key("retrytransport_request_retry_delay_seconds_count", ok):        2,
		key("retrytransport_request_retry_delay_seconds_sum", ok):          0.2 + 0,
		key("retrytransport_request_retry_delay_seconds_count", exhausted): 1,
		key("retrytransport_request_retry_delay_seconds_sum", exhausted):   0.2,
		key("retrytransport_throttles_total", scope):                       1,
		key("retrytransport_quota_refusals_total", scope):                  0,
		key("retrytransport_budget_refusals_total", scope):                 0,
		key("retrytransport_rate_limit_refusals_total", scope):             0,
		key("retrytransport_store_fallbacks_total", scope):                 0,
		key("retrytransport_hedges_total", scope):                          0,
		key("retrytransport_breaker_refusals_total", scope):                0,
		key("retrytransport_concurrency_refusals_total", scope):            0,
		key("retrytransport_quota_level", scope):                           quota,
	}
	got := r.scrape(t)
	retry := make(samples)
	for k, v := range got {
		if strings.HasPrefix(k, "retrytransport_") && !strings.Contains(k, "_bucket{") {
			retry[k] = v
		}
	}
	checkSamples(t, retry, want)

	// A few buckets of the same scrape: the successes took 3 and 2
	// attempts, and waited 200 ms and nothing.
	bucket := func(name string, labels map[string]string, le string) string {
		l := maps.Clone(labels)
		l["le"] = le
		return key(name, l)
	}
	buckets := samples{
		bucket("retrytransport_request_attempts_bucket", ok, "1"):                0,
		bucket("retrytransport_request_attempts_bucket", ok, "2"):                1,
		bucket("retrytransport_request_attempts_bucket", ok, "3"):                2,
		bucket("retrytransport_request_attempts_bucket", ok, "+Inf"):             2,
		bucket("retrytransport_request_retry_delay_seconds_bucket", ok, "0.005"): 1,
		bucket("retrytransport_request_retry_delay_seconds_bucket", ok, "0.1"):   1,
		bucket("retrytransport_request_retry_delay_seconds_bucket", ok, "0.25"):  2,
	}
	for k, v := range buckets {
		if g, found := got[k]; !found || g != v {
			t.Errorf("%s = %v (found %t), want %v", k, g, found, v)
		}
	}
}

// TestAdaptiveGauges checks the names of the adaptive limiter's gauges,
// which policy.Adaptive() reports once a throttle has made it limit the
// scope.
func TestAdaptiveGauges(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ticks time.Duration
	now := func() time.Time { ticks += 10 * time.Millisecond; return start.Add(ticks) }
	p := policy.Adaptive()
	p.Limiter.(*ratelimit.Adaptive).Now = now // a limiter keeps its own clock
	r := newRig(t, p, now, 200, 429, 200)
	r.send(t, 2, map[int]int{200: 2})

	scope := "127.0.0.1:" + r.port(t)
	got := r.scrape(t)
	for _, name := range []string{
		"retrytransport_adaptive_fill_rate_per_second",
		"retrytransport_adaptive_measured_rate_per_second",
	} {
		var found []string
		for k, v := range got {
			if strings.HasPrefix(k, name+"{") && strings.Contains(k, `retrytransport_scope="`+scope+`"`) {
				found = append(found, fmt.Sprintf("%s %v", k, v))
				if v <= 0 || math.IsNaN(v) {
					t.Errorf("%s = %v, want a rate above 0", k, v)
				}
			}
		}
		if len(found) != 1 {
			t.Errorf("series of %s for scope %s: %q, want one", name, scope, found)
		}
	}
}

// TestRunOnce runs the program with -once and checks a few lines it
// prints. The counts do not depend on the random backoff.
func TestRunOnce(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, "127.0.0.1:0", true); err != nil {
		t.Fatalf("run: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
	got, err := parseSamples(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// 8 rounds of 5 requests: 4 succeed (after 1, 2, 2 and 3 attempts)
	// and 1 gives up after 3, with one 429 per round.
	want := map[string]float64{
		"retrytransport_request_attempts_count":     32 + 8,
		"retrytransport_request_attempts_sum":       8*(1+2+2+3) + 8*3,
		"retrytransport_request_retries_count":      24 + 8,
		"retrytransport_request_retries_sum":        8*(1+1+2) + 8*2,
		"retrytransport_throttles_total":            8,
		"retrytransport_quota_refusals_total":       0,
		"retrytransport_budget_refusals_total":      0,
		"retrytransport_rate_limit_refusals_total":  0,
		"retrytransport_store_fallbacks_total":      0,
		"retrytransport_hedges_total":               0,
		"retrytransport_breaker_refusals_total":     0,
		"retrytransport_concurrency_refusals_total": 0,
	}
	sums := make(map[string]float64)
	for k, v := range got {
		name, _, _ := strings.Cut(k, "{")
		if strings.HasSuffix(name, "_bucket") {
			t.Errorf("printed a bucket: %s", k)
		}
		sums[name] += v
	}
	for name, v := range want {
		if sums[name] != v {
			t.Errorf("%s, over all series = %v, want %v\n%s", name, sums[name], v, &out)
		}
	}
}

// samples maps the series of a scrape, written as key writes them, to
// their values.
type samples map[string]float64

// key writes a series as name{label="value",...}, the labels sorted.
func key(name string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// parseSamples reads the samples of the Prometheus text format, and skips
// its comments and any line that is not a sample (the program's own).
func parseSamples(text []byte) (samples, error) {
	s := make(samples)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := cutLast(line)
		if !ok {
			continue
		}
		name, rest, hasLabels := strings.Cut(series, "{")
		labels := make(map[string]string)
		if hasLabels {
			var err error
			if labels, err = parseLabels(strings.TrimSuffix(rest, "}")); err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue // "sent 40 requests to ...", "metrics at ..."
		}
		k := key(name, labels)
		if _, dup := s[k]; dup {
			return nil, fmt.Errorf("series %s twice", k)
		}
		s[k] = v
	}
	return s, sc.Err()
}

// cutLast splits a sample line at its last space: series and value.
func cutLast(line string) (series, value string, ok bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", "", false
	}
	return line[:i], line[i+1:], true
}

// parseLabels parses label="value" pairs separated by commas, the values
// quoted as Go strings.
func parseLabels(s string) (map[string]string, error) {
	labels := make(map[string]string)
	for s != "" {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("no = in %q", s)
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, fmt.Errorf("label %s: %v", name, err)
		}
		labels[name], _ = strconv.Unquote(quoted)
		s = strings.TrimPrefix(rest[len(quoted):], ",")
	}
	return labels, nil
}

// checkSamples reports each series of got that is not in want, or whose
// value differs, and each series of want missing from got.
func checkSamples(t *testing.T, got, want samples) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(got)) {
		w, ok := want[k]
		switch {
		case !ok:
			t.Errorf("unexpected series %s %v", k, got[k])
		case math.Abs(got[k]-w) > 1e-9:
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			t.Errorf("missing series %s (want %v)", k, want[k])
		}
	}
}
