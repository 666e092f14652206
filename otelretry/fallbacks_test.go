package otelretry_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// sharedQuota stands for a retry quota kept in a store that other
// processes share (module redisretry): it reports, per scope, how many
// decisions it made from local state because the store did not answer.
type sharedQuota struct {
	quota.Bucket
	fallbacks map[string]uint64
}

func (q *sharedQuota) Fallbacks(scope string) uint64 { return q.fallbacks[scope] }

// TestStoreFallbacksCounter: a quota that counts fallbacks shows them as
// retrytransport.store.fallbacks, per scope, and under _OTHER for the
// scopes of a Scope function without WithScopeAttribute.
func TestStoreFallbacksCounter(t *testing.T) {
	srv := newServer(t, answer{status: 200})
	host, port := hostPort(t, srv.URL)
	t.Run("PerScope", func(t *testing.T) {
		p := policy.Standard()
		p.Quota = &sharedQuota{fallbacks: map[string]uint64{host + ":" + port: 3}}
		r := newRig(t, p)
		if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 200 {
			t.Fatalf("GET = %d, %v; want 200", status, err)
		}
		want := []point{{scopeOnly(host + ":" + port), 3}}
		if diff := cmp.Diff(want, sortedPoints(t, r.collect(t), "retrytransport.store.fallbacks")); diff != "" {
			t.Errorf("store fallbacks (-want +got):\n%s", diff)
		}
	})
	t.Run("Other", func(t *testing.T) {
		p := policy.Standard()
		p.Quota = &sharedQuota{fallbacks: map[string]uint64{"tenant-a": 2, "tenant-b": 5}}
		p.Scope = func(req *http.Request) string { return "tenant-" + req.Header.Get("X-Tenant") }
		r := newRig(t, p)
		for _, tenant := range []string{"a", "b"} {
			_, status, err := callReq(t, r, context.Background(), "GET", srv.URL, nil,
				func(req *http.Request) { req.Header.Set("X-Tenant", tenant) })
			if err != nil || status != 200 {
				t.Fatalf("GET for tenant %s = %d, %v; want 200", tenant, status, err)
			}
		}
		want := []point{{scopeOnly("_OTHER"), 7}}
		if diff := cmp.Diff(want, sortedPoints(t, r.collect(t), "retrytransport.store.fallbacks")); diff != "" {
			t.Errorf("store fallbacks (-want +got):\n%s", diff)
		}
	})
}
