package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func TestEqualJitterDefaults(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		// Rand 0 keeps exactly half of each ceiling: 1s, 2s, 4s, 8s, 16s, 20s.
		{1, 0, 500 * time.Millisecond},
		{2, 0, time.Second},
		{3, 0, 2 * time.Second},
		{4, 0, 4 * time.Second},
		{5, 0, 8 * time.Second},
		{6, 0, 10 * time.Second},
		{100, 0, 10 * time.Second},

		{1, 0.5, 750 * time.Millisecond},
		{2, 0.5, 1500 * time.Millisecond},
		{3, 0.5, 3 * time.Second},
		{4, 0.5, 6 * time.Second},
		{5, 0.5, 12 * time.Second},
		{6, 0.5, 15 * time.Second},
		{7, 0.5, 15 * time.Second},

		// c/2 + 0.999999 * c/2.
		{1, justUnderOne, 999999500 * time.Nanosecond},
		{2, justUnderOne, 1999999 * time.Microsecond},
		{3, justUnderOne, 3999998 * time.Microsecond},
		{4, justUnderOne, 7999996 * time.Microsecond},
		{5, justUnderOne, 15999992 * time.Microsecond},
		{6, justUnderOne, 19999990 * time.Microsecond},
		{math.MaxInt, justUnderOne, 19999990 * time.Microsecond},
	}
	for _, tt := range tests {
		s := backoff.EqualJitter{Rand: fixed(tt.r)}
		if got := s.Delay(tt.retry); got != tt.want {
			t.Errorf("EqualJitter{Rand: %v}.Delay(%d) = %v; want %v", tt.r, tt.retry, got, tt.want)
		}
	}
}

func TestEqualJitterOverrides(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.EqualJitter
		retry int
		want  time.Duration
	}{
		{"scaled", backoff.EqualJitter{Base: time.Millisecond, Max: 20 * time.Millisecond, Rand: fixed(0.5)}, 3, 3 * time.Millisecond},
		{"scaled_capped", backoff.EqualJitter{Base: time.Millisecond, Max: 20 * time.Millisecond, Rand: fixed(0.5)}, 9, 15 * time.Millisecond},
		{"negative_fields_are_defaults", backoff.EqualJitter{Base: -1, Max: -1, Rand: fixed(0.5)}, 2, 1500 * time.Millisecond},
		// An odd ceiling: 3ns splits into 1ns fixed and up to 2ns random.
		{"odd_ceiling_rand_zero", backoff.EqualJitter{Base: 3, Max: 3, Rand: fixed(0)}, 1, 1},
		{"odd_ceiling_rand_one", backoff.EqualJitter{Base: 3, Max: 3, Rand: fixed(1)}, 1, 3},
		{"retry_zero_is_one", backoff.EqualJitter{Rand: fixed(0.5)}, 0, 750 * time.Millisecond},
		{"retry_minint_is_one", backoff.EqualJitter{Rand: fixed(0.5)}, math.MinInt, 750 * time.Millisecond},
		{"nan_rand_is_zero", backoff.EqualJitter{Rand: fixed(math.NaN())}, 3, 2 * time.Second},
		{"infinite_rand_is_one", backoff.EqualJitter{Rand: fixed(math.Inf(1))}, 3, 4 * time.Second},
		{"largest_max", backoff.EqualJitter{Base: 1, Max: math.MaxInt64, Rand: fixed(1)}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("EqualJitter{Base: %v, Max: %v}.Delay(%d) = %v; want %v",
					tt.s.Base, tt.s.Max, tt.retry, got, tt.want)
			}
		})
	}
}

func TestEqualJitterDefaultRandInRange(t *testing.T) {
	var s backoff.EqualJitter
	for retry := 1; retry <= 8; retry++ {
		c := min(backoff.DefaultBase<<(retry-1), backoff.DefaultMaxBackoff)
		for range 100 {
			if got := s.Delay(retry); got < c/2 || got > c {
				t.Fatalf("EqualJitter{}.Delay(%d) = %v; want in [%v, %v]", retry, got, c/2, c)
			}
		}
	}
}

func FuzzEqualJitterDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), 0.5)
	f.Add(-1, int64(-1), int64(-1), -1.0)
	f.Add(64, int64(1), int64(math.MaxInt64), 1.0)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), math.NaN())
	f.Add(7, int64(3), int64(5), justUnderOne)
	f.Fuzz(func(t *testing.T, retry int, base, maxBackoff int64, r float64) {
		s := backoff.EqualJitter{Base: time.Duration(base), Max: time.Duration(maxBackoff), Rand: fixed(r)}
		limit := s.Max
		if limit <= 0 {
			limit = backoff.DefaultMaxBackoff
		}
		got := s.Delay(retry)
		if got < 0 || got > limit {
			t.Fatalf("EqualJitter{Base: %d, Max: %d, Rand: %v}.Delay(%d) = %d; want in [0, %d]",
				base, maxBackoff, r, retry, got, limit)
		}
		// Never below half of the FullJitter ceiling at the same settings.
		c := backoff.FullJitter{Base: s.Base, Max: s.Max, Rand: fixed(1)}.Delay(retry)
		if got < c/2 || got > c {
			t.Fatalf("EqualJitter{Base: %d, Max: %d, Rand: %v}.Delay(%d) = %d; want in [%d, %d]",
				base, maxBackoff, r, retry, got, c/2, c)
		}
	})
}
