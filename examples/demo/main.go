// Demo shows what retrytransport changes for an HTTP client. It starts a
// flaky HTTP server on 127.0.0.1 and sends the same requests to it through
// two clients over the same kind of base transport: a plain one, whose
// Transport is go-cleanhttp's pooled transport, and one whose Transport is
// retrytransport.New(nil, ...) with policy.Standard(), where the nil base is
// the documented default, that same go-cleanhttp pooled transport. For each
// fault (503 bursts, 429 with Retry-After, dropped connections, a full
// outage) it prints a table of what each client experienced: requests that
// succeeded, attempts the server saw, retries, time spent waiting, final
// statuses and the retry quota left, and then where the quota's tokens went,
// computed from the Events the transport reported and checked against the
// level Transport.Snapshot reports.
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
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
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
		{"outage", fmt.Sprintf("every attempt gets 503; with backoff cut to milliseconds, the retry quota (%d tokens, %d per retry) ends the retrying",
			quota.DefaultCapacity, quota.DefaultRetryCost),
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
	quota        float64        // retry quota tokens left at the end, from Transport.Snapshot; -1 for the plain client
	account      quotaAccount   // where the retry quota's tokens went, from the Events; zero for the plain client
}

// quotaAccount is where a retry quota's tokens went during one scenario, as
// the Events' Quota levels show it: each Event reports the level of its
// scope's quota after the Transport's decision, so the change from one
// Event to the next is what that decision paid or gave back.
type quotaAccount struct {
	start     float64           // the level before the first request: the bucket starts full
	costs     map[retryCost]int // retries by the outcome they followed and the tokens they paid
	paid      float64           // tokens the retries paid
	recovered int               // requests that succeeded on a retry
	refunded  float64           // tokens those requests got back, their successful retry's cost
	firstOK   int               // requests whose first attempt succeeded
	added     float64           // tokens those requests added (while the bucket was below full)
	other     float64           // tokens the other Events changed; zero in this demo: a request that gives up gives nothing back
}

// retryCost is what a retry followed and what it paid.
type retryCost struct {
	after  string // the outcome the retry followed: "transient", "throttle" or "timeout"
	tokens int    // the tokens it paid
}

// expected returns the level the account leads to.
func (a quotaAccount) expected() float64 {
	return a.start - a.paid + a.refunded + a.added + a.other
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
	obs := newObserver()
	// Both clients send over go-cleanhttp's pooled transport, so that the
	// only difference between them is retrying: the plain client makes its
	// own, and retrytransport.New(nil, ...) makes one as its default base.
	var rt http.RoundTripper
	var rtt *retrytransport.Transport
	if !retrying {
		rt = cleanhttp.DefaultPooledTransport()
	} else {
		t.client = "retrytransport"
		pol := policy.Standard() // it leaves the quota to the transport, which gives each scope the defaults
		if sc.backoff != nil {
			pol.Backoff = sc.backoff
		}
		rtt = retrytransport.New(nil, retrytransport.WithPolicy(pol),
			retrytransport.WithObserver(obs.observe), retrytransport.WithFinalObserver(obs.final))
		rt = rtt
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
	if rtt != nil {
		u, err := url.Parse(baseURL)
		if err != nil {
			return t, err
		}
		t.account = c.account
		t.quota = quotaLevel(rtt, u.Host) // the quota's scope is the request URL's host
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

// quotaLevel returns the retry quota level of scope that t's Snapshot
// reports, or -1 if t has no statistics for scope.
func quotaLevel(t *retrytransport.Transport, scope string) float64 {
	for _, s := range t.Snapshot() {
		if s.Scope == scope {
			return s.Quota
		}
	}
	return -1
}

// observer counts the retrytransport.Events of one client, and follows its
// retry quota's level through them. The demo sends one request at a time to
// one scope, so each Event's level follows the previous one's. The transport
// calls the hooks synchronously, possibly from several goroutines at once
// for concurrent requests, hence the mutex.
type observer struct {
	mu    sync.Mutex
	c     eventCounts
	level float64 // the quota level after the last Event
}

// eventCounts is what an observer has counted so far.
type eventCounts struct {
	retries int           // events that announce a retry: not Final
	wait    time.Duration // their Delays added up
	refused int           // events whose Stop is quota.ErrExceeded
	account quotaAccount  // where the quota's tokens went
}

// newObserver returns an observer that has seen nothing, for a transport
// whose quota starts full, as policy.Standard()'s does.
func newObserver() *observer {
	o := &observer{level: quota.DefaultCapacity}
	o.c.account = quotaAccount{start: o.level, costs: make(map[retryCost]int)}
	return o
}

// observe is the retrytransport.WithObserver hook: it hears of each retry,
// and of the end of the requests that needed one.
func (o *observer) observe(ev retrytransport.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case errors.Is(ev.Stop, quota.ErrExceeded):
		o.c.refused++
	case !ev.Final && ev.Stop == nil:
		o.c.retries++
		o.c.wait += ev.Delay
	}
	if ev.Final {
		return // final accounts for it
	}
	change := ev.Quota - o.level
	o.level = ev.Quota
	if ev.Stop == nil {
		// A retry's Event reports the level after the retry paid.
		o.c.account.costs[retryCost{ev.Outcome.Kind.String(), int(math.Round(-change))}]++
		o.c.account.paid -= change
	} else {
		o.c.account.other += change
	}
}

// final is the retrytransport.WithFinalObserver hook: it hears of the end
// of every request, those that succeeded at once included, after observe.
func (o *observer) final(ev retrytransport.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	change := ev.Quota - o.level
	o.level = ev.Quota
	a := &o.c.account
	switch {
	case ev.Stop == nil && ev.Attempt > 1:
		a.recovered++
		a.refunded += change
	case ev.Stop == nil:
		a.firstOK++
		a.added += change
	default:
		a.other += change
	}
}

// counts returns a copy of the counts so far.
func (o *observer) counts() eventCounts {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.c
	c.account.costs = maps.Clone(c.account.costs)
	return c
}
