package redisretry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// callBound is how long any call may take: the Store's Timeout, plus
// slack for a loaded machine and the race detector (a call measured 107 ms
// against a Timeout of 50 under both); a call that waited for the client's
// own timeouts, seconds, is still far beyond it.
func callBound(s *redisretry.Store) time.Duration { return s.Timeout + 150*time.Millisecond }

// replica is one process of a fleet in the failure tests: its Store, with
// its own client and log, and the three limiters on it.
type replica struct {
	store *redisretry.Store
	log   *countingHandler
	quota *redisretry.Quota
	adapt *redisretry.Adaptive
	fixed *redisretry.Fixed
}

func newReplica(t *testing.T, srv *redisServer, prefix string, opt *redis.Options) *replica {
	t.Helper()
	r := &replica{log: &countingHandler{}}
	r.store = &redisretry.Store{
		Client:  srv.client(t, opt),
		Prefix:  prefix,
		Timeout: 50 * time.Millisecond,
		Backoff: 100 * time.Millisecond,
		Logger:  slog.New(r.log),
	}
	r.quota = r.store.Quota(nil)
	r.adapt = r.store.Adaptive(nil)
	r.fixed = r.store.Fixed(redis_rate.PerSecond(1000), nil)
	return r
}

func (r *replica) fallbacks() uint64 {
	return r.quota.Fallbacks(scope) + r.adapt.Fallbacks(scope) + r.fixed.Fallbacks(scope)
}

// callStats are the durations of the calls a load made.
type callStats struct {
	longest     atomic.Int64 // ns
	calls, slow atomic.Int64 // slow: longer than half the Timeout
}

// load calls every method of r's limiters in a loop until stop is closed,
// and records their durations in cs.
func (r *replica) load(stop <-chan struct{}, cs *callStats) {
	longest := &cs.longest
	timed := func(f func()) {
		start := time.Now()
		f()
		d := int64(time.Since(start))
		cs.calls.Add(1)
		if d > int64(r.store.Timeout/2) {
			cs.slow.Add(1)
		}
		for {
			old := longest.Load()
			if d <= old || longest.CompareAndSwap(old, d) {
				return
			}
		}
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond): // a request rate, not a spin
		}
		timed(func() {
			if cost, _, ok := r.quota.Acquire(scope, classify.Transient); ok && i%2 == 0 {
				r.quota.Refund(scope, cost)
			}
		})
		timed(func() { r.quota.Success(scope) })
		timed(func() { r.quota.Level(scope) })
		timed(func() {
			res, _, ok := r.adapt.Reserve(scope)
			if ok && i%3 == 0 {
				res.Cancel()
			}
		})
		timed(func() { r.adapt.Record(scope, classify.Success) })
		timed(func() { r.adapt.State(scope) })
		timed(func() { r.fixed.Reserve(scope) })
	}
}

// usesRedis reports whether r's quota decides from Redis again: an
// Acquire on a scope of its own writes that scope's bucket to Redis.
func (r *replica) usesRedis(t *testing.T, adm *redis.Client, probe string) bool {
	t.Helper()
	r.quota.Acquire(probe, classify.Transient)
	return exists(t, adm, r.store.Prefix+"{"+probe+"}:quota")
}

// TestOutageFallsBackAndRecovers kills Redis in the middle of a concurrent
// load and starts it again on the same port: no call takes longer than
// the Store's Timeout (and slack), each replica counts fallbacks and logs
// the outage once, and all use Redis again once it is back.
func TestOutageFallsBackAndRecovers(t *testing.T) {
	srv := startRedis(t)
	prefix := uniquePrefix(t)
	rs := make([]*replica, 3)
	for i := range rs {
		rs[i] = newReplica(t, srv, prefix, nil)
	}
	rs[0].adapt.Record(scope, classify.Throttle) // so that every Reserve asks Redis
	var cs callStats
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range rs {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.load(stop, &cs)
			}()
		}
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	pollUntil(t, 5*time.Second, "a replica learns the scope is limited", func() bool { return rs[2].adapt.State(scope).Enabled })
	srv.Kill()
	for i, r := range rs {
		pollUntil(t, 5*time.Second, "replica "+itoa(i)+" falls back", func() bool {
			return r.quota.Fallbacks(scope) > 0 && r.adapt.Fallbacks(scope) > 0 && r.fixed.Fallbacks(scope) > 0
		})
	}
	// Keep Redis down for three Backoffs: each replica probes about three
	// times, and makes every other call without waiting.
	calls, slow := cs.calls.Load(), cs.slow.Load()
	time.Sleep(3 * rs[0].store.Backoff)
	calls, slow = cs.calls.Load()-calls, cs.slow.Load()-slow
	if slow > calls/20 {
		t.Errorf("%d of %d calls took over half the Timeout while Redis was down; want at most 5 %% (the probes)", slow, calls)
	}
	during := make([]uint64, len(rs))
	for i, r := range rs {
		during[i] = r.fallbacks()
	}
	srv.restart(t)
	adm := srv.client(t, nil)
	for i, r := range rs {
		pollUntil(t, 5*time.Second, "replica "+itoa(i)+" uses the restarted Redis", func() bool {
			return r.usesRedis(t, adm, "probe"+itoa(i))
		})
	}
	if ks := keys(t, adm, prefix+"{"+scope+"}:*"); len(ks) == 0 {
		t.Errorf("the restarted Redis has no key of the loaded scope; want the replicas to write it again")
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close

	if got, bound := time.Duration(cs.longest.Load()), callBound(rs[0].store); got > bound {
		t.Errorf("longest call during the outage took %v; want at most %v (Timeout %v)", got, bound, rs[0].store.Timeout)
	}
	for i, r := range rs {
		if during[i] == 0 {
			t.Errorf("replica %d counted no fallback while Redis was down", i)
		}
		// One Warn line per LogInterval (a minute), and one Info line
		// when Redis answered again.
		if w, in := r.log.count(slog.LevelWarn), r.log.count(slog.LevelInfo); w != 1 || in != 1 {
			t.Errorf("replica %d logged %d Warn and %d Info lines %q; want 1 and 1", i, w, in, r.log.messages())
		}
	}
}

// TestSlowRedisFallsBack stalls Redis beyond the Store's Timeout, with
// CLIENT PAUSE and with DEBUG SLEEP: calls return within the Timeout (and
// slack), decided locally, with the clients go-redis makes by default
// (used through WithTimeout) and with ContextTimeoutEnabled.
func TestSlowRedisFallsBack(t *testing.T) {
	stalls := []struct {
		name  string
		stall func(t *testing.T, adm *redis.Client, d time.Duration) (done func())
	}{
		{"ClientPause", func(t *testing.T, adm *redis.Client, d time.Duration) func() {
			if err := adm.ClientPause(context.Background(), d).Err(); err != nil {
				t.Fatalf("CLIENT PAUSE: %v", err)
			}
			return func() {}
		}},
		{"DebugSleep", func(t *testing.T, adm *redis.Client, d time.Duration) func() {
			// DEBUG SLEEP blocks the server, and the command until it
			// ends: send it from its own goroutine, and wait for it.
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = adm.Do(context.Background(), "DEBUG", "SLEEP", d.Seconds()).Err()
			}()
			return func() { <-done }
		}},
	}
	for _, s := range stalls {
		t.Run(s.name, func(t *testing.T) {
			srv := startRedis(t)
			adm := srv.client(t, &redis.Options{ReadTimeout: 5 * time.Second})
			prefix := uniquePrefix(t)
			rs := []*replica{
				newReplica(t, srv, prefix, nil),
				newReplica(t, srv, prefix, &redis.Options{ContextTimeoutEnabled: true}),
			}
			for i, r := range rs {
				if !r.usesRedis(t, adm, "warm"+itoa(i)) {
					t.Fatalf("replica %d does not use Redis before the stall", i)
				}
			}
			done := s.stall(t, adm, 400*time.Millisecond)
			time.Sleep(20 * time.Millisecond) // let the stall begin: DEBUG SLEEP is in flight
			for i, r := range rs {
				calls := map[string]func(){
					"Quota.Acquire":    func() { r.quota.Acquire(scope, classify.Transient) },
					"Adaptive.Reserve": func() { r.adapt.Reserve(scope) },
					"Fixed.Reserve":    func() { r.fixed.Reserve(scope) },
				}
				for range 3 {
					for name, call := range calls {
						start := time.Now()
						call()
						if d, bound := time.Since(start), callBound(r.store); d > bound {
							t.Errorf("replica %d: %s on a stalled Redis took %v; want at most %v", i, name, d, bound)
						}
					}
				}
				if n := r.quota.Fallbacks(scope); n == 0 {
					t.Errorf("replica %d: Quota.Fallbacks on a stalled Redis = 0; want > 0", i)
				}
			}
			done()
			for i, r := range rs {
				pollUntil(t, 5*time.Second, "replica "+itoa(i)+" uses Redis after the stall", func() bool {
					return r.usesRedis(t, adm, "after"+itoa(i))
				})
			}
		})
	}
}

// sharedCallAfterAnswer makes a burst of n Reserve calls on replica b of
// burstAfterThrottle, whose Store has timeout: the first asks Redis and is
// answered after 0.6 timeout, in time; the others wait for it and then
// make one call together, within what is left of timeout since the first
// of them came, which hold2 holds. It returns b and its hook, which goes
// on counting script calls without holding them.
func sharedCallAfterAnswer(t *testing.T, n int, timeout time.Duration, hold2 func(ctx context.Context) error) (*redisretry.Adaptive, *scriptHook) {
	t.Helper()
	srv := startRedis(t)
	b, h := burstAfterThrottle(t, srv, true, timeout, 0)
	var started atomic.Int64
	first := untilStarted(&started, n, nil)
	h.hold = func(ctx context.Context, call int64) error {
		if call != 1 {
			return hold2(ctx)
		}
		if err := first(ctx, call); err != nil {
			return err
		}
		return sleepCtx(ctx, timeout*6/10)
	}
	burst(b, h, n, &started)
	h.hold = nil
	return b, h
}

// TestCircuitStaysClosedWhenASharedCallRunsOutOfTime: Redis takes 0.6
// Timeout to answer each call, in time for a call of its own. A burst's
// calls that waited for the call in flight make theirs with what is left
// of the Timeout since the first of them came, less than Redis takes, and
// are decided by Local. Running out of a time shorter than Timeout says
// nothing of Redis, which has just answered the call in flight: the
// circuit stays closed, and the next call, within Backoff, asks Redis.
func TestCircuitStaysClosedWhenASharedCallRunsOutOfTime(t *testing.T) {
	const (
		n       = 10
		timeout = time.Second // long, so that a loaded machine's delays stay well inside each margin
	)
	b, h := sharedCallAfterAnswer(t, n, timeout, func(ctx context.Context) error {
		return sleepCtx(ctx, timeout*6/10) // past what is left, so it honours ctx
	})
	if got := b.Fallbacks(scope); got != n-1 {
		t.Fatalf("Fallbacks after a burst of %d Reserve calls, the first answered after 0.6 Timeout, the rest together with what was left = %d; want %d",
			n, got, n-1)
	}
	calls := h.calls.Load()
	if _, _, ok := b.Reserve(scope); !ok {
		t.Fatal("Reserve refused without FailFast or MaxWait")
	}
	if got, fb := h.calls.Load()-calls, b.Fallbacks(scope); got != 1 || fb != n-1 {
		t.Errorf("Reserve after the shared call ran out of its time made %d script calls, Fallbacks %d; want 1 and %d (Redis asked, the circuit closed)",
			got, fb, n-1)
	}
}

// TestCircuitOpensWhenASharedCallFails: the burst's shared call fails with
// an error of Redis's, not for lack of time: that opens the circuit as any
// failed call does, and the next call, within Backoff, is decided by Local
// without asking Redis.
func TestCircuitOpensWhenASharedCallFails(t *testing.T) {
	const (
		n       = 10
		timeout = time.Second
	)
	b, h := sharedCallAfterAnswer(t, n, timeout, func(context.Context) error {
		return errors.New("redisretry test: connection refused")
	})
	if got := b.Fallbacks(scope); got != n-1 {
		t.Fatalf("Fallbacks after a burst of %d Reserve calls whose shared call failed = %d; want %d", n, got, n-1)
	}
	calls := h.calls.Load()
	b.Reserve(scope)
	if got, fb := h.calls.Load()-calls, b.Fallbacks(scope); got != 0 || fb != n {
		t.Errorf("Reserve after the shared call failed made %d script calls, Fallbacks %d; want 0 and %d (the circuit open)", got, fb, n)
	}
}

// TestNoClientDecidesLocally checks that a Store without a client decides
// everything locally, counting fallbacks, as if Redis were down.
func TestNoClientDecidesLocally(t *testing.T) {
	s := &redisretry.Store{}
	q := s.Quota(&quota.Bucket{Capacity: 10, RetryCost: 5})
	for i := range 3 {
		_, _, ok := q.Acquire(scope, classify.Transient)
		if want := i < 2; ok != want {
			t.Errorf("Acquire %d on a bucket of 10 at 5 = %t; want %t", i+1, ok, want)
		}
	}
	if got := q.Fallbacks(scope); got != 3 {
		t.Errorf("Fallbacks = %d; want 3", got)
	}
	if got := q.Level(scope); got != 0 {
		t.Errorf("Level = %v; want 0, Local's", got)
	}
}

// TestClusterClientNeedsDeadlines checks that a Cluster client that would
// ignore the Store's Timeout is not used: every decision is local, and the
// reason is logged.
func TestClusterClientNeedsDeadlines(t *testing.T) {
	srv := startRedis(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { _ = c.Close() })
	log := &countingHandler{}
	q := (&redisretry.Store{Client: c, Logger: slog.New(log)}).Quota(nil)
	q.Acquire(scope, classify.Transient)
	if got := q.Fallbacks(scope); got != 1 {
		t.Errorf("Fallbacks with a Cluster client lacking ContextTimeoutEnabled = %d; want 1", got)
	}
	if got := log.count(slog.LevelWarn); got != 1 {
		t.Errorf("Warn lines = %d %q; want 1", got, log.messages())
	}
}

// TestNilStoreDecidesLocally checks that a nil Store field means a Store
// without a client, not a panic.
func TestNilStoreDecidesLocally(t *testing.T) {
	q := &redisretry.Quota{Local: &quota.Bucket{Capacity: 5, RetryCost: 5}}
	if _, _, ok := q.Acquire(scope, classify.Transient); !ok {
		t.Error("Quota without a Store: Acquire on a full bucket refused")
	}
	a := &redisretry.Adaptive{}
	a.Record(scope, classify.Throttle)
	if _, _, ok := a.Reserve(scope); !ok || !a.State(scope).Enabled {
		t.Errorf("Adaptive without a Store: Reserve refused or scope not limited after a throttle: %+v", a.State(scope))
	}
	f := &redisretry.Fixed{Limit: redis_rate.PerSecond(1)}
	if _, wait, ok := f.Reserve(scope); wait != 0 || !ok {
		t.Errorf("Fixed without a Store: first Reserve = %v, %t; want 0, true", wait, ok)
	}
	for name, n := range map[string]uint64{"Quota": q.Fallbacks(scope), "Adaptive": a.Fallbacks(scope), "Fixed": f.Fallbacks(scope)} {
		if n == 0 {
			t.Errorf("%s without a Store: Fallbacks = 0; want > 0", name)
		}
	}
}

// TestMaxScopesBoundsRecords checks that the Store's MaxScopes bounds the
// records each Quota, Adaptive and Fixed keeps, however many scopes pass.
func TestMaxScopesBoundsRecords(t *testing.T) {
	const limit = 4
	s := &redisretry.Store{MaxScopes: limit}
	q, a, f := s.Quota(nil), s.Adaptive(nil), s.Fixed(redis_rate.PerSecond(1), nil)
	for i := range 100 {
		sc := "host" + itoa(i)
		q.Acquire(sc, classify.Transient)
		q.Success(sc)
		a.Reserve(sc)
		a.Record(sc, classify.Success)
		f.Reserve(sc)
	}
	if nq, na, nf := redisretry.Records(q, a, f); nq > limit || na > limit || nf > limit || nq == 0 || na == 0 || nf == 0 {
		t.Errorf("records kept after 100 scopes with MaxScopes %d: Quota %d, Adaptive %d, Fixed %d; want 1 to %d each", limit, nq, na, nf, limit)
	}
}
