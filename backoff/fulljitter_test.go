package backoff_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// fixed returns a Rand hook that always yields r.
func fixed(r float64) func() float64 {
	return func() float64 { return r }
}

// justUnderOne is a Rand value close to 1 whose products with the ceilings
// below are exact.
const justUnderOne = 0.999999

func TestFullJitterDefaults(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		{1, 0, 0},
		{3, 0, 0},
		{100, 0, 0},

		{1, 0.5, 500 * time.Millisecond},
		{2, 0.5, time.Second},
		{3, 0.5, 2 * time.Second},
		{4, 0.5, 4 * time.Second},
		{5, 0.5, 8 * time.Second},
		{6, 0.5, 10 * time.Second}, // 32s capped at 20s
		{7, 0.5, 10 * time.Second},
		{10, 0.5, 10 * time.Second},

		{1, justUnderOne, 999999 * time.Microsecond},
		{2, justUnderOne, 1999998 * time.Microsecond},
		{3, justUnderOne, 3999996 * time.Microsecond},
		{4, justUnderOne, 7999992 * time.Microsecond},
		{5, justUnderOne, 15999984 * time.Microsecond},
		{6, justUnderOne, 19999980 * time.Microsecond},
		{50, justUnderOne, 19999980 * time.Microsecond},
	}
	for _, tt := range tests {
		s := backoff.FullJitter{Rand: fixed(tt.r)}
		if got := s.Delay(tt.retry); got != tt.want {
			t.Errorf("FullJitter{Rand: %v}.Delay(%d) = %v; want %v", tt.r, tt.retry, got, tt.want)
		}
	}
}

func TestFullJitterRetryBelowOneIsOne(t *testing.T) {
	s := backoff.FullJitter{Rand: fixed(0.5)}
	want := s.Delay(1)
	for _, retry := range []int{0, -1, math.MinInt} {
		if got := s.Delay(retry); got != want {
			t.Errorf("FullJitter.Delay(%d) = %v; want %v as for retry 1", retry, got, want)
		}
	}
}

func TestFullJitterOverrides(t *testing.T) {
	tests := []struct {
		name  string
		base  time.Duration
		max   time.Duration
		retry int
		want  time.Duration // at Rand 0.5
	}{
		// The benchmark scaling: the default shape, a thousand times faster.
		{"scaled_retry1", time.Millisecond, 20 * time.Millisecond, 1, 500 * time.Microsecond},
		{"scaled_retry2", time.Millisecond, 20 * time.Millisecond, 2, time.Millisecond},
		{"scaled_retry5", time.Millisecond, 20 * time.Millisecond, 5, 8 * time.Millisecond},
		{"scaled_retry6", time.Millisecond, 20 * time.Millisecond, 6, 10 * time.Millisecond},
		{"scaled_retry100", time.Millisecond, 20 * time.Millisecond, 100, 10 * time.Millisecond},

		{"base_only", 100 * time.Millisecond, 0, 3, 200 * time.Millisecond},
		{"base_only_capped", 100 * time.Millisecond, 0, 20, 10 * time.Second},
		{"max_only", 0, 3 * time.Second, 2, time.Second},
		{"max_only_capped", 0, 3 * time.Second, 3, 1500 * time.Millisecond},
		{"base_above_max", 30 * time.Second, 20 * time.Second, 1, 10 * time.Second},
		{"max_not_power_of_two", time.Second, 5 * time.Second, 4, 2500 * time.Millisecond},

		{"negative_base_is_default", -time.Second, 0, 2, time.Second},
		{"negative_max_is_default", 0, -time.Second, 9, 10 * time.Second},
		{"one_nanosecond_base", time.Nanosecond, 0, 11, 512 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := backoff.FullJitter{Base: tt.base, Max: tt.max, Rand: fixed(0.5)}
			if got := s.Delay(tt.retry); got != tt.want {
				t.Errorf("FullJitter{Base: %v, Max: %v}.Delay(%d) = %v; want %v",
					tt.base, tt.max, tt.retry, got, tt.want)
			}
		})
	}
}

func TestFullJitterRandClamped(t *testing.T) {
	tests := []struct {
		name string
		r    float64
		want time.Duration // retry 3, ceiling 4s
	}{
		{"negative", -0.5, 0},
		{"negative_infinity", math.Inf(-1), 0},
		{"nan", math.NaN(), 0},
		{"one", 1, 4 * time.Second},
		{"above_one", 1.5, 4 * time.Second},
		{"infinity", math.Inf(1), 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := backoff.FullJitter{Rand: fixed(tt.r)}
			if got := s.Delay(3); got != tt.want {
				t.Errorf("FullJitter{Rand: %v}.Delay(3) = %v; want %v", tt.r, got, tt.want)
			}
		})
	}
}

func TestFullJitterHugeRetryStaysInRange(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.FullJitter
		cap  time.Duration
	}{
		{"defaults", backoff.FullJitter{}, backoff.DefaultMaxBackoff},
		{"one_nanosecond_base", backoff.FullJitter{Base: 1}, backoff.DefaultMaxBackoff},
		{"largest_max", backoff.FullJitter{Base: 1, Max: math.MaxInt64}, math.MaxInt64},
		{"largest_base_and_max", backoff.FullJitter{Base: math.MaxInt64, Max: math.MaxInt64}, math.MaxInt64},
	}
	retries := []int{62, 63, 64, 65, 1000, math.MaxInt32, math.MaxInt - 1, math.MaxInt}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []float64{0.5, justUnderOne, 1} {
				s := tt.s
				s.Rand = fixed(r)
				for _, retry := range retries {
					if got := s.Delay(retry); got < 0 || got > tt.cap {
						t.Errorf("FullJitter{Base: %d, Max: %d, Rand: %v}.Delay(%d) = %v; want in [0, %v]",
							s.Base, s.Max, r, retry, got, tt.cap)
					}
				}
			}
		})
	}
}

func TestFullJitterReachesLargestMax(t *testing.T) {
	// With a 1ns base the ceiling doubles from 1ns up to 2^62 at retry 63;
	// retry 64 would be 2^63, which the cap cuts to the largest Duration.
	s := backoff.FullJitter{Base: 1, Max: math.MaxInt64, Rand: fixed(1)}
	if got, want := s.Delay(63), time.Duration(1<<62); got != want {
		t.Errorf("FullJitter{Base: 1ns, Max: MaxInt64}.Delay(63) = %d; want %d", got, want)
	}
	for _, retry := range []int{64, 1000, math.MaxInt} {
		if got, want := s.Delay(retry), time.Duration(math.MaxInt64); got != want {
			t.Errorf("FullJitter{Base: 1ns, Max: MaxInt64}.Delay(%d) = %d; want %d", retry, got, want)
		}
	}
}

func TestFullJitterDefaultRandInRange(t *testing.T) {
	var s backoff.FullJitter
	for retry := 1; retry <= 8; retry++ {
		ceiling := min(backoff.DefaultBase<<(retry-1), backoff.DefaultMaxBackoff)
		for range 100 {
			if got := s.Delay(retry); got < 0 || got > ceiling {
				t.Fatalf("FullJitter{}.Delay(%d) = %v; want in [0, %v]", retry, got, ceiling)
			}
		}
	}
}

func TestFullJitterConcurrentUse(t *testing.T) {
	// One value shared by many goroutines; the race detector checks it.
	s := backoff.FullJitter{Base: time.Millisecond, Max: 20 * time.Millisecond}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for retry := 1; retry <= 100; retry++ {
				if got := s.Delay(retry + g); got < 0 || got > s.Max {
					t.Errorf("FullJitter.Delay(%d) = %v; want in [0, %v]", retry+g, got, s.Max)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzFullJitterDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), 0.5)
	f.Add(0, int64(0), int64(0), 0.0)
	f.Add(-1, int64(-1), int64(-1), -1.0)
	f.Add(6, int64(time.Second), int64(20*time.Second), justUnderOne)
	f.Add(64, int64(1), int64(math.MaxInt64), 1.0)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), 2.0)
	f.Add(1000, int64(time.Millisecond), int64(20*time.Millisecond), math.NaN())
	f.Fuzz(func(t *testing.T, retry int, base, maxBackoff int64, r float64) {
		s := backoff.FullJitter{
			Base: time.Duration(base),
			Max:  time.Duration(maxBackoff),
			Rand: fixed(r),
		}
		limit := s.Max
		if limit <= 0 {
			limit = backoff.DefaultMaxBackoff
		}
		got := s.Delay(retry)
		if got < 0 || got > limit {
			t.Fatalf("FullJitter{Base: %d, Max: %d, Rand: %v}.Delay(%d) = %d; want in [0, %d]",
				base, maxBackoff, r, retry, got, limit)
		}
		// With the same random draw, a later retry never waits less.
		if retry < math.MaxInt {
			if next := s.Delay(retry + 1); next < got {
				t.Fatalf("FullJitter{Base: %d, Max: %d, Rand: %v}: Delay(%d) = %d < Delay(%d) = %d",
					base, maxBackoff, r, retry+1, next, retry, got)
			}
		}
	})
}
