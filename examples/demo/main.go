// Demo shows what retrytransport changes for an HTTP client. It starts a
// flaky HTTP server on 127.0.0.1 and sends the same requests to it through
// two clients: a plain one, whose Transport is a clone of
// http.DefaultTransport, and one whose Transport is retrytransport.New over
// such a clone with policy.Standard(). For each fault (503 bursts, 429 with
// Retry-After, dropped connections, a full outage) it prints a table of what
// each client experienced: requests that succeeded, attempts the server saw,
// retries, time spent waiting, final statuses and the retry quota left.
//
// Run it from the module root:
//
//	go run ./examples/demo
//
// or make demo. It uses no network beyond the loopback interface and takes
// about 15 seconds, most of it in policy.Standard()'s backoff (up to 1 s
// before the first retry, 2 s before the second) and the server's
// Retry-After: 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// config sets the size and the speed of a run.
type config struct {
	// requests is how many logical requests each client sends in the 503,
	// 429 and dropped-connection scenarios. The 429 scenario waits the
	// server's Retry-After of 1 s per request.
	requests int
	// outageRequests is how many logical requests each client sends during
	// the outage. With policy.Standard() each costs the quota 10 tokens
	// until it runs dry, so more than 50 show the circuit breaker at work.
	outageRequests int
	// backoff is the retrytransport client's backoff outside the outage.
	// Nil keeps policy.Standard()'s full jitter: [0, 1s), then [0, 2s).
	backoff backoff.Strategy
	// outageBackoff is the retrytransport client's backoff during the
	// outage, kept tiny so that the quota, not the clock, ends it.
	outageBackoff backoff.Strategy
}

// defaultConfig is the configuration of go run ./examples/demo.
func defaultConfig() config {
	return config{
		requests:       5,
		outageRequests: 150,
		outageBackoff:  backoff.FullJitter{Base: time.Millisecond, Max: 5 * time.Millisecond},
	}
}

// scenario is one fault of the flaky server, exercised by both clients.
type scenario struct {
	name     string           // short label, such as "503 bursts"
	fault    string           // one sentence on what the server does
	path     string           // the server path that has the fault
	requests int              // logical requests per client
	backoff  backoff.Strategy // retrytransport backoff; nil means the policy's
}

// scenarios returns the four scenarios of a run, in the order they run.
func scenarios(cfg config) []scenario {
	return []scenario{
		{"503 bursts", "the first 2 attempts of every request get 503 Service Unavailable, the 3rd gets 200",
			pathBurst, cfg.requests, cfg.backoff},
		{"429 + Retry-After", "the first attempt gets 429 Too Many Requests with Retry-After: 1, the next one 200",
			pathThrottle, cfg.requests, cfg.backoff},
		{"dropped connections", "the server closes the connection of the first attempt without answering, then answers 200",
			pathDrop, cfg.requests, cfg.backoff},
		{"outage", "every attempt gets 503; with backoff cut to milliseconds, the retry quota (500 tokens, 5 per retry) ends the retrying",
			pathOutage, cfg.outageRequests, cfg.outageBackoff},
	}
}

// tally is what one client experienced in one scenario.
type tally struct {
	client       string         // "plain" or "retrytransport"
	requests     int            // logical requests sent
	succeeded    int            // logical requests that ended in a 2xx response
	hits         int            // attempts the server saw
	perRequest   []int          // attempts the server saw for each logical request, in order
	statuses     map[string]int // final status code, or "err", counted over the logical requests
	retries      int            // retries made (observer events that announce one)
	wait         time.Duration  // sum of the waits before those retries
	refused      int            // retries the retry quota refused
	firstRefused int            // the logical request (from 1) whose retry the quota first refused; 0 if none
	quota        float64        // retry quota tokens left at the end; -1 for the plain client
}

// report holds both clients' tallies for one scenario.
type report struct {
	scenario
	plain, retry tally
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, os.Stdout, defaultConfig())
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run starts the flaky server, runs every scenario with the plain client and
// then with the retrytransport client, writes a table per scenario to w as
// soon as it is done, and ends with a short summary. It returns the tallies
// it printed. Nothing it starts outlives it.
func run(ctx context.Context, w io.Writer, cfg config) ([]report, error) {
	srv := newFlakyServer()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	p := newPrinter(w)
	p.intro(ts.URL)
	var reports []report
	for _, sc := range scenarios(cfg) {
		r := report{scenario: sc}
		var err error
		if r.plain, err = measure(ctx, srv, ts.URL, sc, false); err != nil {
			return reports, err
		}
		if r.retry, err = measure(ctx, srv, ts.URL, sc, true); err != nil {
			return reports, err
		}
		reports = append(reports, r)
		p.table(r)
		if err := p.flush(); err != nil {
			return reports, err
		}
	}
	p.summary(reports)
	return reports, p.flush()
}

// measure sends sc.requests logical requests, one after the other, through
// a new client, plain or retrying, against fresh server state, and tallies
// what happened. It returns an error only if ctx ends.
func measure(ctx context.Context, srv *flakyServer, baseURL string, sc scenario, retrying bool) (tally, error) {
	srv.reset()
	t := tally{client: "plain", requests: sc.requests, statuses: make(map[string]int), quota: -1}
	var obs observer
	var quota *ratelimit.Quota
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if retrying {
		t.client = "retrytransport"
		pol := policy.Standard()
		if sc.backoff != nil {
			pol.Backoff = sc.backoff
		}
		// policy.Standard() would let the transport create this quota (the
		// AWS defaults); creating it here lets the demo read its level at
		// the end, after refunds that no Event reports.
		quota = new(ratelimit.Quota)
		pol.Quota = quota
		rt = retrytransport.New(rt, retrytransport.WithPolicy(pol), retrytransport.WithObserver(obs.observe))
	}
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	for i := range sc.requests {
		id := fmt.Sprintf("%s-%s-%d", sc.path[1:], t.client, i+1)
		status, err := get(ctx, client, baseURL+sc.path, id)
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		if err != nil {
			t.statuses["err"]++
		} else {
			t.statuses[strconv.Itoa(status)]++
		}
		if err == nil && status >= 200 && status < 300 {
			t.succeeded++
		}
		t.perRequest = append(t.perRequest, srv.attemptsOf(id))
		if obs.counts().refused > 0 && t.firstRefused == 0 {
			t.firstRefused = i + 1
		}
	}
	t.hits = srv.reset()
	c := obs.counts()
	t.retries, t.wait, t.refused = c.retries, c.wait, c.refused
	if quota != nil {
		u, err := url.Parse(baseURL)
		if err != nil {
			return t, err
		}
		t.quota = quota.Level(u.Host) // the quota's scope is the request URL's host
	}
	return t, nil
}

// get sends one logical GET of url with request id id, reads the whole
// response and returns its status code.
func get(ctx context.Context, client *http.Client, url, id string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(requestIDHeader, id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// observer counts the retrytransport.Events of one client. The transport
// calls observe synchronously, possibly from several goroutines at once for
// concurrent requests, hence the mutex.
type observer struct {
	mu sync.Mutex
	c  eventCounts
}

// eventCounts is what an observer has counted so far.
type eventCounts struct {
	retries int           // events that announce a retry: not Final
	wait    time.Duration // their Delays added up
	refused int           // events whose Stop is ratelimit.ErrQuotaExceeded
}

// observe is the retrytransport.WithObserver hook.
func (o *observer) observe(ev retrytransport.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case errors.Is(ev.Stop, ratelimit.ErrQuotaExceeded):
		o.c.refused++
	case !ev.Final && ev.Stop == nil:
		o.c.retries++
		o.c.wait += ev.Delay
	}
}

// counts returns a copy of the counts so far.
func (o *observer) counts() eventCounts {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.c
}
