package quota_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/quota"
)

var t0 = faketime.Epoch

// drain acquires retries after k on scope at t0 until q refuses, and returns
// how many it granted.
func drain(t *testing.T, q *quota.Bucket, scope string, k classify.Kind) int {
	t.Helper()
	for n := 0; n < 10000; n++ {
		if _, _, ok := q.AcquireAt(t0, scope, k); !ok {
			return n
		}
	}
	t.Fatalf("AcquireAt(%q, %v) never refused", scope, k)
	return 0
}

func TestBucketRefusesOnceDrained(t *testing.T) {
	tests := []struct {
		name      string
		q         *quota.Bucket
		kind      classify.Kind
		wantCount int
		wantLevel float64
	}{
		{"transient_default", &quota.Bucket{}, classify.Transient, 100, 0},
		{"throttle_default", &quota.Bucket{}, classify.Throttle, 50, 0},
		{"timeout_default", &quota.Bucket{}, classify.Timeout, 50, 0},
		{"custom_costs", &quota.Bucket{Capacity: 10, RetryCost: 3}, classify.Transient, 3, 1},
		{"negative_means_default", &quota.Bucket{Capacity: -1, RetryCost: -1, TimeoutCost: -7}, classify.Timeout, 50, 0},
		{"wait_without_refill", &quota.Bucket{Wait: true}, classify.Transient, 100, 0},
		{"cost_above_capacity", &quota.Bucket{Capacity: 4}, classify.Transient, 0, 4},
		{"cost_above_capacity_wait", &quota.Bucket{Capacity: 4, RefillPerSecond: 1, Wait: true}, classify.Transient, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := drain(t, tt.q, "a", tt.kind); got != tt.wantCount {
				t.Errorf("retries granted after %v = %d; want %d", tt.kind, got, tt.wantCount)
			}
			if got := tt.q.LevelAt(t0, "a"); got != tt.wantLevel {
				t.Errorf("LevelAt(a) after draining = %v; want %v", got, tt.wantLevel)
			}
		})
	}
}

func TestBucketAcquireReturnsCost(t *testing.T) {
	tests := []struct {
		kind   classify.Kind
		wantOK bool
		want   int
	}{
		{classify.Transient, true, quota.DefaultRetryCost},
		{classify.Throttle, true, quota.DefaultTimeoutCost},
		{classify.Timeout, true, quota.DefaultTimeoutCost},
		{classify.Success, false, 0},
		{classify.Fatal, false, 0},
		{classify.Kind(99), false, 0},
	}
	for _, tt := range tests {
		var q quota.Bucket
		cost, wait, ok := q.AcquireAt(t0, "a", tt.kind)
		if cost != tt.want || wait != 0 || ok != tt.wantOK {
			t.Errorf("AcquireAt(a, %v) = %d, %v, %t; want %d, 0, %t", tt.kind, cost, wait, ok, tt.want, tt.wantOK)
		}
		if got, want := q.LevelAt(t0, "a"), float64(quota.DefaultCapacity-tt.want); got != want {
			t.Errorf("LevelAt(a) after AcquireAt(%v) = %v; want %v", tt.kind, got, want)
		}
	}
}

func TestBucketSuccessAddsIncrementUpToCapacity(t *testing.T) {
	q := quota.Bucket{Capacity: 20, SuccessIncrement: 2}
	q.AcquireAt(t0, "a", classify.Transient) // 15
	var got []float64
	for range 4 {
		q.SuccessAt(t0, "a")
		got = append(got, q.LevelAt(t0, "a"))
	}
	if diff := cmp.Diff([]float64{17, 19, 20, 20}, got); diff != "" {
		t.Errorf("LevelAt(a) after each SuccessAt mismatch (-want +got):\n%s", diff)
	}
	q.SuccessAt(t0, "untouched")
	if got := q.LevelAt(t0, "untouched"); got != 20 {
		t.Errorf("LevelAt(untouched) after SuccessAt = %v; want 20", got)
	}
}

func TestBucketRefundReturnsCost(t *testing.T) {
	var q quota.Bucket
	c1, _, _ := q.AcquireAt(t0, "a", classify.Timeout)
	c2, _, _ := q.AcquireAt(t0, "a", classify.Transient)
	q.RefundAt(t0, "a", c2)
	if got, want := q.LevelAt(t0, "a"), float64(500-c1); got != want {
		t.Errorf("LevelAt(a) after refunding %d = %v; want %v", c2, got, want)
	}
	q.RefundAt(t0, "a", c1+100)
	if got := q.LevelAt(t0, "a"); got != 500 {
		t.Errorf("LevelAt(a) after refunding more than was taken = %v; want 500", got)
	}
}

func TestBucketScopesIndependent(t *testing.T) {
	var q quota.Bucket
	drain(t, &q, "a", classify.Throttle)
	if got := q.LevelAt(t0, "b"); got != 500 {
		t.Errorf("LevelAt(b) after draining a = %v; want 500", got)
	}
	if _, _, ok := q.AcquireAt(t0, "b", classify.Throttle); !ok {
		t.Errorf("AcquireAt(b, throttle) after draining a refused; want granted")
	}
}

func TestBucketRefill(t *testing.T) {
	tests := []struct {
		name    string
		refill  float64
		elapsed time.Duration
		want    float64
	}{
		{"ten_seconds", 2, 10 * time.Second, 20},
		{"fraction", 2, 1250 * time.Millisecond, 2.5},
		{"capped", 2, time.Hour, 100},
		{"clock_backwards", 2, -time.Minute, 0},
		{"no_refill", 0, time.Hour, 0},
		{"negative_refill_is_none", -5, time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := quota.Bucket{Capacity: 100, RefillPerSecond: tt.refill}
			drain(t, &q, "a", classify.Transient)
			if got := q.LevelAt(t0.Add(tt.elapsed), "a"); got != tt.want {
				t.Errorf("LevelAt(t0%+v, a) = %v; want %v", tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestBucketClockBackwardsRemovesNothing(t *testing.T) {
	q := quota.Bucket{Capacity: 100, RefillPerSecond: 1}
	drain(t, &q, "a", classify.Transient)
	q.SuccessAt(t0.Add(10*time.Second), "a") // 10 refilled + 1
	q.SuccessAt(t0, "a")                     // earlier instant: +1, no refill lost
	if got := q.LevelAt(t0.Add(10*time.Second), "a"); got != 12 {
		t.Errorf("LevelAt(t0+10s, a) after a backwards step = %v; want 12", got)
	}
	if got := q.LevelAt(t0.Add(11*time.Second), "a"); got != 13 {
		t.Errorf("LevelAt(t0+11s, a) = %v; want 13 (each second paid once)", got)
	}
}

func TestBucketWaitTakesCostAndReportsDeficit(t *testing.T) {
	q := quota.Bucket{Capacity: 10, RefillPerSecond: 2, Wait: true}
	type step struct {
		Cost  int
		Wait  time.Duration
		OK    bool
		Level float64
	}
	var got []step
	for range 4 {
		cost, wait, ok := q.AcquireAt(t0, "a", classify.Transient)
		got = append(got, step{cost, wait, ok, q.LevelAt(t0, "a")})
	}
	want := []step{
		{5, 0, true, 5}, {5, 0, true, 0},
		{5, 2500 * time.Millisecond, true, -5}, {5, 5 * time.Second, true, -10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AcquireAt(a, transient) steps in Wait mode mismatch (-want +got):\n%s", diff)
	}
	if got := q.LevelAt(t0.Add(5*time.Second), "a"); got != 0 {
		t.Errorf("LevelAt(t0+5s, a) = %v; want 0 (the last waiter's turn)", got)
	}
	q.RefundAt(t0.Add(5*time.Second), "a", 5) // a waiter gave up
	if got := q.LevelAt(t0.Add(5*time.Second), "a"); got != 5 {
		t.Errorf("LevelAt(t0+5s, a) after a refund = %v; want 5", got)
	}
}

func TestBucketMaxScopesBoundsMemory(t *testing.T) {
	q := quota.Bucket{MaxScopes: 3}
	for i := range 10 {
		q.AcquireAt(t0, fmt.Sprint("host", i), classify.Transient)
	}
	charged := 0
	for i := range 10 {
		if q.LevelAt(t0, fmt.Sprint("host", i)) < quota.DefaultCapacity {
			charged++
		}
	}
	if charged != 3 {
		t.Errorf("scopes below capacity after charging 10 with MaxScopes 3 = %d; want 3", charged)
	}
	if got := q.LevelAt(t0, "host9"); got != 495 {
		t.Errorf("LevelAt(host9), the newest scope, = %v; want 495", got)
	}
}

func TestBucketEvictsFullestBucket(t *testing.T) {
	q := quota.Bucket{MaxScopes: 2}
	q.AcquireAt(t0, "drained", classify.Throttle)
	q.AcquireAt(t0, "drained", classify.Throttle) // 480
	q.AcquireAt(t0, "light", classify.Transient)  // 495
	q.AcquireAt(t0, "new", classify.Transient)
	if diff := cmp.Diff([]float64{480, 500, 495}, []float64{q.LevelAt(t0, "drained"), q.LevelAt(t0, "light"), q.LevelAt(t0, "new")}); diff != "" {
		t.Errorf("levels of drained, light, new after overflow mismatch (-want +got):\n%s", diff)
	}
}

func TestBucketUsesNowField(t *testing.T) {
	clock := faketime.New()
	q := quota.Bucket{Capacity: 10, RefillPerSecond: 1, Now: clock.Now}
	q.Acquire("a", classify.Throttle)
	clock.Advance(3 * time.Second)
	q.Success("a")
	q.Refund("a", 2)
	if got := q.Level("a"); got != 6 {
		t.Errorf("Level(a) = %v; want 6 (0 + 3 refilled + 1 success + 2 refund)", got)
	}
}

func TestBucketHealthyHotPathDoesNotAllocate(t *testing.T) {
	var q quota.Bucket
	if allocs := testing.AllocsPerRun(1000, func() { q.Success("a"); q.RefundAt(t0, "a", 5) }); allocs != 0 {
		t.Errorf("Success and RefundAt on a healthy quota: %v allocs per run; want 0", allocs)
	}
	drain(t, &q, "a", classify.Throttle) // at 0, 101 successes keep "a" stored
	if allocs := testing.AllocsPerRun(100, func() { q.SuccessAt(t0, "a") }); allocs != 0 {
		t.Errorf("SuccessAt on a charged scope: %v allocs per run; want 0", allocs)
	}
}

func TestBucketConcurrentUseKeepsLevelInRange(t *testing.T) {
	clock := faketime.New()
	q := quota.Bucket{Capacity: 50, RefillPerSecond: 3, Now: clock.Now}
	scopes := []string{"a", "b", "c"}
	kinds := []classify.Kind{classify.Transient, classify.Throttle, classify.Timeout}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := scopes[(g+i)%len(scopes)]
				if cost, _, ok := q.Acquire(s, kinds[i%len(kinds)]); ok && i%3 == 0 {
					q.Refund(s, cost)
				}
				q.Success(s)
				if i%50 == 0 {
					clock.Advance(time.Second)
				}
				if l := q.Level(s); l < 0 || l > 50 {
					t.Errorf("Level(%s) = %v; want within [0, 50]", s, l)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkBucketSuccess measures a healthy client's hot path: one atomic load.
func BenchmarkBucketSuccess(b *testing.B) {
	var q quota.Bucket
	b.ReportAllocs()
	for b.Loop() {
		q.Success("api.example.com")
	}
}

// BenchmarkBucketAcquireRefund measures a retry that succeeds, on a charged
// scope (bucket stays stored) and a fresh one (bucket stored, then dropped).
func BenchmarkBucketAcquireRefund(b *testing.B) {
	for _, charged := range []bool{true, false} {
		b.Run(fmt.Sprintf("charged=%t", charged), func(b *testing.B) {
			var q quota.Bucket
			if charged {
				q.AcquireAt(t0, "api.example.com", classify.Timeout)
			}
			b.ReportAllocs()
			for b.Loop() {
				cost, _, _ := q.AcquireAt(t0, "api.example.com", classify.Transient)
				q.RefundAt(t0, "api.example.com", cost)
			}
		})
	}
}

func TestBucketThrottleCost(t *testing.T) {
	q := &quota.Bucket{RetryCost: 14, ThrottleCost: 5}
	now := time.Unix(0, 0)
	for _, tt := range []struct {
		k    classify.Kind
		want int
	}{{classify.Transient, 14}, {classify.Throttle, 5}, {classify.Timeout, quota.DefaultTimeoutCost}} {
		if cost, _, ok := q.AcquireAt(now, "s", tt.k); !ok || cost != tt.want {
			t.Errorf("AcquireAt(%v) cost = %d, %t; want %d, true", tt.k, cost, ok, tt.want)
		}
	}
}
