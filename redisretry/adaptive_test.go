package redisretry_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

const scope = "api.example.com"

// replicas returns n Adaptives on srv, each with its own Store and client
// as separate processes have, sharing prefix and clock.
func replicas(t *testing.T, srv *redisServer, n int, clock *faketime.Clock, local func() *ratelimit.Adaptive) []*redisretry.Adaptive {
	t.Helper()
	prefix := uniquePrefix(t)
	as := make([]*redisretry.Adaptive, n)
	for i := range as {
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 5 * time.Second, Now: clock.Now}
		var l *ratelimit.Adaptive
		if local != nil {
			l = local()
			l.Now = clock.Now
		}
		as[i] = s.Adaptive(l)
	}
	return as
}

// warmUp has each of as send and receive at per requests per second each
// for d of the clock, none of them throttled.
func warmUp(as []*redisretry.Adaptive, clock *faketime.Clock, per float64, d time.Duration) {
	step := time.Duration(float64(time.Second) / per)
	for range int(d / step) {
		for _, a := range as {
			a.Reserve(scope)
			a.Record(scope, classify.Success)
		}
		clock.Advance(step)
	}
}

// TestAdaptiveUnlimitedUntilThrottle checks that before its first throttle
// a scope is not limited and a replica asks Redis once per Refresh, not
// per attempt, reporting its sends for the measured rate.
func TestAdaptiveUnlimitedUntilThrottle(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	as := replicas(t, srv, 2, clock, nil)
	resetStats(t, adm)
	for range 1000 { // 1 s at 1000 req/s for each
		for _, a := range as {
			r, wait, ok := a.Reserve(scope)
			if wait != 0 || !ok || r != (ratelimit.Reservation{}) {
				t.Fatalf("Reserve before any throttle = %v, %v, %t; want the zero Reservation, 0, true", r, wait, ok)
			}
			a.Record(scope, classify.Success)
		}
		clock.Advance(time.Millisecond)
	}
	// Each replica asks every 100 ms: 10 each; the first call loads the
	// script (EVALSHA fails, EVAL follows).
	if got, want := scriptCalls(t, adm), int64(2*10+1); got != want {
		t.Errorf("2 replicas × 1000 unlimited attempts over 1 s made %d script calls; want %d", got, want)
	}
	as[0].Reserve(scope) // reports the last 100 ms
	st := as[0].State(scope)
	if st.Enabled || st.MeasuredRate < 1800 || st.MeasuredRate > 2000 {
		t.Errorf("State before any throttle = %+v; want not enabled, a measured rate near the fleet's 2000 req/s", st)
	}
}

// TestAdaptiveThrottleSlowsOtherReplicas checks that a throttle recorded by
// one replica limits the others: once they ask again, all of them take
// their slots from one queue, spaced by the fleet's fill rate.
func TestAdaptiveThrottleSlowsOtherReplicas(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	as := replicas(t, srv, 3, clock, nil)
	warmUp(as, clock, 100, time.Second) // the fleet sends 300 req/s
	as[0].Record(scope, classify.Throttle)
	st := as[0].State(scope)
	// The measured rate is the fleet's 300 req/s; Beta is DefaultBeta.
	if !st.Enabled || math.Abs(st.LastMax-300) > 30 || math.Abs(st.FillRate-redisretry.DefaultBeta*st.LastMax) > 1e-6 {
		t.Fatalf("State after a throttle = %+v; want enabled, LastMax near 300, FillRate %v·LastMax", st, redisretry.DefaultBeta)
	}
	// The others learn of it within Refresh.
	clock.Advance(redisretry.DefaultAdaptiveRefresh)
	var waits []time.Duration
	for range 10 {
		for _, a := range as {
			_, wait, ok := a.Reserve(scope)
			if !ok {
				t.Fatal("Reserve refused without FailFast or MaxWait")
			}
			waits = append(waits, wait)
		}
	}
	fill := as[1].State(scope).FillRate // as of the last answer
	interval := time.Duration(float64(time.Second) / fill)
	// A tenth of a second's burst goes at once, then one slot per interval
	// whichever replica takes it. The queue started empty at the throttle,
	// 100 ms ago, so the burst is there.
	burst := int(math.Max(fill*0.1, 1))
	for i := burst + 1; i < len(waits); i++ {
		if d := waits[i] - waits[i-1]; d < interval-time.Microsecond || d > interval+time.Microsecond {
			t.Fatalf("waits of 30 Reserve calls across 3 replicas at one instant = %v; want steps of %v (fill %.1f req/s) after a burst of %d",
				waits, interval, fill, burst)
		}
	}
	if waits[burst+1] == 0 || waits[len(waits)-1] < time.Duration(len(waits)-burst-1)*interval-time.Microsecond {
		t.Errorf("waits = %v; want the fleet's queue to grow past the burst of %d", waits, burst)
	}
}

// TestAdaptiveHoldsThrottlesOfEarlierSends checks that throttles of
// requests sent before a decrease took effect do not decrease the rate
// again, and that a throttle of a request sent after it does.
func TestAdaptiveHoldsThrottlesOfEarlierSends(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	as := replicas(t, srv, 2, clock, nil)
	a, b := as[0], as[1]
	warmUp(as, clock, 100, time.Second)
	for range 3 { // b has three requests in flight
		b.Reserve(scope)
	}
	a.Record(scope, classify.Throttle)
	first := a.State(scope).LastMax

	// b's three requests were sent before b heard of the decrease.
	for i := range 3 {
		b.Record(scope, classify.Throttle)
		if got := b.State(scope).LastMax; got != first {
			t.Fatalf("LastMax after b's throttle %d of a request sent before the decrease = %v; want %v (no second decrease)", i+1, got, first)
		}
	}
	// A request b sends now is paced at the decreased rate: its throttle
	// decreases again.
	clock.Advance(10 * time.Millisecond)
	b.Reserve(scope)
	b.Record(scope, classify.Throttle)
	if got := b.State(scope).LastMax; got >= first {
		t.Errorf("LastMax after a throttle of a request sent after the decrease = %v; want below %v", got, first)
	}
}

// TestAdaptiveReleasedAttemptsEndTheHold checks that an attempt released
// (sent, and ended without an outcome: its caller gave up) counts as ended
// for the hold: once the requests b had in flight at the decrease were
// answered or released, a throttle of a request b sent later decreases
// again, and b has nothing in flight.
func TestAdaptiveReleasedAttemptsEndTheHold(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	as := replicas(t, srv, 2, clock, nil)
	a, b := as[0], as[1]
	warmUp(as, clock, 100, time.Second)
	for range 3 { // b has three requests in flight
		b.Reserve(scope)
	}
	a.Record(scope, classify.Throttle)
	first := a.State(scope).LastMax
	b.Record(scope, classify.Throttle) // sent before the decrease: held
	if got := b.State(scope).LastMax; got != first {
		t.Fatalf("LastMax after b's throttle of a request sent before the decrease = %v; want %v (no second decrease)", got, first)
	}
	b.Release(scope) // b's callers gave up on the other two
	b.Release(scope)
	clock.Advance(10 * time.Millisecond)
	b.Reserve(scope)
	b.Record(scope, classify.Throttle)
	st := b.State(scope)
	if st.LastMax >= first {
		t.Errorf("LastMax after a throttle of a request sent after the decrease, the earlier ones answered or released = %v; want below %v", st.LastMax, first)
	}
	if st.Outstanding != 0 {
		t.Errorf("State.Outstanding = %d once every request of b ended; want 0", st.Outstanding)
	}
}

// TestAdaptiveRoundTrips counts the round trips of a limited scope: one per
// Reserve and per throttle, none per other outcome or Delay.
func TestAdaptiveRoundTrips(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, nil)[0]
	warmUp([]*redisretry.Adaptive{a}, clock, 100, time.Second)
	a.Record(scope, classify.Throttle)
	resetStats(t, adm)
	for range 100 {
		r, _, _ := a.Reserve(scope)
		r.Delay()
		a.Record(scope, classify.Success)
		clock.Advance(20 * time.Millisecond)
	}
	a.Record(scope, classify.Throttle)
	if got, want := scriptCalls(t, adm), int64(100+1); got != want {
		t.Errorf("100 attempts and a throttle on a limited scope made %d script calls; want %d", got, want)
	}
}

// TestAdaptiveDelayCountsDown checks that a reservation is due at the
// instant Reserve computed, without asking Redis again: one that waits in
// the limited scope's queue, and one that waits in the published quota's.
func TestAdaptiveDelayCountsDown(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, a *redisretry.Adaptive) // leaves the next slot 100 ms away
	}{
		// Nothing measured: the least fill rate, 10 req/s, from an empty queue.
		{"limited", func(_ *testing.T, a *redisretry.Adaptive) { a.Record(scope, classify.Throttle) }},
		// 10 per second, the first place free.
		{"paced", func(t *testing.T, a *redisretry.Adaptive) { recordAndReserve(t, a, 11, time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := faketime.New()
			a := replicas(t, srv, 1, clock, func() *ratelimit.Adaptive { return &ratelimit.Adaptive{MinFillRate: 10} })[0]
			tt.prepare(t, a)
			r, wait, _ := a.Reserve(scope)
			if wait != 100*time.Millisecond {
				t.Fatalf("Reserve at 10 per second waits %v; want 100ms", wait)
			}
			resetStats(t, adm)
			clock.Advance(60 * time.Millisecond)
			if got := r.Delay(); got != 40*time.Millisecond {
				t.Errorf("Delay 60 ms later = %v; want 40ms", got)
			}
			clock.Advance(40 * time.Millisecond)
			if got := r.Delay(); got != 0 {
				t.Errorf("Delay when due = %v; want 0", got)
			}
			if n := scriptCalls(t, adm); n != 0 {
				t.Errorf("Delay made %d script calls; want 0", n)
			}
		})
	}
}

// TestAdaptiveCancelGivesBackLatestSlot checks that cancelling the latest
// reservation lets the next one take its slot, and that cancelling an
// earlier one changes nothing.
func TestAdaptiveCancelGivesBackLatestSlot(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	a := replicas(t, srv, 1, clock, func() *ratelimit.Adaptive { return &ratelimit.Adaptive{MinFillRate: 10} })[0]
	a.Record(scope, classify.Throttle)
	r1, w1, _ := a.Reserve(scope)
	r2, w2, _ := a.Reserve(scope)
	r2.Cancel()
	_, w3, _ := a.Reserve(scope)
	if w3 != w2 {
		t.Errorf("Reserve after the latest was cancelled waits %v; want %v, the slot given back", w3, w2)
	}
	r1.Cancel() // not the latest: kept
	_, w4, _ := a.Reserve(scope)
	if want := w3 + 100*time.Millisecond; w4 != want {
		t.Errorf("Reserve after an earlier one was cancelled waits %v; want %v (waits %v, %v, %v)", w4, want, w1, w2, w3)
	}
	// No quota was published: the cancels gave no place back to one.
	if ks := keys(t, srv.client(t, nil), a.Store.Prefix+"*:published"); len(ks) != 0 {
		t.Errorf("published keys after cancels with no quota published = %q; want none", ks)
	}
}

// TestAdaptiveFailFastAndMaxWait checks that a refused reservation takes
// nothing: the next one gets the slot it would have had.
func TestAdaptiveFailFastAndMaxWait(t *testing.T) {
	for _, tt := range []struct {
		name  string
		local *ratelimit.Adaptive
	}{
		{"FailFast", &ratelimit.Adaptive{MinFillRate: 10, FailFast: true}},
		{"MaxWait", &ratelimit.Adaptive{MinFillRate: 10, MaxWait: 50 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startRedis(t)
			clock := faketime.New()
			a := replicas(t, srv, 1, clock, func() *ratelimit.Adaptive { return tt.local })[0]
			a.Record(scope, classify.Throttle)
			clock.Advance(100 * time.Millisecond) // one slot free
			if _, wait, ok := a.Reserve(scope); wait != 0 || !ok {
				t.Fatalf("Reserve with a slot free = %v, %t; want 0, true", wait, ok)
			}
			if _, wait, ok := a.Reserve(scope); wait != 100*time.Millisecond || ok {
				t.Errorf("Reserve that would wait = %v, %t; want 100ms, false", wait, ok)
			}
			clock.Advance(100 * time.Millisecond)
			if _, wait, ok := a.Reserve(scope); wait != 0 || !ok {
				t.Errorf("Reserve when the refused slot is due = %v, %t; want 0, true (nothing was taken)", wait, ok)
			}
		})
	}
}

// TestAdaptiveKeys checks the key layout and its TTL.
func TestAdaptiveKeys(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	a := (&redisretry.Store{Client: srv.client(t, nil), Prefix: "p:", Timeout: 5 * time.Second, TTL: time.Minute}).Adaptive(nil)
	a.Reserve(scope)
	ks := keys(t, adm, "p:*")
	if len(ks) != 1 || ks[0] != "p:{"+scope+"}:adaptive" {
		t.Errorf("keys after Reserve = %q; want [p:{%s}:adaptive]", ks, scope)
	}
	assertTTL(t, adm, "p:{"+scope+"}:adaptive", time.Minute)
}

// assertTTL fails t unless key's time to live is in (0, max].
func assertTTL(t *testing.T, c *redis.Client, key string, max time.Duration) {
	t.Helper()
	ttl, err := c.PTTL(t.Context(), key).Result()
	if err != nil || ttl <= 0 || ttl > max {
		t.Errorf("PTTL %s = %v, %v; want within (0, %v]", key, ttl, err, max)
	}
}

// scriptHook is a go-redis hook on a replica's client. Once armed, it
// numbers the script calls from 1 and runs hold, if set, before each: hold
// may wait, honouring ctx, and fail the call with an error. answered
// reports that the first call has returned.
type scriptHook struct {
	hold     func(ctx context.Context, call int64) error
	armed    atomic.Bool
	calls    atomic.Int64
	answered atomic.Bool
}

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); (name != "evalsha" && name != "eval") || !h.armed.Load() {
			return next(ctx, cmd)
		}
		k := h.calls.Add(1)
		var err error
		if h.hold != nil {
			err = h.hold(ctx, k)
		}
		if err == nil {
			err = next(ctx, cmd)
		} else {
			cmd.SetErr(err)
		}
		if k == 1 {
			h.answered.Store(true)
		}
		return err
	}
}

func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hookedReplica returns an Adaptive on srv whose Store has clock and a
// Timeout of 5 s, and the scriptHook, not armed, on its client.
func hookedReplica(t *testing.T, srv *redisServer, clock *faketime.Clock) (*redisretry.Adaptive, *scriptHook) {
	t.Helper()
	h := &scriptHook{}
	c := srv.client(t, &redis.Options{ContextTimeoutEnabled: true}) // keeps the hook
	c.AddHook(h)
	return (&redisretry.Store{Client: c, Prefix: uniquePrefix(t), Timeout: 5 * time.Second, Now: clock.Now}).Adaptive(nil), h
}

// sleepCtx waits d, or until ctx is done and then returns its error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// burstAfterThrottle returns replica b of a fleet of two on srv, whose
// Stores have timeout, and the hook on b's client, not armed: b's answer
// that the scope is not limited is just past Refresh when a records a
// throttle; with known, b has heard of it since, by a Reserve of its own.
// Local's least fill rate is 10 req/s, the rate in use, so that the queue
// lets out one slot every 100 ms from the throttle on; its MaxWait is
// maxWait.
func burstAfterThrottle(t *testing.T, srv *redisServer, known bool, timeout, maxWait time.Duration) (*redisretry.Adaptive, *scriptHook) {
	t.Helper()
	clock := faketime.New()
	prefix := uniquePrefix(t)
	adaptive := func(c *redis.Client) *redisretry.Adaptive {
		s := &redisretry.Store{Client: c, Prefix: prefix, Timeout: timeout, Now: clock.Now}
		return s.Adaptive(&ratelimit.Adaptive{MinFillRate: 10, MaxWait: maxWait, Now: clock.Now})
	}
	a := adaptive(srv.client(t, nil))
	h := &scriptHook{}
	bc := srv.client(t, &redis.Options{ContextTimeoutEnabled: true}) // keeps the hook
	bc.AddHook(h)
	b := adaptive(bc)
	if _, wait, ok := b.Reserve(scope); wait != 0 || !ok || b.State(scope).Enabled {
		t.Fatalf("b's first Reserve = %v, %t, %+v; want 0, true, not limited", wait, ok, b.State(scope))
	}
	clock.Advance(redisretry.DefaultAdaptiveRefresh) // b's answer is no longer believed
	a.Record(scope, classify.Throttle)
	if known {
		if _, _, ok := b.Reserve(scope); !ok || !b.State(scope).Enabled {
			t.Fatalf("b's Reserve after a's throttle = %t, %+v; want true, limited", ok, b.State(scope))
		}
	}
	return b, h
}

// burstResult is what one Reserve call of a burst returned.
type burstResult struct {
	r     ratelimit.Reservation
	wait  time.Duration
	ok    bool
	early bool          // it returned before the burst's first script call was answered
	took  time.Duration // of the wall clock
}

// burst arms h and makes n Reserve calls of scope on b at once, counting
// each in started as it begins.
func burst(b *redisretry.Adaptive, h *scriptHook, n int, started *atomic.Int64) []burstResult {
	h.armed.Store(true)
	res := make([]burstResult, n)
	var wg sync.WaitGroup
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Add(1)
			start := time.Now()
			r, wait, ok := b.Reserve(scope)
			res[i] = burstResult{r: r, wait: wait, ok: ok, early: !h.answered.Load(), took: time.Since(start)}
		}()
	}
	wg.Wait()
	return res
}

// untilStarted returns a hold for scriptHook that holds the first call
// until n calls have started and 20 ms more, so that they come while it is
// in flight, and fails it with fail if that is set.
func untilStarted(started *atomic.Int64, n int, fail error) func(context.Context, int64) error {
	return func(ctx context.Context, call int64) error {
		if call != 1 {
			return nil
		}
		for started.Load() < int64(n) {
			if err := sleepCtx(ctx, time.Millisecond); err != nil {
				return err
			}
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		return fail
	}
}

// TestAdaptiveBurstWaitsForCallInFlight checks that the Reserve calls of
// a burst that come while another call of the replica asks Redis wait for
// its answer and then take their slots together, in one round trip: right
// after another replica's throttle, when that call asks whether the scope
// is limited, none of the burst goes unpaced meanwhile; and once the
// replica knows that the scope is limited, the burst does not queue up
// one round trip each.
func TestAdaptiveBurstWaitsForCallInFlight(t *testing.T) {
	for _, tt := range []struct {
		name  string
		known bool // b knows that the scope is limited
		first int  // the queue's slots handed out before the burst
	}{
		{"afterThrottleElsewhere", false, 0},
		{"limited", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const n = 60
			srv := startRedis(t)
			b, h := burstAfterThrottle(t, srv, tt.known, 5*time.Second, 0)
			var started atomic.Int64
			h.hold = untilStarted(&started, n, nil)
			res := burst(b, h, n, &started)

			var early, unpaced int
			waits := make([]time.Duration, 0, n)
			for _, r := range res {
				if !r.ok {
					t.Fatal("Reserve refused without FailFast or MaxWait")
				}
				if r.early {
					early++
				}
				if r.wait == 0 {
					unpaced++
				}
				waits = append(waits, r.wait)
			}
			if early != 0 || unpaced != 0 {
				t.Errorf("a burst of %d Reserve calls on b right after a's throttle: %d returned while b's first call was in flight, %d without a wait; want 0 and 0",
					n, early, unpaced)
			}
			if got := h.calls.Load(); got != 2 {
				t.Errorf("a burst of %d Reserve calls on b made %d script calls; want 2 (the first, then the rest together)", n, got)
			}
			// The queue was empty at the throttle, with a burst of 1: each
			// call has its own slot, an interval after the one before.
			slices.Sort(waits)
			interval := time.Duration(float64(time.Second) / b.State(scope).FillRate)
			for i, w := range waits {
				if want := time.Duration(tt.first+i+1) * interval; w < want-time.Microsecond || w > want+time.Microsecond {
					t.Fatalf("sorted waits of the burst = %v; want steps of %v from %v", waits, interval, time.Duration(tt.first+1)*interval)
				}
			}
		})
	}
}

// TestAdaptiveBurstUnlimitedGoesWithoutAsking checks that when the call
// in flight that a burst's Reserve calls wait for answers that the scope
// is neither limited nor paced, they go at once, without a round trip of
// their own, and count as the replica's sends.
func TestAdaptiveBurstUnlimitedGoesWithoutAsking(t *testing.T) {
	const n = 20
	srv := startRedis(t)
	clock := faketime.New()
	b, h := hookedReplica(t, srv, clock)
	if _, wait, ok := b.Reserve(scope); wait != 0 || !ok || b.State(scope).Enabled { // loads the script
		t.Fatalf("first Reserve = %v, %t, %+v; want 0, true, not limited", wait, ok, b.State(scope))
	}
	clock.Advance(redisretry.DefaultAdaptiveRefresh) // the answer is no longer believed
	var started atomic.Int64
	h.hold = untilStarted(&started, n, nil)
	for i, r := range burst(b, h, n, &started) {
		if r.r != (ratelimit.Reservation{}) || r.wait != 0 || !r.ok || r.early {
			t.Errorf("Reserve %d of a burst on a scope that is not limited = %v, %v, %t (early %t); want the zero Reservation, 0, true, after the answer",
				i, r.r, r.wait, r.ok, r.early)
		}
	}
	if got := h.calls.Load(); got != 1 {
		t.Errorf("a burst of %d Reserve calls on a scope that is not limited made %d script calls; want 1 (the first)", n, got)
	}
	if got := b.State(scope).Outstanding; got != n+1 {
		t.Errorf("State.Outstanding after %d Reserve calls = %d; want %d", n+1, got, n+1)
	}
}

// TestAdaptiveBurstFallsBackWhenCallFails checks that the Reserve calls
// that wait for a replica's call to Redis are decided by Local, each
// counted as a fallback, when that call fails.
func TestAdaptiveBurstFallsBackWhenCallFails(t *testing.T) {
	const n = 60
	srv := startRedis(t)
	b, h := burstAfterThrottle(t, srv, false, 5*time.Second, 0)
	var started atomic.Int64
	h.hold = untilStarted(&started, n, errors.New("redisretry test: no answer"))
	for _, r := range burst(b, h, n, &started) {
		if !r.ok {
			t.Fatal("Reserve refused without FailFast or MaxWait")
		}
	}
	if got := b.Fallbacks(scope); got != n {
		t.Errorf("Fallbacks after a burst of %d Reserve calls whose call to Redis failed = %d; want %d (each decided by Local)", n, got, n)
	}
	if got := h.calls.Load(); got != 1 {
		t.Errorf("a burst of %d Reserve calls whose first call to Redis failed made %d script calls; want 1", n, got)
	}
}

// TestAdaptiveBurstWaitsTimeoutInAll checks that a Reserve call that waits
// for another's call to Redis, then makes one with the others that came
// meanwhile, waits for Redis no longer than the Store's Timeout in all:
// that call has what is left of the Timeout since the first of them came.
func TestAdaptiveBurstWaitsTimeoutInAll(t *testing.T) {
	const (
		n       = 10
		timeout = time.Second // long, so that a loaded machine's delays stay well inside each margin
	)
	srv := startRedis(t)
	b, h := burstAfterThrottle(t, srv, true, timeout, 0)
	var started atomic.Int64
	first := untilStarted(&started, n, nil)
	h.hold = func(ctx context.Context, call int64) error {
		if call == 1 { // answered, within its Timeout
			if err := first(ctx, call); err != nil {
				return err
			}
			return sleepCtx(ctx, timeout/2)
		}
		return sleepCtx(ctx, timeout*9/10) // a stall: more than is left
	}
	res := burst(b, h, n, &started)
	if got := b.Fallbacks(scope); got != n-1 {
		t.Errorf("Fallbacks after a burst of %d Reserve calls, the first answered after half the Timeout, the rest together after it stalled = %d; want %d",
			n, got, n-1)
	}
	for i, r := range res {
		if bound := timeout + timeout/4; r.took > bound {
			t.Errorf("Reserve %d of the burst took %v; want at most %v (Timeout %v)", i, r.took, bound, timeout)
		}
	}
}

// TestAdaptiveBurstTakesNothingPastMaxWait checks that the Reserve calls
// of a burst that take their slots together are refused from the first
// whose wait exceeds MaxWait on, taking nothing, and that the last slot
// taken can be given back.
func TestAdaptiveBurstTakesNothingPastMaxWait(t *testing.T) {
	const n = 10
	srv := startRedis(t)
	b, h := burstAfterThrottle(t, srv, false, 5*time.Second, 250*time.Millisecond)
	var started atomic.Int64
	h.hold = untilStarted(&started, n, nil)
	res := burst(b, h, n, &started)
	var taken []time.Duration
	var last ratelimit.Reservation
	for _, r := range res {
		if r.ok {
			taken = append(taken, r.wait)
			if r.wait == 200*time.Millisecond {
				last = r.r
			}
		} else if r.wait <= 250*time.Millisecond {
			t.Errorf("Reserve refused with a wait of %v; want only waits over MaxWait 250ms refused", r.wait)
		}
	}
	slices.Sort(taken)
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(taken, want) {
		t.Fatalf("waits of the %d Reserve calls of a burst taken with MaxWait 250ms at one slot per 100ms = %v; want %v", n, taken, want)
	}
	last.Cancel()
	if _, wait, ok := b.Reserve(scope); wait != 200*time.Millisecond || !ok {
		t.Errorf("Reserve after the burst's last slot was given back = %v, %t; want 200ms, true (nothing taken past it)", wait, ok)
	}
}
