package redisretry_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// byteSource feeds a quota scenario: random bytes, or a fuzzer's.
type byteSource interface{ next() byte }

type randBytes struct{ r *rand.Rand }

func (s randBytes) next() byte { return byte(s.r.UintN(256)) }

// fuzzBytes yields its bytes, then zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (s *fuzzBytes) next() byte {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return s.b[s.i-1]
}

// quotaStep is one event of a scenario, as recorded for failure messages.
type quotaStep struct {
	Op    string
	Scope string
	Arg   string
}

// quotaParams are the parameters of a quota.Bucket, which cannot be
// copied.
type quotaParams struct {
	Capacity, RetryCost, TimeoutCost, ThrottleCost, SuccessIncrement int
	RefillPerSecond                                                  float64
	Wait                                                             bool
}

func (p quotaParams) quota() *quota.Bucket {
	return &quota.Bucket{Capacity: p.Capacity, RetryCost: p.RetryCost, TimeoutCost: p.TimeoutCost,
		ThrottleCost: p.ThrottleCost, SuccessIncrement: p.SuccessIncrement,
		RefillPerSecond: p.RefillPerSecond, Wait: p.Wait}
}

// runQuotaScenario drives a Quota on Redis and an in-process
// quota.Bucket with the same parameters, clock and events, read from
// src, and fails t at the first result or level on which they differ.
// Times move in steps of 1/64 s and refill rates are multiples of 1/4, so
// that both do exact arithmetic and agree to the last bit.
func runQuotaScenario(t *testing.T, c *redis.Client, src byteSource, events int) {
	t.Helper()
	params := quotaParams{
		Capacity:         5 + int(src.next()%40),
		RetryCost:        1 + int(src.next()%8),
		TimeoutCost:      1 + int(src.next()%12),
		SuccessIncrement: 1 + int(src.next()%3),
		RefillPerSecond:  []float64{0, 0, 0.25, 0.5, 1, 2, 8}[src.next()%7],
		Wait:             src.next()%2 == 1,
	}
	if src.next()%2 == 1 {
		params.ThrottleCost = 1 + int(src.next()%12)
	}
	flush := []time.Duration{0, time.Microsecond, 50 * time.Millisecond}[src.next()%3]
	refresh := []time.Duration{0, time.Microsecond}[src.next()%2]

	clock := faketime.New()
	ref := params.quota() // the reference, in process
	q := &redisretry.Quota{
		Store:   &redisretry.Store{Client: c, Prefix: uniquePrefix(t), Timeout: 5 * time.Second, Now: clock.Now},
		Local:   params.quota(),
		Flush:   flush,
		Refresh: refresh,
	}
	scopes := []string{"a", "b"}
	kinds := []classify.Kind{classify.Transient, classify.Transient, classify.Timeout, classify.Throttle, classify.Success, classify.Fatal}
	var steps []quotaStep
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("params %+v, flush %v, refresh %v, after %d steps %v:\n"+format,
			append([]any{params, flush, refresh, len(steps), steps}, args...)...)
	}
	for range events {
		scope := scopes[src.next()%2]
		now := clock.Now()
		switch op := src.next() % 8; op {
		case 0, 1:
			k := kinds[int(src.next())%len(kinds)]
			steps = append(steps, quotaStep{"Acquire", scope, k.String()})
			cost, wait, ok := q.Acquire(scope, k)
			wantCost, wantWait, wantOK := ref.AcquireAt(now, scope, k)
			if cost != wantCost || wait != wantWait || ok != wantOK {
				fail("Acquire(%q, %v) = %d, %v, %t; want %d, %v, %t", scope, k, cost, wait, ok, wantCost, wantWait, wantOK)
			}
		case 2:
			cost := int(src.next() % 12)
			steps = append(steps, quotaStep{"Refund", scope, strconv.Itoa(cost)})
			q.Refund(scope, cost)
			ref.RefundAt(now, scope, cost)
		case 3, 4:
			steps = append(steps, quotaStep{"Success", scope, ""})
			q.Success(scope)
			ref.SuccessAt(now, scope)
		case 5, 6:
			d := time.Duration(src.next()%80) * (time.Second / 64)
			if b := src.next(); b >= 250 {
				d = time.Duration(b-249) * time.Minute
			}
			steps = append(steps, quotaStep{"Advance", "", d.String()})
			clock.Advance(d)
		case 7:
			steps = append(steps, quotaStep{"Level", scope, ""})
		}
		now = clock.Now()
		for _, s := range scopes {
			got, want := q.Level(s), ref.LevelAt(now, s)
			if math.Abs(got-want) > 1e-9 {
				fail("Level(%q) = %v; want %v", s, got, want)
			}
		}
	}
	for _, s := range scopes {
		if n := q.Fallbacks(s); n != 0 {
			t.Fatalf("Fallbacks(%q) = %d with Redis up; want 0", s, n)
		}
	}
}

// TestQuotaMatchesLocal checks the Lua arithmetic against quota.Bucket
// on random event sequences: the same parameters, clock and events give
// the same decisions, costs, waits and levels.
func TestQuotaMatchesLocal(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t, nil)
	for seed := range uint64(40) {
		src := randBytes{rand.New(rand.NewPCG(seed, 0x51a7e))}
		t.Run("seed"+strconv.Itoa(int(seed)), func(t *testing.T) {
			runQuotaScenario(t, c, src, 150)
		})
	}
}

// FuzzQuotaMatchesLocal is TestQuotaMatchesLocal driven by the fuzzer's
// bytes: parameters first, then events.
func FuzzQuotaMatchesLocal(f *testing.F) {
	srv := startRedis(f)
	c := srv.client(f, nil)
	f.Add([]byte{})
	f.Add([]byte{3, 2, 4, 0, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 3, 0, 5, 10})
	// Wait mode with a refill: deficits and the waits to repay them.
	f.Add([]byte{10, 4, 9, 1, 5, 1, 1, 2, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 6, 3, 0, 0, 2, 0, 3, 7})
	// Successes and refunds owed, paid at the next Acquire.
	f.Add([]byte{20, 7, 7, 2, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 2, 5, 1, 0, 0, 0, 6, 60, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		runQuotaScenario(t, c, &fuzzBytes{b: data}, 40+len(data)/2)
	})
}

// TestQuotaSharedByFleet checks that replicas, each with its own Store and
// client, drain one bucket: an outage stops after one quota's worth of
// retries fleet-wide, not one per replica.
func TestQuotaSharedByFleet(t *testing.T) {
	srv := startRedis(t)
	prefix := uniquePrefix(t)
	const replicas, workers = 4, 4
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range replicas {
		q := (&redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 5 * time.Second}).Quota(nil)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, _, ok := q.Acquire("api.example.com", classify.Transient); !ok {
						return
					}
					taken.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	// 500 tokens at 5 a retry: 100 retries for the fleet.
	want := int64(quota.DefaultCapacity / quota.DefaultRetryCost)
	if got := taken.Load(); got != want {
		t.Errorf("%d replicas took %d retries from one shared quota; want %d", replicas, got, want)
	}
}

// TestQuotaSuccessesReachOtherReplicas checks that successes recorded by
// one replica refill the bucket that another drained: they are owed and
// paid within Flush, without a round trip of their own before that.
func TestQuotaSuccessesReachOtherReplicas(t *testing.T) {
	srv := startRedis(t)
	prefix := uniquePrefix(t)
	clock := faketime.New()
	local := &quota.Bucket{Capacity: 10, RetryCost: 5}
	a := &redisretry.Quota{Store: &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 5 * time.Second, Now: clock.Now}, Local: local}
	b := &redisretry.Quota{Store: &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 5 * time.Second, Now: clock.Now}, Local: local}
	const scope = "api.example.com"
	for i := range 2 {
		if _, _, ok := a.Acquire(scope, classify.Transient); !ok {
			t.Fatalf("Acquire %d of a full bucket of 10 at 5 a retry refused", i+1)
		}
	}
	if _, _, ok := a.Acquire(scope, classify.Transient); ok {
		t.Fatal("Acquire of an empty bucket allowed")
	}
	// b has never seen the scope: its first Success pays at once and
	// learns the level; the next four are owed until Flush has passed.
	for range 5 {
		b.Success(scope)
	}
	if got := b.Level(scope); got != 5 {
		t.Errorf("b.Level after 5 successes on an empty bucket = %v; want 5", got)
	}
	if got := a.Level(scope); got != 0 {
		t.Errorf("a.Level before b pays = %v; want 0, its last answer", got)
	}
	if _, _, ok := a.Acquire(scope, classify.Transient); ok {
		t.Error("a.Acquire allowed with 1 token paid and 4 owed by b; want refused")
	}
	clock.Advance(redisretry.DefaultQuotaFlush)
	b.Success(scope) // pays the 5 owed
	if _, _, ok := a.Acquire(scope, classify.Transient); !ok {
		t.Error("a.Acquire refused after b paid 6 successes; want allowed")
	}
}

// TestQuotaHealthyReplicaRoundTrips counts the round trips of a healthy
// replica: one per scope per Refresh, whatever the number of successes.
func TestQuotaHealthyReplicaRoundTrips(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	q := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: 5 * time.Second, Now: clock.Now}).Quota(nil)
	resetStats(t, adm)
	for range 10 { // 10 s
		for range 1000 {
			q.Success("api.example.com")
			clock.Advance(time.Millisecond)
		}
	}
	// The first call also loads the script: EVALSHA fails, EVAL follows.
	if got, want := scriptCalls(t, adm), int64(10+1); got != want {
		t.Errorf("10,000 successes over 10 s made %d script calls; want %d (one per Refresh, and a load)", got, want)
	}
}

// resetStats zeroes the server's command statistics.
func resetStats(t testing.TB, c *redis.Client) {
	t.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// scriptCalls returns the EVALSHA and EVAL commands the server has
// processed since resetStats: the package's round trips, as all its calls
// are scripts.
func scriptCalls(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	st, err := c.InfoMap(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	var n int64
	for _, name := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		v := st["Commandstats"][name] // calls=3,usec=...
		calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		if calls == "" {
			continue
		}
		k, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats %s = %q: %v", name, v, err)
		}
		n += k
	}
	return n
}

// TestQuotaKeys checks the key layout: the scope is the hash tag, and a
// bucket that is full again is deleted.
func TestQuotaKeys(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	q := &redisretry.Quota{
		Store: &redisretry.Store{Client: srv.client(t, nil), Prefix: "p:", Timeout: 5 * time.Second},
		Local: &quota.Bucket{Capacity: 10, RetryCost: 5},
		Flush: time.Nanosecond, // pay what is owed at once
	}
	if _, _, ok := q.Acquire("api.example.com", classify.Transient); !ok {
		t.Fatal("Acquire refused on a full bucket")
	}
	if diff := cmp.Diff([]string{"p:{api.example.com}:quota"}, keys(t, adm, "p:*")); diff != "" {
		t.Errorf("keys after Acquire (-want +got):\n%s", diff)
	}
	ttl, err := adm.PTTL(context.Background(), "p:{api.example.com}:quota").Result()
	if err != nil || ttl <= 0 || ttl > redisretry.DefaultTTL {
		t.Errorf("PTTL = %v, %v; want within (0, %v]", ttl, err, redisretry.DefaultTTL)
	}
	q.Refund("api.example.com", 5)
	if got := keys(t, adm, "p:*"); len(got) != 0 {
		t.Errorf("keys after the bucket filled again = %q; want none", got)
	}
}
