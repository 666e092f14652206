package redisretry_test

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// publishedSim is a discrete-event simulation of replicas that share a
// quota their server publishes, against a real Redis: closed-loop
// workers, each replica with its own Store and Adaptive on one Redis,
// against a server that admits quota requests per fixed window (the
// windows start with the run) and says on every answer what is left of
// the window and the seconds to its reset, rounded up as servers do. A
// 429 waits that reset, as the transport does. Time is the simulation's,
// passed to the scripts.
type publishedSim struct {
	replicas, workers int
	quota             int64
	window            time.Duration
	rtt               time.Duration // the server counts a request when it is sent and answers an rtt later
	duration          time.Duration
}

// publishedResult is what a simulation counted, per window.
type publishedResult struct {
	admitted  [][]int64 // per window, per replica
	throttled []int64
}

// publishedAnswer is what the server said to a worker's attempt.
type publishedAnswer struct {
	ok    bool
	left  int64
	reset time.Duration // as published: whole seconds, rounded up
}

// run runs the simulation on the Adaptives as, all on clock, which it
// advances.
func (cfg publishedSim) run(t *testing.T, as []*redisretry.Adaptive, clock *faketime.Clock) publishedResult {
	t.Helper()
	origin := clock.Now()
	windows := int(cfg.duration / cfg.window)
	res := publishedResult{admitted: make([][]int64, windows), throttled: make([]int64, windows)}
	for k := range res.admitted {
		res.admitted[k] = make([]int64, cfg.replicas)
	}
	win, count := -1, int64(0)
	admit := func(now time.Duration, replica int) publishedAnswer {
		k := int(now / cfg.window)
		if k != win {
			win, count = k, 0
		}
		ok := count < cfg.quota
		if ok {
			count++
			res.admitted[k][replica]++
		} else {
			res.throttled[k]++
		}
		reset := time.Duration(k+1)*cfg.window - now
		return publishedAnswer{ok, cfg.quota - count, (reset + time.Second - 1).Truncate(time.Second)}
	}

	workers := make([]simWorker, cfg.replicas*cfg.workers)
	answers := make([]publishedAnswer, len(workers))
	var q simQueue
	var seq uint64
	schedule := func(w int, at time.Duration) {
		seq++
		heap.Push(&q, simEvent{at: at, worker: w, seq: seq})
	}
	for i := range workers {
		workers[i] = simWorker{replica: i / cfg.workers}
		schedule(i, time.Duration(i)*time.Millisecond) // replicas start one after another
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		if e.at >= time.Duration(windows)*cfg.window {
			break
		}
		clock.Advance(origin.Add(e.at).Sub(clock.Now()))
		w := &workers[e.worker]
		a := as[w.replica]
		switch w.state {
		case simReserve:
			r, wait, ok := a.Reserve(scope)
			if !ok {
				t.Fatal("Reserve refused without FailFast or MaxWait")
			}
			w.reserved, w.state = r, simSend
			schedule(e.worker, e.at+wait)
		case simSend:
			if d := w.reserved.Delay(); d > 0 {
				schedule(e.worker, e.at+d)
				continue
			}
			answers[e.worker] = admit(e.at, w.replica)
			w.state = simAnswer
			schedule(e.worker, e.at+cfg.rtt)
		case simAnswer:
			ans := answers[e.worker]
			k, next := classify.Success, e.at
			if !ans.ok {
				k, next = classify.Throttle, next+ans.reset
			}
			a.RecordQuota(scope, k, ans.left, ans.reset)
			w.state = simReserve
			schedule(e.worker, next)
		}
	}
	return res
}

// TestAdaptivePublishedSharedByReplicas runs two replicas of two workers
// each against a server that publishes a quota of 100 requests per 10 s:
// they pace by one pacing for both, kept in Redis, so that after the first
// window neither gets a 429, together they spend nearly every window, and
// in equal shares; and both see the fleet's rate.
func TestAdaptivePublishedSharedByReplicas(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	as := replicas(t, srv, 2, clock, nil)
	cfg := publishedSim{replicas: 2, workers: 2, quota: 100, window: 10 * time.Second, rtt: 2 * time.Millisecond, duration: 30 * time.Second}
	res := cfg.run(t, as, clock)
	for k := 1; k < len(res.admitted); k++ {
		a := res.admitted[k]
		if total := a[0] + a[1]; res.throttled[k] != 0 || total < 95 || total > cfg.quota || abs(a[0]-a[1]) > 4 {
			t.Errorf("window %d of 2 replicas × 2 workers, quota 100 per 10 s: admitted %v, %d 429s; want none, 95 to 100 in all, shares within 4",
				k, a, res.throttled[k])
		}
	}
	// Mid-window, the pacing that both replicas read is the fleet's:
	// what is left over the time to the reset, not a share of it.
	st0, st1 := as[0].State(scope), as[1].State(scope)
	if st0.QuotaRate == 0 || math.Abs(st0.QuotaRate-st1.QuotaRate) > 0.5 || st0.QuotaRate < 8 || st0.QuotaRate > 12 {
		t.Errorf("QuotaRate of the 2 replicas at the run's end = %v, %v; want one rate near the fleet's 10 per second", st0.QuotaRate, st1.QuotaRate)
	}
	if ks := keys(t, adm, as[0].Store.Prefix+"*:published"); len(ks) != 1 {
		t.Errorf("published keys = %q; want one, the scope's", ks)
	}
	t.Logf("admitted per window and replica %v, 429s per window %v", res.admitted, res.throttled)
}

func abs(x int64) int64 { return max(x, -x) }

// recordAndReserve records on a, as of the clock, a success whose answer
// publishes a quota, and reports the quota to Redis with a Reserve, whose
// wait it returns.
func recordAndReserve(t *testing.T, a *redisretry.Adaptive, remaining int64, reset time.Duration) time.Duration {
	t.Helper()
	a.RecordQuota(scope, classify.Success, remaining, reset)
	_, wait, ok := a.Reserve(scope)
	if !ok {
		t.Fatal("Reserve refused without FailFast or MaxWait")
	}
	return wait
}

// TestAdaptivePublishedStaleAnswers checks the rules for answers that
// come out of order: a reset more than a second earlier than the known
// one, while that one is ahead, is of a window that has ended and is
// ignored; within a second, with no more left, the earlier reset is kept;
// more left, or a reset further off, is a new window.
func TestAdaptivePublishedStaleAnswers(t *testing.T) {
	srv := startRedis(t)
	for _, tt := range []struct {
		name        string
		remaining   int64
		reset       time.Duration // from the answer, a second after the first (which resets at 10 s)
		wantLeft    int64
		wantResetAt time.Duration // from the first answer
		ignored     bool          // the rate is still the first answer's
	}{
		{"endedWindow", 50, 4 * time.Second, 100, 10 * time.Second, true},
		{"sameWindowEarlierReset", 90, 8500 * time.Millisecond, 90, 9500 * time.Millisecond, false},
		{"sameWindowLaterReset", 90, 9600 * time.Millisecond, 90, 10 * time.Second, false},
		{"moreLeftIsNewWindow", 120, 9600 * time.Millisecond, 120, 10600 * time.Millisecond, false},
		{"resetFurtherOffIsNewWindow", 80, 12 * time.Second, 80, 13 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := faketime.New()
			a := replicas(t, srv, 1, clock, nil)[0]
			start := clock.Now()
			recordAndReserve(t, a, 100, 10*time.Second)
			clock.Advance(time.Second)
			recordAndReserve(t, a, tt.remaining, tt.reset)
			st := a.State(scope)
			wantReset := start.Add(tt.wantResetAt)
			wantRate := float64(tt.wantLeft-1) / wantReset.Sub(clock.Now()).Seconds()
			if tt.ignored {
				wantRate = 99.0 / 10
			}
			if st.QuotaRemaining != tt.wantLeft || !st.QuotaReset.Equal(wantReset) || math.Abs(st.QuotaRate-wantRate) > 1e-9 {
				t.Errorf("State after quotas (100, 10s), then 1 s later (%d, %v) = %d left, reset at %v, rate %v; want %d, %v, %v",
					tt.remaining, tt.reset, st.QuotaRemaining, st.QuotaReset.Sub(start), st.QuotaRate, tt.wantLeft, tt.wantResetAt, wantRate)
			}
		})
	}
}

// TestAdaptivePublishedNothingPacedAfterReset checks that a published
// quota paces until its reset, then nothing is paced until an answer
// publishes the next window's quota.
func TestAdaptivePublishedNothingPacedAfterReset(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, nil)[0]
	// 11 left, 1 s: 10 per second for the fleet (one request is kept),
	// and a first allowance of one place.
	waits := []time.Duration{recordAndReserve(t, a, 11, time.Second)}
	for range 4 {
		_, wait, _ := a.Reserve(scope)
		waits = append(waits, wait)
	}
	if want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Fatalf("waits of 5 Reserve calls with 11 left for 1 s = %v; want %v", waits, want)
	}
	clock.Advance(time.Second) // the reset
	for i := range 20 {
		if _, wait, ok := a.Reserve(scope); wait != 0 || !ok {
			t.Fatalf("Reserve %d at the reset, no new quota = %v, %t; want 0, true", i, wait, ok)
		}
	}
	if st := a.State(scope); st.QuotaRate != 0 || !st.QuotaReset.IsZero() {
		t.Errorf("State at the reset, no new quota = %+v; want no published quota", st)
	}
	// The next window's first answer paces again, from a full allowance.
	waits = []time.Duration{recordAndReserve(t, a, 11, time.Second)}
	_, wait, _ := a.Reserve(scope)
	if waits = append(waits, wait); !slices.Equal(waits, []time.Duration{0, 100 * time.Millisecond}) {
		t.Errorf("waits of 2 Reserve calls in the next window = %v; want [0 100ms]", waits)
	}
}

// TestAdaptivePublishedFallsBackToLocal checks that when Redis does not
// answer, Local paces by the published quota: RecordQuota feeds it too.
func TestAdaptivePublishedFallsBackToLocal(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t, nil)
	srv.Kill()
	clock := faketime.New()
	a := (&redisretry.Store{Client: c, Prefix: uniquePrefix(t), Timeout: 20 * time.Millisecond, Now: clock.Now}).Adaptive(nil)
	a.RecordQuota(scope, classify.Success, 11, time.Second)
	var waits []time.Duration
	for range 2 {
		_, wait, ok := a.Reserve(scope)
		if !ok {
			t.Fatal("Reserve refused without FailFast or MaxWait")
		}
		waits = append(waits, wait)
	}
	// ratelimit.Adaptive alone: (11 - 0.5) per second, a first allowance
	// of 1.05 places.
	if want := time.Duration(math.Round(0.95 / 10.5 * float64(time.Second))); waits[0] != 0 || waits[1] < want-time.Microsecond || waits[1] > want+time.Microsecond {
		t.Errorf("waits of 2 Reserve calls with Redis down, 11 left for 1 s = %v; want [0 %v], Local's pace", waits, want)
	}
	if got := a.Fallbacks(scope); got != 2 {
		t.Errorf("Fallbacks = %d; want 2", got)
	}
}

// TestAdaptivePublishedReferenceRecordsNothing checks that with Local in
// reference mode, the SDKs' algorithm, a published quota paces nothing
// and is not written to Redis, as in ratelimit.
func TestAdaptivePublishedReferenceRecordsNothing(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Reference: true} })[0]
	for i := range 5 {
		if wait := recordAndReserve(t, a, 0, 5*time.Second); wait != 0 {
			t.Fatalf("Reserve %d in reference mode after a quota of 0 left = %v; want 0", i, wait)
		}
	}
	if ks := keys(t, adm, a.Store.Prefix+"*:published"); len(ks) != 0 {
		t.Errorf("published keys in reference mode = %q; want none", ks)
	}
	if st := a.Local.StateAt(clock.Now(), scope); st.QuotaRate != 0 || !st.QuotaReset.IsZero() {
		t.Errorf("Local's State in reference mode = %+v; want no published quota", st)
	}
}

// TestAdaptivePublishedRoundTrips checks that RecordQuota of a success
// costs no round trip: the quotas go to Redis with the next Reserve, one
// round trip per attempt while the quota paces the scope.
func TestAdaptivePublishedRoundTrips(t *testing.T) {
	a, adm, clock := pacedReplica(t, 1000, 100*time.Second)
	for i := range 100 {
		r, _, _ := a.Reserve(scope)
		r.Delay()
		a.RecordQuota(scope, classify.Success, int64(998-i), 100*time.Second-time.Duration(i+1)*20*time.Millisecond)
		clock.Advance(20 * time.Millisecond)
	}
	if got, want := scriptCalls(t, adm), int64(100); got != want {
		t.Errorf("100 attempts, each answer publishing the quota, made %d script calls; want %d", got, want)
	}
	if got := a.State(scope).QuotaRemaining; got != 900 {
		t.Errorf("QuotaRemaining after 100 answers = %d; want 900, the last but one's (the last goes with the next call)", got)
	}
}

// TestAdaptivePublishedThrottleCarriesQuota checks that the quota a
// throttled answer publishes goes to Redis with the throttle's own round
// trip, not with a later call: two script calls for a Reserve and its
// throttle, after which the fleet's pacing has the quota.
func TestAdaptivePublishedThrottleCarriesQuota(t *testing.T) {
	a, adm, _ := pacedReplica(t, 1000, 100*time.Second)
	r, _, _ := a.Reserve(scope)
	r.Delay()
	a.RecordQuota(scope, classify.Throttle, 500, 99*time.Second)
	if got, want := scriptCalls(t, adm), int64(2); got != want {
		t.Errorf("a Reserve, then a throttle whose answer publishes the quota, made %d script calls; want %d", got, want)
	}
	if st := a.State(scope); st.QuotaRemaining != 500 || !st.Enabled {
		t.Errorf("State after a throttle with 500 left = %d left, enabled %t; want 500, true: the throttle's call reported the quota", st.QuotaRemaining, st.Enabled)
	}
}

// TestAdaptivePublishedKeys checks the published quota's key and its TTL.
func TestAdaptivePublishedKeys(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	a := (&redisretry.Store{Client: srv.client(t, nil), Prefix: "p:", Timeout: 5 * time.Second, TTL: time.Minute}).Adaptive(nil)
	recordAndReserve(t, a, 100, 10*time.Second)
	ks := keys(t, adm, "p:*")
	slices.Sort(ks)
	if want := []string{"p:{" + scope + "}:adaptive", "p:{" + scope + "}:published"}; !slices.Equal(ks, want) {
		t.Errorf("keys after RecordQuota and Reserve = %q; want %q", ks, want)
	}
	assertTTL(t, adm, "p:{"+scope+"}:published", time.Minute)
}

// TestAdaptivePublishedCancelGivesBackPlace checks that cancelling a
// reservation that waits in the published quota's queue gives its place
// back: the next reservation waits no longer than the one cancelled.
func TestAdaptivePublishedCancelGivesBackPlace(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, nil)[0]
	recordAndReserve(t, a, 11, time.Second) // 10 per second, the first place free
	r2, w2, _ := a.Reserve(scope)
	_, w3, _ := a.Reserve(scope)
	r2.Cancel()
	if _, w4, _ := a.Reserve(scope); w4 != w3 || w3 != 2*w2 {
		t.Errorf("waits %v, %v, then %v after the first was cancelled; want the last equal to the second (a place given back)", w2, w3, w4)
	}
}

// pacedReplica starts a Redis for t and returns a replica on it that has
// reported a published quota, remaining until reset from the clock's now,
// with a Reserve (recordAndReserve, which loads the script); the Redis's
// admin client, whose stats are then reset; and the clock.
func pacedReplica(t *testing.T, remaining int64, reset time.Duration) (*redisretry.Adaptive, *redis.Client, *faketime.Clock) {
	t.Helper()
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, nil)[0]
	recordAndReserve(t, a, remaining, reset)
	resetStats(t, adm)
	return a, adm, clock
}

// TestAdaptivePublishedPacesUntilAnswersReset checks that a replica
// believes an answer that the published quota paces the scope until the
// reset it gives: each Reserve asks Redis until then, and from the reset
// on, within Refresh of that answer, none asks and none waits.
func TestAdaptivePublishedPacesUntilAnswersReset(t *testing.T) {
	a, adm, clock := pacedReplica(t, 11, time.Second) // 10 per second, the first place free
	clock.Advance(950 * time.Millisecond)
	var waits []time.Duration
	for range 3 {
		_, wait, _ := a.Reserve(scope)
		waits = append(waits, wait)
	}
	// One place credited ahead at most: the first goes at once, the
	// others wait their places, but never past the reset.
	if want := []time.Duration{0, 50 * time.Millisecond, 50 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Errorf("waits of 3 Reserve calls 950 ms into a window of 11 for 1 s = %v; want %v", waits, want)
	}
	before := scriptCalls(t, adm)
	if before != 3 {
		t.Errorf("3 Reserve calls before the reset made %d script calls; want 3", before)
	}
	clock.Advance(50 * time.Millisecond) // the reset, within Refresh of the last answer
	for i := range 5 {
		if r, wait, ok := a.Reserve(scope); wait != 0 || !ok || r != (ratelimit.Reservation{}) {
			t.Fatalf("Reserve %d at the reset the last answer gave = %v, %v, %t; want the zero Reservation, 0, true", i, r, wait, ok)
		}
	}
	if got := scriptCalls(t, adm) - before; got != 0 {
		t.Errorf("5 Reserve calls at the reset made %d script calls; want none", got)
	}
}

// TestAdaptivePublishedReserveWritesChangedFields checks that a Reserve
// that the published quota paces writes to its key only the fields it
// changes, the credit and the latest place, while the first quota writes
// them all.
func TestAdaptivePublishedReserveWritesChangedFields(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, nil)[0]
	key := a.Store.Prefix + "{" + scope + "}:published"
	m := startMonitor(t, srv)
	recordAndReserve(t, a, 11, time.Second)
	all := []string{"on", "rem", "reset", "rate", "cap", "due", "ref", "last"}
	if got := hsetFields(m.until(t, adm, "quota"), key); !slices.Equal(got, all) {
		t.Errorf("fields the first quota's Reserve wrote = %q; want %q", got, all)
	}
	clock.Advance(10 * time.Millisecond)
	a.Reserve(scope)
	if got, want := hsetFields(m.until(t, adm, "paced"), key), []string{"due", "ref", "last"}; !slices.Equal(got, want) {
		t.Errorf("fields a paced Reserve wrote = %q; want %q", got, want)
	}
	a.Reserve(scope) // at the same instant: no credit
	if got, want := hsetFields(m.until(t, adm, "same instant"), key), []string{"last"}; !slices.Equal(got, want) {
		t.Errorf("fields a paced Reserve at the instant of the last wrote = %q; want %q", got, want)
	}
}

// TestAdaptivePublishedBurstSharesCall checks that while a published
// quota paces a scope, the Reserve calls of a burst that come while
// another call is in flight take their places together, in one more round
// trip, each its own place.
func TestAdaptivePublishedBurstSharesCall(t *testing.T) {
	const n = 10
	srv := startRedis(t)
	a, h := hookedReplica(t, srv, faketime.New())
	a.Reserve("another scope")                              // loads the script, which the burst then finds
	a.RecordQuota(scope, classify.Success, 11, time.Second) // 10 per second, the first place free
	var started atomic.Int64
	h.hold = untilStarted(&started, n, nil)
	res := burst(a, h, n, &started)
	var waits []time.Duration
	for _, r := range res {
		waits = append(waits, r.wait)
	}
	slices.Sort(waits)
	for i, w := range waits {
		if w != time.Duration(i)*100*time.Millisecond {
			t.Fatalf("sorted waits of a burst of %d Reserve calls at 10 per second = %v; want steps of 100ms from 0", n, waits)
		}
	}
	if got := h.calls.Load(); got != 2 {
		t.Errorf("a burst of %d Reserve calls made %d script calls; want 2 (the first, then the rest together)", n, got)
	}
}

// TestTransportPacesByPublishedQuotaOnRedis checks that the transport
// tells a shared Adaptive the quota its server publishes: once two
// replicas have sent, each sees the fleet's pacing.
func TestTransportPacesByPublishedQuotaOnRedis(t *testing.T) {
	srv := startRedis(t)
	var left atomic.Int64
	left.Store(6000)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=60`, left.Add(-1)))
	}))
	defer api.Close()
	ts := fleet(t, srv, 2, func(s *redisretry.Store) policy.Policy {
		p := policy.Adaptive()
		p.Limiter = s.Adaptive(nil)
		return p
	})
	for i := range 4 {
		get(t, ts[i%2], api.URL)
	}
	for i, tr := range ts {
		snap := tr.Snapshot()
		// As of each replica's last call, which reported its first answer
		// (5999 or 5998 left); about 100 per second over 60 s.
		if len(snap) != 1 || snap[0].Adaptive.QuotaRemaining < 5998 || snap[0].Adaptive.QuotaRemaining > 5999 ||
			snap[0].Adaptive.QuotaRate < 95 || snap[0].Adaptive.QuotaRate > 101 || snap[0].Fallbacks != 0 {
			t.Errorf("replica %d: Snapshot = %+v; want the published quota, 5998 or 5999 left at 100 per second, no fallback", i, snap)
		}
	}
	// The replicas reported to one pacing in Redis, not one each.
	adm := srv.client(t, nil)
	ks := keys(t, adm, "*:published")
	if len(ks) != 1 {
		t.Fatalf("published keys = %q; want one, shared by the replicas", ks)
	}
	if rem, err := adm.HGet(context.Background(), ks[0], "rem").Int64(); err != nil || rem < 5998 || rem > 5999 {
		t.Errorf("HGET %s rem = %d, %v; want the freshest count reported, 5998 or 5999", ks[0], rem, err)
	}
}
