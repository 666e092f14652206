package redisretry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// benchStore returns a Store on the examples' server with a prefix of its
// own, whose client is closed when b ends.
func benchStore(b *testing.B) *redisretry.Store {
	b.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	return &redisretry.Store{Client: c, Prefix: uniquePrefix(b), Timeout: time.Second}
}

// BenchmarkQuotaSuccess is the happy path: a success on a scope whose
// bucket is full, with no round trip but one per Refresh.
func BenchmarkQuotaSuccess(b *testing.B) {
	q := benchStore(b).Quota(nil)
	q.Success(scope)
	b.ReportAllocs()
	for b.Loop() {
		q.Success(scope)
	}
}

// BenchmarkQuotaAcquire is one round trip: a retry paid from the shared
// bucket, and its refund.
func BenchmarkQuotaAcquire(b *testing.B) {
	q := benchStore(b).Quota(&quota.Bucket{RefillPerSecond: 1e9})
	b.ReportAllocs()
	for b.Loop() {
		q.Acquire(scope, classify.Transient)
	}
}

// BenchmarkAdaptiveReserveUnlimited is a scope never throttled: no round
// trip but one per Refresh.
func BenchmarkAdaptiveReserveUnlimited(b *testing.B) {
	a := benchStore(b).Adaptive(nil)
	b.ReportAllocs()
	for b.Loop() {
		a.Reserve(scope)
		a.Record(scope, classify.Success)
	}
}

// BenchmarkAdaptiveReserveUnlimitedParallel is a scope never throttled,
// called by 8 goroutines per CPU: no round trip but one per Refresh, which
// the calls that come while it is in flight wait for.
func BenchmarkAdaptiveReserveUnlimitedParallel(b *testing.B) {
	a := benchStore(b).Adaptive(nil)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Reserve(scope)
			a.Record(scope, classify.Success)
		}
	})
}

// BenchmarkAdaptiveReserveLimited is a throttled scope: one round trip per
// attempt.
func BenchmarkAdaptiveReserveLimited(b *testing.B) {
	a := benchStore(b).Adaptive(&ratelimit.Adaptive{MinFillRate: 1e9})
	a.Record(scope, classify.Throttle)
	b.ReportAllocs()
	for b.Loop() {
		a.Reserve(scope)
		a.Record(scope, classify.Success)
	}
}

// BenchmarkAdaptiveReserveLimitedParallel is a throttled scope called by
// 8 goroutines per CPU: at most one round trip in flight per scope, the
// calls that come meanwhile taking their slots together in the next.
func BenchmarkAdaptiveReserveLimitedParallel(b *testing.B) {
	a := benchStore(b).Adaptive(&ratelimit.Adaptive{MinFillRate: 1e9})
	a.Record(scope, classify.Throttle)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Reserve(scope)
			a.Record(scope, classify.Success)
		}
	})
}

// BenchmarkAdaptiveReserveBurst is a burst of 60 attempts at once on a
// throttled scope: ns/op is per burst, as long as its last Reserve took,
// and round-trips/op counts its script calls.
func BenchmarkAdaptiveReserveBurst(b *testing.B) {
	s := benchStore(b)
	h := &scriptHook{}
	s.Client.(*redis.Client).AddHook(h)
	a := s.Adaptive(&ratelimit.Adaptive{MinFillRate: 1e9})
	a.Record(scope, classify.Throttle)
	h.armed.Store(true)
	b.ReportAllocs()
	var wg sync.WaitGroup
	for b.Loop() {
		for range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.Reserve(scope)
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(h.calls.Load())/float64(b.N), "round-trips/op")
	if n := a.Fallbacks(scope); n > 0 {
		b.Logf("%d attempts decided locally", n)
	}
}

// BenchmarkFixedReserve is one round trip to redis_rate's script.
func BenchmarkFixedReserve(b *testing.B) {
	f := benchStore(b).Fixed(redis_rate.PerSecond(1e9), nil)
	b.ReportAllocs()
	for b.Loop() {
		f.Reserve(scope)
	}
}
