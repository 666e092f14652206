package redisretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// A request makes a few calls to the store (reserve, record, success),
	// each bounded by the Timeout; the loopback request itself takes far less.
	if got, bound := time.Duration(longest.Load()), 4*timeout+200*time.Millisecond; got > bound {
		t.Errorf("the longest request took %v with Redis down; want at most %v", got, bound)
	}

	// Back on Redis, the fleet shares one quota again: an outage of the
	// API costs 100 retries in all, not 100 per replica.
	if err := adm.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
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
	if retries := hits.Load() - before - requests; retries < 95 || retries > 105 {
		t.Errorf("after the restart, 3 replicas retried %d times in an API outage; want about 100 (one shared quota)", retries)
	}
}
