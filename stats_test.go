package retrytransport_test

// Snapshot: per-scope statistics, bounded in the scopes they keep.

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// snapshotMaxScopes is how many scopes Snapshot keeps at most.
const snapshotMaxScopes = 10_000

// statsGet sends one GET to host through tr.
func statsGet(t *testing.T, tr http.RoundTripper, host string) {
	t.Helper()
	u := "http://" + host + "/"
	resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
	if err != nil {
		t.Fatalf("RoundTrip(%s): %v", u, err)
	}
	resp.Body.Close()
}

// statsGetErr is statsGet for goroutines other than the test's, which
// must not call t.Fatal.
func statsGetErr(tr http.RoundTripper, u string) error {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// TestSnapshotEvictsLeastRecentlyUsed: a scope used on every other request,
// between requests to 15,000 new scopes, survives every eviction and keeps
// its full count, while Snapshot stays at 10,000 scopes or fewer.
func TestSnapshotEvictsLeastRecentlyUsed(t *testing.T) {
	tr := newRig(t, &script{steps: []step{{status: 200}}}, policy.Policy{MaxAttempts: 1})
	const hot, rounds = "hot.example", 15_000
	for i := range rounds {
		statsGet(t, tr, hot)
		statsGet(t, tr, fmt.Sprintf("h%d.example", i))
	}
	stats := tr.byScope()
	if len(stats) > snapshotMaxScopes {
		t.Errorf("len(Snapshot()) after %d scopes = %d; want <= %d", rounds+1, len(stats), snapshotMaxScopes)
	}
	if got := stats[hot].Attempts; got != rounds {
		t.Errorf("Snapshot() Attempts of %s, used every other request = %d; want %d", hot, got, rounds)
	}
}

// TestSnapshotEvictsSixteenthUnusedLongest: once 10,000 scopes are stored, a
// new one evicts the 625 scopes unused longest, and no other.
func TestSnapshotEvictsSixteenthUnusedLongest(t *testing.T) {
	tr := newRig(t, &script{steps: []step{{status: 200}}}, policy.Policy{MaxAttempts: 1})
	host := func(i int) string { return fmt.Sprintf("h%d.example", i) }
	for i := range snapshotMaxScopes {
		statsGet(t, tr, host(i))
	}
	statsGet(t, tr, host(0)) // h0 was added first but is now the most recently used
	statsGet(t, tr, "new.example")

	stats := tr.byScope()
	const evicted = snapshotMaxScopes / 16
	if want := snapshotMaxScopes - evicted + 1; len(stats) != want {
		t.Errorf("len(Snapshot()) after %d scopes = %d; want %d", snapshotMaxScopes+1, len(stats), want)
	}
	if got := stats[host(0)].Attempts; got != 2 {
		t.Errorf("Snapshot() Attempts of %s = %d; want 2", host(0), got)
	}
	if got := stats["new.example"].Attempts; got != 1 {
		t.Errorf("Snapshot() Attempts of new.example = %d; want 1", got)
	}
	var wrong []string // scopes kept that should be evicted, or the reverse
	for i := 1; i < snapshotMaxScopes; i++ {
		if _, kept := stats[host(i)]; kept != (i > evicted) {
			wrong = append(wrong, host(i))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("Snapshot() kept or evicted the wrong %d of h1 to h%d (first %s); want h1 to h%d, the unused longest, evicted and the rest kept",
			len(wrong), snapshotMaxScopes-1, wrong[0], evicted)
	}
}

// TestSnapshotStaysBoundedUnderConcurrentScopes: goroutines adding new
// scopes at once, each also using one hot scope, leave Snapshot at 10,000
// scopes or fewer with the hot scope's every attempt counted.
func TestSnapshotStaysBoundedUnderConcurrentScopes(t *testing.T) {
	tr := newRig(t, &script{steps: []step{{status: 200}}}, policy.Policy{MaxAttempts: 1})
	const hot, workers, each = "hot.example", 8, 2_500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for _, u := range []string{"http://" + hot + "/", fmt.Sprintf("http://w%d-%d.example/", w, i)} {
					if err := statsGetErr(tr, u); err != nil {
						t.Errorf("RoundTrip(%s) in worker %d: %v", u, w, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	stats := tr.byScope()
	if len(stats) > snapshotMaxScopes {
		t.Errorf("len(Snapshot()) after %d scopes from %d goroutines = %d; want <= %d", workers*each+1, workers, len(stats), snapshotMaxScopes)
	}
	if got, want := stats[hot].Attempts, uint64(workers*each); got != want {
		t.Errorf("Snapshot() Attempts of %s, used every other request = %d; want %d", hot, got, want)
	}
}

// TestSnapshotFallbacksCountTheBudget: ScopeStats.Fallbacks adds those of
// Policy.Budget to those of the quota and the limiters, as a budget kept
// in a shared store falls back like them.
func TestSnapshotFallbacksCountTheBudget(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr := newRig(t, s, policy.Policy{Budget: &loggedQuota{}, RateLimit: &movingLimiter{}})
	statsGet(t, tr, "api.example")
	stats := tr.byScope()
	// The default quota is in-process: no fallbacks.
	if got := stats["api.example"].Fallbacks; got != 7+5 {
		t.Errorf("Snapshot() Fallbacks = %d; want 12 (the budget's 7 and the fixed rate's 5)", got)
	}
}

func TestSnapshotCountsPerScope(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 429}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	s.steps = []step{{status: 503}}
	tr2 := newRig(t, s, policy.Policy{MaxAttempts: 2, Quota: &quota.Bucket{Capacity: 4}})
	resp, _ = tr2.RoundTrip(newReq(t, "GET", "http://b.example:8080/", ""))
	resp.Body.Close()

	want := []retrytransport.ScopeStats{{Scope: "api.example.com", Attempts: 3, Retries: 2, Throttles: 1, Quota: 495}}
	if diff := cmp.Diff(want, tr.Snapshot()); diff != "" {
		t.Errorf("Snapshot() mismatch (-want +got):\n%s", diff)
	}
	want = []retrytransport.ScopeStats{{Scope: "b.example:8080", Attempts: 1, QuotaRefusals: 1, Quota: 4}}
	if diff := cmp.Diff(want, tr2.Snapshot()); diff != "" {
		t.Errorf("Snapshot() with a refusing quota mismatch (-want +got):\n%s", diff)
	}
}

// TestSnapshotCustomScope: Snapshot tells a scope of the policy's Scope
// function from a host.
func TestSnapshotCustomScope(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tenant := policy.Standard()
	tenant.Scope = func(*http.Request) string { return "tenant-7" }
	tr := newRig(t, s, policy.Standard(), withOptions(retrytransport.WithHostPolicy("tenant.example.com", tenant)))
	for _, u := range []string{"http://api.example.com/", "http://tenant.example.com/"} {
		resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := map[string]bool{}
	for _, st := range tr.Snapshot() {
		got[st.Scope] = st.Custom
	}
	if diff := cmp.Diff(map[string]bool{"api.example.com": false, "tenant-7": true}, got); diff != "" {
		t.Errorf("Custom by scope (-want +got):\n%s", diff)
	}
}

// answeringQuota is a retry quota that gives every Acquire the same
// answer: it pays or refuses, and asks for wait.
type answeringQuota struct {
	pays bool
	wait time.Duration
}

func (q answeringQuota) Acquire(string, classify.Kind) (int, time.Duration, bool) {
	if !q.pays {
		return 0, 0, false
	}
	return 1, q.wait, true
}
func (answeringQuota) Refund(string, int)   {}
func (answeringQuota) Success(string)       {}
func (answeringQuota) Level(string) float64 { return 0 }

// refusals are a scope's counts of refused retries.
type refusals struct{ Quota, Budget uint64 }

// TestSnapshotCountsEachRefusalUnderItsOwnNameAndScope: a retry the retry
// quota refuses counts as a QuotaRefusal in the scope the retry would have
// gone to, whose bucket pays; one the retry budget refuses counts as a
// BudgetRefusal in the request's own scope, where the budget is kept, and
// never as a QuotaRefusal, with a quota or without. A quota or budget
// whose wait is too long to hold refuses too, counted under the one whose
// wait is the longer, and the request ends with its reason. Here every
// retry fails over to b.example.com, a scope of its own.
func TestSnapshotCountsEachRefusalUnderItsOwnNameAndScope(t *testing.T) {
	const home, alt = "api.example.com", "b.example.com"
	pays, refuses := answeringQuota{pays: true}, answeringQuota{}
	for _, tt := range []struct {
		name          string
		quota, budget quota.Quota // nil: quota.None
		stop          error
		want          map[string]refusals
	}{
		{"QuotaRefuses", refuses, nil, quota.ErrExceeded, map[string]refusals{alt: {Quota: 1}}},
		{"BudgetRefusesWithoutAQuota", nil, refuses, quota.ErrOverBudget, map[string]refusals{home: {Budget: 1}}},
		{"BudgetRefusesBesideTheBucket", &quota.Bucket{}, refuses, quota.ErrOverBudget, map[string]refusals{home: {Budget: 1}}},
		{"QuotaWaitTooLong", answeringQuota{pays: true, wait: time.Hour}, pays, quota.ErrExceeded, map[string]refusals{alt: {Quota: 1}}},
		{"BudgetWaitTooLong", pays, answeringQuota{pays: true, wait: time.Hour}, quota.ErrOverBudget, map[string]refusals{home: {Budget: 1}}},
		{"BudgetWaitsLonger", answeringQuota{pays: true, wait: time.Hour}, answeringQuota{pays: true, wait: 2 * time.Hour}, quota.ErrOverBudget, map[string]refusals{home: {Budget: 1}}},
		{"EqualWaitsAreTheQuotas", answeringQuota{pays: true, wait: time.Hour}, answeringQuota{pays: true, wait: time.Hour}, quota.ErrExceeded, map[string]refusals{alt: {Quota: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Policy{MaxAttempts: 2, Quota: quota.None, Budget: quota.None,
				Failover: &policy.Failover{Endpoints: []string{alt}}}
			if tt.quota != nil {
				p.Quota = tt.quota
			}
			if tt.budget != nil {
				p.Budget = tt.budget
			}
			s := &script{steps: []step{{status: 503}}}
			tr := newRig(t, s, p, recordEvents())
			tr.get(t, url)
			if n := s.count(); n != 1 {
				t.Errorf("attempts = %d; want 1, the retry refused", n)
			}
			if stop := tr.stop(); !errors.Is(stop, tt.stop) {
				t.Errorf("final Event Stop = %v; want %v", stop, tt.stop)
			}
			got := make(map[string]refusals)
			for _, st := range tr.Snapshot() {
				if st.QuotaRefusals != 0 || st.BudgetRefusals != 0 {
					got[st.Scope] = refusals{Quota: st.QuotaRefusals, Budget: st.BudgetRefusals}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Snapshot() refusals by scope mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
