package retrytransport_test

// Faults of scale: requests to very many hosts keep the per-scope state
// (statistics, quota buckets, heap) bounded.

import (
	"cmp"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// TestFaultManyHostsStayBounded: requests to 10,000 and then 20,000
// distinct hosts (no network: httpmock answers each request 503, 503, then
// 200). Each host's quota bucket is left below capacity, so every host is
// worth remembering; still the Transport's per-scope statistics keep at
// most 10,000 scopes, the quota at most MaxScopes buckets, and the heap
// grows by a bounded amount.
//
// The 20,000-host run gives the quota a MaxScopes of 500: each new scope
// past the limit scans every bucket (see quota.Bucket), which with the
// default 10,000 would take most of this test's time under the race
// detector.
func TestFaultManyHostsStayBounded(t *testing.T) {
	noLeaks(t)
	for _, tt := range []struct{ hosts, maxScopes int }{{10_000, 0}, {20_000, 500}} {
		hosts := tt.hosts
		t.Run(fmt.Sprint(hosts), func(t *testing.T) {
			var calls atomic.Int64
			mt := httpmock.NewMockTransport()
			mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
				status := 200
				if calls.Add(1)%3 != 0 {
					status = 503
				}
				return httpmock.NewStringResponse(status, ""), nil
			})
			q := &quota.Bucket{MaxScopes: tt.maxScopes}
			clock := faketime.New()
			q.Now = clock.Now
			tr := retrytransport.New(mt, retrytransport.WithPolicy(policy.Policy{Quota: q, Backoff: halfJitter}),
				retrytransport.WithClock(clock.Now, clock.Sleep))

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range hosts {
				u := fmt.Sprintf("http://h%d.example/", i)
				resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
				if err != nil {
					t.Fatalf("RoundTrip(%s): %v", u, err)
				}
				if resp.StatusCode != 200 {
					t.Fatalf("RoundTrip(%s) = %d; want 200 after two 503s", u, resp.StatusCode)
				}
				resp.Body.Close()
			}
			runtime.GC()
			runtime.ReadMemStats(&after)

			stats := tr.Snapshot()
			if len(stats) == 0 || len(stats) > 10_000 {
				t.Errorf("Snapshot() after %d hosts has %d scopes; want 1 to 10,000", hosts, len(stats))
			}
			for _, s := range stats {
				if s.Attempts != 3 || s.Retries != 2 || s.Quota != 495 && s.Quota != quota.DefaultCapacity {
					t.Errorf("Snapshot() scope %+v; want 3 attempts, 2 retries, quota 495 (or 500 once evicted)", s)
					break
				}
			}
			charged := 0
			for i := range hosts {
				if q.Level(fmt.Sprintf("h%d.example", i)) < quota.DefaultCapacity {
					charged++
				}
			}
			// Past MaxScopes the quota evicts a sixteenth of its buckets at
			// a time, so it holds between 15/16 of MaxScopes and MaxScopes.
			if most := min(hosts, cmp.Or(tt.maxScopes, quota.DefaultMaxScopes)); charged > most || charged < most-most/16 {
				t.Errorf("quota buckets below capacity after %d hosts = %d; want %d to %d (MaxScopes)", hosts, charged, most-most/16, most)
			}
			if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
				t.Errorf("heap grew by %d MiB over %d hosts; want < 64 MiB", grew>>20, hosts)
			}
			runtime.KeepAlive(tr)
		})
	}
}
