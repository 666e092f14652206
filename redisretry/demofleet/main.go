// Demofleet shows why a fleet of replicas wants one retry quota, not one
// each. It starts a redis-server from PATH on a free loopback port (no
// persistence; killed when the demo ends, Ctrl-C included) and an HTTP API
// on 127.0.0.1 that answers every request with 503: an outage. Then a fleet
// of replicas, each with its own retrytransport.Transport (and, in the
// second act, its own Redis client), sends requests to the API, one after
// the other per replica, all replicas at once:
//
//   - act 1: every replica has the retry quota policy.Standard() gives it,
//     in its own process: 500 tokens, 5 per retry, so each stops retrying
//     after 100 retries and the API gets replicas × 100 of them;
//   - act 2: every replica's quota is a redisretry.Quota in the same Redis,
//     so the fleet shares one bucket and the API gets 100 retries in all,
//     however many replicas there are;
//   - act 3: the outage ends and the API answers 200; each request that
//     succeeds at its first attempt adds a token to the shared bucket, so
//     the fleet regains its retries together.
//
// For each act it prints what the API saw (attempts, retries) per replica
// and for the fleet, when each replica's quota first refused a retry (its
// circuit opened), the quota level the replica last saw and the decisions
// it had to make without Redis (the Snapshot's Fallbacks: 0 when Redis
// answered every call).
//
// Run it from the repository root with make demo-fleet, or from redisretry:
//
//	go run ./demofleet [-replicas 5] [-requests 150] [-recovery 20]
//
// The backoff is cut to a few milliseconds so that the quota, not the
// clock, ends the retrying: once built, the demo takes under a second.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// config sets the size and speed of a run.
type config struct {
	replicas int              // replicas in the fleet
	requests int              // requests each replica sends during the outage
	recovery int              // requests each replica sends after it; 0 skips act 3
	backoff  backoff.Strategy // every replica's backoff
	timeout  time.Duration    // redisretry.Store.Timeout; zero means its default
}

// defaultConfig is the configuration of go run ./demofleet before flags.
func defaultConfig() config {
	return config{
		replicas: 5,
		requests: 150,
		recovery: 20,
		backoff:  backoff.FullJitter{Base: time.Millisecond, Max: 4 * time.Millisecond},
	}
}

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.replicas, "replicas", cfg.replicas, "replicas in the fleet")
	flag.IntVar(&cfg.requests, "requests", cfg.requests, "requests each replica sends during the outage")
	flag.IntVar(&cfg.recovery, "recovery", cfg.recovery, "requests each replica sends after the outage; 0 skips act 3")
	flag.Parse()
	if cfg.replicas < 1 || cfg.requests < 1 || cfg.recovery < 0 {
		fmt.Fprintln(os.Stderr, "demofleet: -replicas and -requests must be at least 1, -recovery at least 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	_, err := run(ctx, os.Stdout, cfg)
	stop()
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "demofleet: interrupted; redis-server stopped")
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// result is what run measured.
type result struct {
	own, shared fleetRun // acts 1 and 2
	recovery    recovery // act 3, if it ran
}

// run starts redis-server and the API, plays the acts, prints each as soon
// as it is done, and returns the numbers it printed. Nothing it starts
// outlives it.
func run(ctx context.Context, w io.Writer, cfg config) (result, error) {
	var res result
	rs, err := startRedis(ctx)
	if err != nil {
		return res, err
	}
	defer rs.Kill()
	api := newAPI(cfg.replicas)
	ts := httptest.NewServer(api)
	defer ts.Close()
	u, err := url.Parse(ts.URL)
	if err != nil {
		return res, err
	}
	scope := u.Host // the quota's scope: the request URL's host, by default

	p := newPrinter(w)
	p.intro(ts.URL, rs.Addr, cfg)

	own := newFleet(cfg, ts.URL, "")
	res.own, err = own.outage(ctx, api, cfg.requests)
	own.close()
	if err != nil {
		return res, err
	}
	p.act("Act 1: each replica has its own retry quota, in its process", res.own, false)
	if err := p.flush(); err != nil {
		return res, err
	}

	shared := newFleet(cfg, ts.URL, rs.Addr)
	defer shared.close()
	if err := shared.connect(ctx); err != nil {
		return res, err
	}
	if res.shared, err = shared.outage(ctx, api, cfg.requests); err != nil {
		return res, err
	}
	p.act("Act 2: one retry quota for the fleet, in Redis (redisretry)", res.shared, true)
	p.compare(res, cfg)
	if err := p.flush(); err != nil || cfg.recovery == 0 {
		return res, err
	}

	if res.recovery, err = endOutage(ctx, shared, api, rs.Addr, scope, cfg.recovery); err != nil {
		return res, err
	}
	p.recovery(res.recovery, cfg)
	return res, p.flush()
}

// recovery is what act 3 measured: the shared bucket's level in Redis
// before the outage ended, after the replicas' first successes, and after
// one more request each once Quota.Flush had passed.
type recovery struct {
	successes          int // requests that got 200 at their first attempt
	before, mid, after float64
}

// endOutage ends the outage, has every replica send n requests, waits
// redisretry.DefaultQuotaFlush (a replica pays the tokens its successes add to
// the bucket at most that often), then has every replica send one more,
// and reads the shared bucket's level around each step.
func endOutage(ctx context.Context, f *fleet, api *api, redisAddr, scope string, n int) (recovery, error) {
	var rec recovery
	api.reset(false)
	var err error
	if rec.before, err = sharedLevel(ctx, redisAddr, scope); err != nil {
		return rec, err
	}
	if rec.successes, err = f.send(ctx, n); err != nil {
		return rec, err
	}
	if rec.mid, err = sharedLevel(ctx, redisAddr, scope); err != nil {
		return rec, err
	}
	t := time.NewTimer(redisretry.DefaultQuotaFlush)
	select {
	case <-ctx.Done():
		t.Stop()
		return rec, ctx.Err()
	case <-t.C:
	}
	more, err := f.send(ctx, 1)
	rec.successes += more
	if err != nil {
		return rec, err
	}
	rec.after, err = sharedLevel(ctx, redisAddr, scope)
	return rec, err
}

// sharedLevel reads the level of scope's shared bucket straight from
// Redis, as redisretry.Quota stores it: a hash with a "tokens" field under
// the Store's key for the scope, no key meaning a full bucket.
// Quota.Level would give one replica's view instead, which adds the tokens
// that replica still owes.
func sharedLevel(ctx context.Context, redisAddr, scope string) (float64, error) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	v, err := rdb.HGet(ctx, redisretry.DefaultPrefix+"{"+scope+"}:quota", "tokens").Float64()
	switch {
	case errors.Is(err, redis.Nil):
		return quota.DefaultCapacity, nil
	case err != nil:
		return 0, fmt.Errorf("demofleet: read the shared bucket: %w", err)
	}
	return v, nil
}

// printer writes the demo's report in aligned columns. It keeps the first
// write error, which flush returns, so that the printing code reads
// straight.
type printer struct {
	tw  *tabwriter.Writer
	err error
}

// newPrinter returns a printer writing to w.
func newPrinter(w io.Writer) *printer {
	return &printer{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// printf formats to the report unless an earlier write failed.
func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.tw, format, args...)
	}
}

// flush writes out what is buffered and returns the first error so far.
func (p *printer) flush() error {
	if p.err == nil {
		p.err = p.tw.Flush()
	}
	return p.err
}

// intro says what runs against what.
func (p *printer) intro(apiURL, redisAddr string, cfg config) {
	p.printf("API on %s answers every request with 503 (an outage); redis-server on %s.\n", apiURL, redisAddr)
	p.printf("%d replicas send %d requests each, one after the other, all replicas at once, with policy.Standard():\n",
		cfg.replicas, cfg.requests)
	p.printf("3 attempts per request, a retry quota of %d tokens at %d per retry, backoff cut to milliseconds.\n",
		quota.DefaultCapacity, quota.DefaultRetryCost)
}

// act prints one outage run: a row per replica, then the fleet's totals.
func (p *printer) act(title string, fr fleetRun, shared bool) {
	p.printf("\n%s (%v)\n", title, fr.elapsed.Round(time.Millisecond))
	p.printf("  replica\tattempts\tretries\tcircuit opened\tquota left\tfallbacks\n")
	for i, r := range fr.replicas {
		opened, fallbacks := "never", "-"
		if r.openedAt > 0 {
			opened = fmt.Sprintf("request %d, at %v", r.openedAt, r.openedAfter.Round(time.Millisecond))
		}
		if shared {
			fallbacks = strconv.FormatUint(r.fallbacks, 10)
		}
		p.printf("  %d\t%d\t%d\t%s\t%.0f\t%s\n", i+1, r.attempts, r.retries, opened, r.level, fallbacks)
	}
	p.printf("  fleet\t%d\t%d\t\t\t\n", fr.attempts, fr.retries)
}

// compare prints what the shared quota saved the API and, if Redis did not
// always answer, what that cost.
func (p *printer) compare(res result, cfg config) {
	p.printf("\nThe API got %d retries from %d replicas with a quota each (%d per replica), and %d with the shared quota:\n",
		res.own.retries, cfg.replicas, res.own.retries/cfg.replicas, res.shared.retries)
	var fallbacks uint64
	for _, r := range res.shared.replicas {
		fallbacks += r.fallbacks
	}
	if fallbacks == 0 {
		p.printf("one quota's worth for the whole fleet, however many replicas it has.\n")
	} else {
		timeout := cmp.Or(cfg.timeout, redisretry.DefaultTimeout)
		p.printf("%d retry decisions were made without Redis, which missed the Store's Timeout (%v) at times: a replica\n",
			fallbacks, timeout)
		p.printf("then decides from its own quota for a second (Store.Backoff), and the fleet retries more. Is the machine busy?\n")
	}
}

// recovery prints act 3.
func (p *printer) recovery(rec recovery, cfg config) {
	p.printf("\nAct 3: the outage ends, the API answers 200; each request that succeeds at its first attempt adds %d token\n",
		quota.DefaultSuccessIncrement)
	p.printf("  shared bucket in Redis\ttokens\n")
	p.printf("  before\t%.0f\n", rec.before)
	p.printf("  after %d requests per replica\t%.0f\t(owed by the replicas, which pay the bucket at most every %v: Quota.Flush)\n",
		cfg.recovery, rec.mid, redisretry.DefaultQuotaFlush)
	p.printf("  after %v and 1 more request per replica\t%.0f\t(%d successes in all)\n",
		redisretry.DefaultQuotaFlush, rec.after, rec.successes)
}
