package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// constantFunc returns a Func that always returns d, even a negative d.
func constantFunc(d time.Duration) backoff.Func {
	return func(int) time.Duration { return d }
}

func TestCapped(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.Capped
		retry int
		want  time.Duration
	}{
		{"below_cap", backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}, 3, 3 * time.Second},
		{"at_cap", backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}, 5, 5 * time.Second},
		{"above_cap", backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}, 6, 5 * time.Second},
		{"huge_retry", backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}, math.MaxInt, 5 * time.Second},
		{"zero_max_is_default", backoff.Capped{Strategy: constantFunc(time.Hour)}, 1, backoff.DefaultMaxBackoff},
		{"negative_max_is_default", backoff.Capped{Strategy: constantFunc(time.Hour), Max: -1}, 1, backoff.DefaultMaxBackoff},
		{"lowers_an_inner_cap", backoff.Capped{Strategy: backoff.FullJitter{Rand: fixed(1)}, Max: 3 * time.Second}, 3, 3 * time.Second},
		{"negative_inner_is_zero", backoff.Capped{Strategy: constantFunc(-time.Second)}, 1, 0},
		{"largest_inner", backoff.Capped{Strategy: constantFunc(math.MaxInt64), Max: math.MaxInt64}, 1, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("Capped{%T, Max: %v}.Delay(%d) = %v; want %v", tt.s.Strategy, tt.s.Max, tt.retry, got, tt.want)
			}
		})
	}
}

func TestCappedPassesRetryUnchanged(t *testing.T) {
	var seen int
	s := backoff.Capped{Strategy: backoff.Func(func(retry int) time.Duration { seen = retry; return 0 })}
	s.Delay(-7)
	if seen != -7 {
		t.Errorf("Capped.Delay(-7) called the strategy with %d; want -7", seen)
	}
}

func TestCappedNilStrategyIsFullJitter(t *testing.T) {
	for retry := 1; retry <= 10; retry++ {
		got := backoff.Capped{Max: time.Hour}.Delay(retry)
		if ceiling := min(backoff.DefaultBase<<(retry-1), backoff.DefaultMaxBackoff); got < 0 || got > ceiling {
			t.Fatalf("Capped{Max: 1h}.Delay(%d) = %v; want in [0, %v] as for FullJitter{}", retry, got, ceiling)
		}
	}
}

func FuzzCappedDelay(f *testing.F) {
	f.Add(1, int64(time.Hour), int64(0))
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(math.MinInt, int64(math.MinInt64), int64(-1))
	f.Fuzz(func(t *testing.T, retry int, inner, maxDelay int64) {
		s := backoff.Capped{Strategy: constantFunc(time.Duration(inner)), Max: time.Duration(maxDelay)}
		limit := s.Max
		if limit <= 0 {
			limit = backoff.DefaultMaxBackoff
		}
		want := min(max(time.Duration(inner), 0), limit)
		if got := s.Delay(retry); got != want {
			t.Fatalf("Capped{Func(%d), Max: %d}.Delay(%d) = %d; want %d", inner, maxDelay, retry, got, want)
		}
	})
}

func TestJittered(t *testing.T) {
	second := backoff.Constant{Interval: time.Second}
	tests := []struct {
		name string
		s    backoff.Jittered
		want time.Duration // retry 1
	}{
		{"full_rand_zero", backoff.Jittered{Strategy: second, Rand: fixed(0)}, time.Second},
		{"full_rand_half", backoff.Jittered{Strategy: second, Rand: fixed(0.5)}, 500 * time.Millisecond},
		{"full_rand_just_under_one", backoff.Jittered{Strategy: second, Rand: fixed(justUnderOne)}, 1000 * time.Nanosecond},
		{"full_rand_one", backoff.Jittered{Strategy: second, Rand: fixed(1)}, 0},
		{"tenth_rand_half", backoff.Jittered{Strategy: second, Fraction: 0.1, Rand: fixed(0.5)}, 950 * time.Millisecond},
		{"tenth_rand_one", backoff.Jittered{Strategy: second, Fraction: 0.1, Rand: fixed(1)}, 900 * time.Millisecond},
		{"fraction_above_one_is_one", backoff.Jittered{Strategy: second, Fraction: 3, Rand: fixed(0.5)}, 500 * time.Millisecond},
		{"negative_fraction_is_full", backoff.Jittered{Strategy: second, Fraction: -1, Rand: fixed(0.5)}, 500 * time.Millisecond},
		{"nan_fraction_is_full", backoff.Jittered{Strategy: second, Fraction: math.NaN(), Rand: fixed(0.5)}, 500 * time.Millisecond},
		{"nan_rand_is_zero", backoff.Jittered{Strategy: second, Rand: fixed(math.NaN())}, time.Second},
		{"negative_inner_is_zero", backoff.Jittered{Strategy: constantFunc(-time.Second), Rand: fixed(0.5)}, 0},
		// float64(MaxInt64) is 2^63, half of it 2^62.
		{"largest_inner", backoff.Jittered{Strategy: constantFunc(math.MaxInt64), Rand: fixed(0.5)}, 1<<62 - 1},
		{"largest_inner_rand_one", backoff.Jittered{Strategy: constantFunc(math.MaxInt64), Rand: fixed(1)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(1); got != tt.want {
				t.Errorf("Jittered{%T, Fraction: %v}.Delay(1) = %v; want %v", tt.s.Strategy, tt.s.Fraction, got, tt.want)
			}
		})
	}
}

func TestJitteredKeepsInnerCap(t *testing.T) {
	// Jittering never lengthens a delay, so the cap of the inner strategy holds.
	s := backoff.Jittered{Strategy: backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}, Fraction: 0.2, Rand: fixed(0.5)}
	want := []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond, 2700 * time.Millisecond, 3600 * time.Millisecond, 4500 * time.Millisecond, 4500 * time.Millisecond}
	for i, w := range want {
		if got := s.Delay(i + 1); got != w {
			t.Errorf("Jittered{Capped{Incremental{}, 5s}, 0.2}.Delay(%d) = %v; want %v", i+1, got, w)
		}
	}
}

func TestJitteredNilStrategyIsFullJitter(t *testing.T) {
	for retry := 1; retry <= 10; retry++ {
		got := backoff.Jittered{Fraction: 0.5}.Delay(retry)
		if ceiling := min(backoff.DefaultBase<<(retry-1), backoff.DefaultMaxBackoff); got < 0 || got > ceiling {
			t.Fatalf("Jittered{}.Delay(%d) = %v; want in [0, %v] as for FullJitter{}", retry, got, ceiling)
		}
	}
}

func FuzzJitteredDelay(f *testing.F) {
	f.Add(1, int64(time.Second), 0.0, 0.5)
	f.Add(math.MaxInt, int64(math.MaxInt64), 1.0, justUnderOne)
	f.Add(math.MinInt, int64(math.MinInt64), math.NaN(), math.NaN())
	f.Add(3, int64(1), math.Inf(1), math.Inf(-1))
	f.Fuzz(func(t *testing.T, retry int, inner int64, fraction, r float64) {
		s := backoff.Jittered{Strategy: constantFunc(time.Duration(inner)), Fraction: fraction, Rand: fixed(r)}
		ceiling := max(time.Duration(inner), 0)
		if got := s.Delay(retry); got < 0 || got > ceiling {
			t.Fatalf("Jittered{Func(%d), Fraction: %v, Rand: %v}.Delay(%d) = %d; want in [0, %d]",
				inner, fraction, r, retry, got, ceiling)
		}
	})
}
