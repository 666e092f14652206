package redisretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// noWait is a backoff that retries at once, so that the tests do not
// wait on jitter.
var noWait = backoff.Func(func(int) time.Duration { return 0 })

// get sends a GET to url through t and drains the response.
func get(tb testing.TB, t http.RoundTripper, url string) {
	tb.Helper()
	resp, err := (&http.Client{Transport: t}).Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// fleet returns n transports, replicas with their own Stores on srv that
// share a key prefix, each with the policy that newPolicy returns for its
// Store; their idle connections are closed when t ends.
func fleet(t *testing.T, srv *redisServer, n int, newPolicy func(s *redisretry.Store) policy.Policy) []*retrytransport.Transport {
	t.Helper()
	prefix := uniquePrefix(t)
	ts := make([]*retrytransport.Transport, n)
	for i := range ts {
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: time.Second}
		p := newPolicy(s)
		p.Backoff = noWait
		ts[i] = retrytransport.New(nil, retrytransport.WithPolicy(p))
		t.Cleanup(ts[i].CloseIdleConnections)
	}
	return ts
}

// failingAPIWithSharedQuota starts a server that answers every request
// 503, counting them in hits, and two replicas whose standard policies
// share one retry quota of 20 tokens (4 retries) through a local Redis.
func failingAPIWithSharedQuota(t *testing.T) (api *httptest.Server, hits *atomic.Int64, ts []*retrytransport.Transport) {
	t.Helper()
	srv := startRedis(t)
	hits = new(atomic.Int64)
	api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(api.Close)
	ts = fleet(t, srv, 2, func(s *redisretry.Store) policy.Policy {
		p := policy.Standard()
		p.Quota = s.Quota(&quota.Bucket{Capacity: 20}) // 4 retries at 5 tokens
		return p
	})
	return api, hits, ts
}

// TestRequestPolicyPaysTheFleetsQuota: requests with rules of their own,
// ten attempts each, retry on the quota the fleet shares through Redis, not
// on one of their own: two replicas together still make one quota's worth
// of retries.
func TestRequestPolicyPaysTheFleetsQuota(t *testing.T) {
	api, hits, ts := failingAPIWithSharedQuota(t)
	ten := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 10, Backoff: noWait, Quota: &quota.Bucket{Capacity: 1000}})
	for i := range 2 {
		req, err := http.NewRequestWithContext(retrytransport.WithRequestPolicy(context.Background(), ten), "GET", api.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: ts[i]}).Do(req)
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got, want := hits.Load(), int64(2+4); got != want {
		t.Errorf("2 replicas sent %d attempts for 2 requests of 10 attempts each to a failing server; want %d (the fleet's 4 retries)", got, want)
	}
}

// TestTransportFleetSharesQuota runs two transports, replicas with their
// own Stores, against a failing server: together they make one quota's
// worth of retries, not one each.
func TestTransportFleetSharesQuota(t *testing.T) {
	api, hits, ts := failingAPIWithSharedQuota(t)
	for i := range 6 {
		get(t, ts[i%2], api.URL)
	}
	if got, want := hits.Load(), int64(6+4); got != want {
		t.Errorf("2 replicas sent %d attempts for 6 requests to a failing server; want %d (4 retries shared)", got, want)
	}
	for i, tr := range ts {
		for _, s := range tr.Snapshot() {
			if s.Quota > 0 || s.Fallbacks != 0 {
				t.Errorf("replica %d: Snapshot of %s: Quota %v, Fallbacks %d; want 0, 0", i, s.Scope, s.Quota, s.Fallbacks)
			}
		}
	}
}

// TestTransportFleetSharesAdaptive checks that a throttle one replica's
// transport gets limits another's: its snapshot shows the fleet's state.
func TestTransportFleetSharesAdaptive(t *testing.T) {
	srv := startRedis(t)
	var hits atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer api.Close()
	ts := fleet(t, srv, 2, func(s *redisretry.Store) policy.Policy {
		p := policy.Adaptive()
		p.Limiter = s.Adaptive(&ratelimit.Adaptive{MinFillRate: 20})
		return p
	})
	get(t, ts[0], api.URL) // 429, then 200 after the limiter's wait
	get(t, ts[1], api.URL)
	snap := ts[1].Snapshot()
	if len(snap) != 1 || !snap[0].Adaptive.Enabled || snap[0].Adaptive.FillRate < 20 || snap[0].Fallbacks != 0 {
		t.Errorf("second replica's Snapshot after the first's throttle = %+v; want its scope limited at 20 req/s or more, no fallback", snap)
	}
	if got := hits.Load(); got != 3 {
		t.Errorf("attempts = %d; want 3", got)
	}
}
