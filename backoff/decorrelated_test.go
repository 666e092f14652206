package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// sequence returns a Rand hook that yields rs in turn, then repeats the
// last one, and a pointer to the number of calls made.
func sequence(rs ...float64) (func() float64, *int) {
	calls := new(int)
	return func() float64 {
		r := rs[min(*calls, len(rs)-1)]
		*calls++
		return r
	}, calls
}

func TestDecorrelatedDefaults(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		// Rand 0 draws the bottom of every range: Base, always.
		{1, 0, time.Second},
		{2, 0, time.Second},
		{100, 0, time.Second},

		// sleep = 1s + 0.5*(3*prev - 1s): 2, 3.5, 5.75, 9.125, 14.1875,
		// then 21.78125 capped at 20, and 1 + 0.5*59 = 30.5 capped again.
		{1, 0.5, 2 * time.Second},
		{2, 0.5, 3500 * time.Millisecond},
		{3, 0.5, 5750 * time.Millisecond},
		{4, 0.5, 9125 * time.Millisecond},
		{5, 0.5, 14187500 * time.Microsecond},
		{6, 0.5, 20 * time.Second},
		{7, 0.5, 20 * time.Second},
		{math.MaxInt, 0.5, 20 * time.Second},

		// sleep_1 = 1 + 0.999999*2 = 2.999998s;
		// sleep_2 = 1 + 0.999999*(8.999994 - 1) = 8.999986000006s;
		// sleep_3 = 1 + 0.999999*(26.999958000018 - 1) capped at 20s.
		{1, justUnderOne, 2999998 * time.Microsecond},
		{2, justUnderOne, 8999986000 * time.Nanosecond},
		{3, justUnderOne, 20 * time.Second},

		{1, 1, 3 * time.Second},
		{2, 1, 9 * time.Second},
		{3, 1, 20 * time.Second},
	}
	for _, tt := range tests {
		s := backoff.Decorrelated{Rand: fixed(tt.r)}
		if got := s.Delay(tt.retry); got != tt.want {
			t.Errorf("Decorrelated{Rand: %v}.Delay(%d) = %v; want %v", tt.r, tt.retry, got, tt.want)
		}
	}
}

func TestDecorrelatedChainUsesPreviousSleep(t *testing.T) {
	tests := []struct {
		name  string
		rs    []float64
		retry int
		want  time.Duration
	}{
		// 3s, then 1 + 0.5*(9 - 1) = 5s.
		{"range_from_previous", []float64{1, 0.5}, 2, 5 * time.Second},
		// 3, 9, 27 capped at 20, then 1 + 0.25*(3*20 - 1) = 15.75s: the
		// range is three times the capped sleep, not the uncapped one.
		{"previous_is_capped", []float64{1, 1, 1, 0.25}, 4, 15750 * time.Millisecond},
		// A low draw pulls the chain back down: 3s, then 1s, then 1 + 0.5*2.
		{"falls_back", []float64{1, 0, 0.5}, 3, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rand, _ := sequence(tt.rs...)
			s := backoff.Decorrelated{Rand: rand}
			if got := s.Delay(tt.retry); got != tt.want {
				t.Errorf("Decorrelated{Rand: %v...}.Delay(%d) = %v; want %v", tt.rs, tt.retry, got, tt.want)
			}
		})
	}
}

func TestDecorrelatedDrawsAreBounded(t *testing.T) {
	tests := []struct {
		retry int
		want  int
	}{
		{-5, 1},
		{0, 1},
		{1, 1},
		{10, 10},
		{backoff.DecorrelatedMaxDraws, backoff.DecorrelatedMaxDraws},
		{backoff.DecorrelatedMaxDraws + 1, backoff.DecorrelatedMaxDraws},
		{math.MaxInt, backoff.DecorrelatedMaxDraws},
	}
	for _, tt := range tests {
		rand, calls := sequence(0.5)
		backoff.Decorrelated{Rand: rand}.Delay(tt.retry)
		if *calls != tt.want {
			t.Errorf("Decorrelated.Delay(%d) called Rand %d times; want %d", tt.retry, *calls, tt.want)
		}
	}
}

func TestDecorrelatedOverrides(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.Decorrelated
		retry int
		want  time.Duration
	}{
		{"base_above_max", backoff.Decorrelated{Base: 30 * time.Second, Max: 20 * time.Second, Rand: fixed(0)}, 1, 20 * time.Second},
		{"base_equals_max", backoff.Decorrelated{Base: time.Second, Max: time.Second, Rand: fixed(0.5)}, 5, time.Second},
		{"scaled", backoff.Decorrelated{Base: time.Millisecond, Max: 20 * time.Millisecond, Rand: fixed(0.5)}, 3, 5750 * time.Microsecond},
		{"negative_fields_are_defaults", backoff.Decorrelated{Base: -1, Max: -1, Rand: fixed(0.5)}, 2, 3500 * time.Millisecond},
		{"nan_rand_is_zero", backoff.Decorrelated{Rand: fixed(math.NaN())}, 9, time.Second},
		{"huge_fields", backoff.Decorrelated{Base: math.MaxInt64 / 2, Max: math.MaxInt64, Rand: fixed(1)}, 2, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("Decorrelated{Base: %v, Max: %v}.Delay(%d) = %v; want %v",
					tt.s.Base, tt.s.Max, tt.retry, got, tt.want)
			}
		})
	}
}

func TestDecorrelatedDefaultRandInRange(t *testing.T) {
	var s backoff.Decorrelated
	for retry := 1; retry <= 100; retry++ {
		if got := s.Delay(retry); got < backoff.DefaultBase || got > backoff.DefaultMaxBackoff {
			t.Fatalf("Decorrelated{}.Delay(%d) = %v; want in [%v, %v]",
				retry, got, backoff.DefaultBase, backoff.DefaultMaxBackoff)
		}
	}
}

func FuzzDecorrelatedDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), 0.5)
	f.Add(-1, int64(-1), int64(-1), -1.0)
	f.Add(64, int64(1), int64(math.MaxInt64), 1.0)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), math.NaN())
	f.Add(3, int64(30*time.Second), int64(20*time.Second), justUnderOne)
	f.Fuzz(func(t *testing.T, retry int, base, maxBackoff int64, r float64) {
		s := backoff.Decorrelated{Base: time.Duration(base), Max: time.Duration(maxBackoff), Rand: fixed(r)}
		lo, limit := s.Base, s.Max
		if lo <= 0 {
			lo = backoff.DefaultBase
		}
		if limit <= 0 {
			limit = backoff.DefaultMaxBackoff
		}
		got := s.Delay(retry)
		if got < min(lo, limit) || got > limit {
			t.Fatalf("Decorrelated{Base: %d, Max: %d, Rand: %v}.Delay(%d) = %d; want in [%d, %d]",
				base, maxBackoff, r, retry, got, min(lo, limit), limit)
		}
	})
}
