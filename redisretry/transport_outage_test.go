package redisretry_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/redisretry"
)

// TestTransportSurvivesRedisRestart sends requests from three replicas'
// transports, each with the shared quota and adaptive limiter, while Redis
// is killed and started again: every request succeeds, none takes longer
// than the Store's Timeout allows beyond the request itself, the replicas
// count fallbacks in their Snapshot, and once each is back on Redis they
// share one quota again: an outage of the API then costs the fleet one
// quota's worth of retries.
func TestTransportSurvivesRedisRestart(t *testing.T) {
	srv := startRedis(t)
	var failing atomic.Bool
	var hits atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	prefix := uniquePrefix(t)
	const timeout = 50 * time.Millisecond
	var (
		ts []*retrytransport.Transport
		qs []*redisretry.Quota
	)
	for range 3 {
		p := policy.Adaptive()
		p.Backoff = noWait
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: timeout, Backoff: 100 * time.Millisecond}
		q := s.Quota(nil)
		p.Quota, p.Limiter = q, s.Adaptive(nil)
		tr := retrytransport.New(nil, retrytransport.WithPolicy(p))
		defer tr.CloseIdleConnections()
		ts = append(ts, tr)
		qs = append(qs, q)
	}

	var (
		sent, failed atomic.Int64
		longest      atomic.Int64 // nanoseconds
		stop         = make(chan struct{})
		wg           sync.WaitGroup
	)
	for _, tr := range ts {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &http.Client{Transport: tr}
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					resp, err := c.Get(api.URL)
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					if err != nil || resp.StatusCode != http.StatusOK {
						failed.Add(1)
					}
					sent.Add(1)
					if d := int64(time.Since(start)); d > longest.Load() {
						longest.Store(d) // racy max, good enough for a bound
					}
				}
			}()
		}
	}
	waitSent := func(n int64) {
		t.Helper()
		target := sent.Load() + n
		pollUntil(t, 10*time.Second, "requests go on", func() bool { return sent.Load() >= target })
	}
	fallbacks := func() (n uint64) {
		for _, tr := range ts {
			for _, s := range tr.Snapshot() {
				n += s.Fallbacks
			}
		}
		return n
	}

	waitSent(100)
	srv.Kill()
	pollUntil(t, 10*time.Second, "the replicas fall back", func() bool { return fallbacks() > 0 })
	waitSent(100)
	srv.restart(t)
	adm := srv.client(t, nil)
	waitSent(100)
	// A replica goes back to Redis at its first probe after Backoff, which
	// may come after those 100 requests: until then it decides locally.
	for i, q := range qs {
		probe := "probe" + itoa(i)
		pollUntil(t, 5*time.Second, "replica "+itoa(i)+" uses the restarted Redis", func() bool {
			q.Acquire(probe, classify.Transient)
			return exists(t, adm, prefix+"{"+probe+"}:quota")
		})
	}
	close(stop)
	wg.Wait()

	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed while Redis was killed and restarted; want none", n, sent.Load())
	}
	// No request stalls on the dead or restarting store: each waits on it
	// for one Timeout at most, once per Backoff (see Store, and
	// TestRequestWaitsOnStalledRedisOnce, which counts those waits). The
	// bound leaves a second for a loaded machine, where a loopback call can
	// take hundreds of milliseconds, and still catches a request held for a
	// client's own dial or read timeout (seconds).
	if got, bound := time.Duration(longest.Load()), 4*timeout+time.Second; got > bound {
		t.Errorf("the longest request took %v with Redis down; want at most %v", got, bound)
	}

	// Back on Redis, the fleet shares one quota again: an outage of the
	// API costs 100 retries in all, not 100 per replica.
	if err := adm.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(api.URL, "http://")
	local := func() (n uint64) { // retries the replicas decided without Redis
		for _, q := range qs {
			n += q.Fallbacks(host)
		}
		return n
	}
	localBefore := local()
	failing.Store(true)
	before := hits.Load()
	const requests = 150
	for i := range requests {
		resp, err := (&http.Client{Transport: ts[i%3]}).Get(api.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// 500 tokens at 5 a retry, give or take the successes the replicas
	// still owed the bucket. A call that misses the Timeout (a machine
	// that stalls the test for longer) sends its replica local for a
	// Backoff: until Redis answers it again, its retries come from its
	// view of the bucket, and the ones beyond what the bucket had left
	// are more than one quota's worth.
	retries, decidedLocally := hits.Load()-before-requests, local()-localBefore
	if decidedLocally > 0 {
		t.Logf("%d retries in the API outage, %d of the quota's decisions local", retries, decidedLocally)
	}
	if retries < 95 || retries > 105+int64(decidedLocally) {
		t.Errorf("after the restart, 3 replicas retried %d times in an API outage, %d of the quota's decisions local; want about 100 (one shared quota)", retries, decidedLocally)
	}
}

// timeouts is a go-redis hook that counts the calls of a Store that ran
// out of time, by their contexts (one per call, whatever go-redis retries
// inside it): with the server stopped, the calls that waited out the
// Store's Timeout.
type timeouts struct {
	mu   sync.Mutex
	ctxs map[context.Context]bool // guarded by mu
}

func (h *timeouts) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ctxs)
}

func (h *timeouts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *timeouts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			h.mu.Lock()
			if h.ctxs == nil {
				h.ctxs = make(map[context.Context]bool)
			}
			h.ctxs[ctx] = true
			h.mu.Unlock()
		}
		return err
	}
}

func (h *timeouts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRequestWaitsOnStalledRedisOnce stops Redis (SIGSTOP) under a
// transport whose policy has a shared fixed rate and a shared quota, so
// that a request that is retried once asks Redis three times (a send
// token, the retry's cost, a send token): each request waits out the
// Store's Timeout at most once, and its later calls, and those of
// requests beside it, decide locally without waiting.
func TestRequestWaitsOnStalledRedisOnce(t *testing.T) {
	for _, concurrent := range []int{1, 4} {
		t.Run(itoa(concurrent)+"requests", func(t *testing.T) {
			srv := startRedis(t)
			var mu sync.Mutex
			seen := make(map[string]bool)
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				first := !seen[r.URL.Path]
				seen[r.URL.Path] = true
				mu.Unlock()
				if first {
					w.WriteHeader(http.StatusServiceUnavailable) // so that the quota is asked
				}
			}))
			defer api.Close()

			const timeout = 200 * time.Millisecond
			c := srv.client(t, &redis.Options{ContextTimeoutEnabled: true})
			var waited timeouts
			c.AddHook(&waited)
			// A Backoff longer than the test: no call probes Redis again.
			s := &redisretry.Store{Client: c, Prefix: uniquePrefix(t), Timeout: timeout, Backoff: time.Hour}
			p := policy.Standard()
			p.Backoff = noWait
			p.RateLimit = s.Fixed(redis_rate.PerSecond(1000), nil)
			p.Quota = s.Quota(nil)
			tr := retrytransport.New(nil, retrytransport.WithPolicy(p))
			defer tr.CloseIdleConnections()
			get(t, tr, api.URL+"/warm") // connects and loads the scripts
			if n := waited.calls(); n != 0 {
				t.Fatalf("%d calls timed out before Redis was stopped", n)
			}

			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Resume() }()
			var wg sync.WaitGroup
			for i := range concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					resp, err := (&http.Client{Transport: tr}).Get(api.URL + "/" + itoa(i))
					if err != nil {
						t.Errorf("request %d with Redis stopped: %v", i, err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("request %d with Redis stopped: status %d; want 200 after one retry", i, resp.StatusCode)
					}
					t.Logf("request %d took %v with Redis stopped (Timeout %v)", i, time.Since(start), timeout)
				}()
			}
			wg.Wait()
			if n := waited.calls(); n < 1 || n > concurrent {
				t.Errorf("%d requests, each asking Redis 3 times, waited out the Timeout in %d calls; want 1 to %d (once per request at most)", concurrent, n, concurrent)
			}
		})
	}
}
