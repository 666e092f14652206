package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func TestExponentialDefaults(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		// d = 8s at Rand 0: 1s, 1+1*8, 1+3*8, 1+7*8 capped at 30s.
		{1, 0, time.Second},
		{2, 0, 9 * time.Second},
		{3, 0, 25 * time.Second},
		{4, 0, 30 * time.Second},

		// d = 10s at Rand 0.5: 1s, 11s, 31s capped at 30s.
		{1, 0.5, time.Second},
		{2, 0.5, 11 * time.Second},
		{3, 0.5, 30 * time.Second},
		{10, 0.5, 30 * time.Second},
		{math.MaxInt, 0.5, 30 * time.Second},

		// d = 10s * (0.8 + 0.4*0.999999) = 11.999996s.
		{1, justUnderOne, time.Second},
		{2, justUnderOne, 12999996 * time.Microsecond},
		{3, justUnderOne, 30 * time.Second},
	}
	for _, tt := range tests {
		s := backoff.Exponential{Rand: fixed(tt.r)}
		if got := s.Delay(tt.retry); got != tt.want {
			t.Errorf("Exponential{Rand: %v}.Delay(%d) = %v; want %v", tt.r, tt.retry, got, tt.want)
		}
	}
}

// storage is the Azure Storage client's exponential policy (docs/azure.md):
// MinBackoff 3s, MaxBackoff 30s, DeltaBackoff 4s, no fast first retry.
func storage(r float64) backoff.Exponential {
	return backoff.Exponential{
		MinBackoff:   3 * time.Second,
		MaxBackoff:   30 * time.Second,
		DeltaBackoff: 4 * time.Second,
		Rand:         fixed(r),
	}
}

func TestExponentialStoragePresetThreeSevenFifteen(t *testing.T) {
	tests := []struct {
		r    float64
		want []time.Duration // retries 1 to 3
	}{
		// The guide's "about 3, 7, 15 s": 3 + (2^k - 1) * 4s for k = 0, 1, 2.
		{0.5, []time.Duration{3 * time.Second, 7 * time.Second, 15 * time.Second}},
		// d = 3.2s: 3, 6.2, 12.6.
		{0, []time.Duration{3 * time.Second, 6200 * time.Millisecond, 12600 * time.Millisecond}},
		// d = 4s * 1.1999996 = 4.7999984s: 3, 7.7999984, 3 + 3*4.7999984.
		{justUnderOne, []time.Duration{3 * time.Second, 7799998400 * time.Nanosecond, 17399995200 * time.Nanosecond}},
	}
	for _, tt := range tests {
		s := storage(tt.r)
		for i, want := range tt.want {
			if got := s.Delay(i + 1); got != want {
				t.Errorf("storage Exponential{Rand: %v}.Delay(%d) = %v; want %v", tt.r, i+1, got, want)
			}
		}
	}
}

func TestExponentialBackgroundSuggestion(t *testing.T) {
	// The guide's background suggestion: min 0, max 60s, delta 2s, five
	// retries, "about 2, 6, 14, 30 s" after an immediate first retry.
	s := backoff.Exponential{NoMinBackoff: true, MaxBackoff: time.Minute, DeltaBackoff: 2 * time.Second, Rand: fixed(0.5)}
	want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second, time.Minute}
	for i, w := range want {
		if got := s.Delay(i + 1); got != w {
			t.Errorf("Exponential{NoMinBackoff, 60s, 2s}.Delay(%d) = %v; want %v", i+1, got, w)
		}
	}
}

func TestExponentialFields(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.Exponential
		retry int
		want  time.Duration
	}{
		{"fast_first_retry", backoff.Exponential{FastFirstRetry: true, Rand: fixed(0.5)}, 1, 0},
		{"fast_first_retry_does_not_shift", backoff.Exponential{FastFirstRetry: true, Rand: fixed(0.5)}, 2, 11 * time.Second},
		{"fast_first_retry_retry_zero", backoff.Exponential{FastFirstRetry: true, Rand: fixed(0.5)}, 0, 0},
		{"no_min_backoff_overrides_min", backoff.Exponential{MinBackoff: 5 * time.Second, NoMinBackoff: true, Rand: fixed(0.5)}, 2, 10 * time.Second},
		{"min_above_max", backoff.Exponential{MinBackoff: 40 * time.Second, Rand: fixed(0.5)}, 1, 30 * time.Second},
		{"negative_fields_are_defaults", backoff.Exponential{MinBackoff: -1, MaxBackoff: -1, DeltaBackoff: -1, Rand: fixed(0.5)}, 2, 11 * time.Second},
		{"retry_minint_is_one", backoff.Exponential{Rand: fixed(0.5)}, math.MinInt, time.Second},
		{"nan_rand_is_zero", backoff.Exponential{Rand: fixed(math.NaN())}, 2, 9 * time.Second},
		{"huge_delta", backoff.Exponential{DeltaBackoff: math.MaxInt64, Rand: fixed(1)}, 2, 30 * time.Second},
		{"largest_max", backoff.Exponential{MaxBackoff: math.MaxInt64, Rand: fixed(1)}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("Exponential{MinBackoff: %v, MaxBackoff: %v, DeltaBackoff: %v, NoMinBackoff: %t, FastFirstRetry: %t}.Delay(%d) = %v; want %v",
					tt.s.MinBackoff, tt.s.MaxBackoff, tt.s.DeltaBackoff, tt.s.NoMinBackoff, tt.s.FastFirstRetry, tt.retry, got, tt.want)
			}
		})
	}
}

func FuzzExponentialDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), int64(0), false, false, 0.5)
	f.Add(-1, int64(-1), int64(-1), int64(-1), true, true, -1.0)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), false, false, math.NaN())
	f.Add(64, int64(1), int64(math.MaxInt64), int64(math.MaxInt64), true, false, 1.0)
	f.Fuzz(func(t *testing.T, retry int, minBackoff, maxBackoff, delta int64, noMin, fast bool, r float64) {
		s := backoff.Exponential{
			MinBackoff:     time.Duration(minBackoff),
			MaxBackoff:     time.Duration(maxBackoff),
			DeltaBackoff:   time.Duration(delta),
			NoMinBackoff:   noMin,
			FastFirstRetry: fast,
			Rand:           fixed(r),
		}
		limit := s.MaxBackoff
		if limit <= 0 {
			limit = 30 * time.Second
		}
		if got := s.Delay(retry); got < 0 || got > limit {
			t.Fatalf("%+v.Delay(%d) = %d; want in [0, %d]", s, retry, got, limit)
		}
	})
}

func TestIncremental(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.Incremental
		retry int
		want  time.Duration
	}{
		{"default_retry1", backoff.Incremental{}, 1, time.Second},
		{"default_retry2", backoff.Incremental{}, 2, 2 * time.Second},
		{"default_retry10", backoff.Incremental{}, 10, 10 * time.Second},
		{"fast_first_retry", backoff.Incremental{FastFirstRetry: true}, 1, 0},
		{"fast_first_retry_does_not_shift", backoff.Incremental{FastFirstRetry: true}, 2, 2 * time.Second},
		{"custom", backoff.Incremental{Initial: 500 * time.Millisecond, Increment: 250 * time.Millisecond}, 3, time.Second},
		{"negative_fields_are_defaults", backoff.Incremental{Initial: -1, Increment: -1}, 3, 3 * time.Second},
		{"retry_below_one_is_one", backoff.Incremental{}, math.MinInt, time.Second},
		{"saturates", backoff.Incremental{}, math.MaxInt, math.MaxInt64},
		{"largest_initial", backoff.Incremental{Initial: math.MaxInt64}, 2, math.MaxInt64},
		{"largest_increment", backoff.Incremental{Increment: math.MaxInt64}, 2, math.MaxInt64},
		{"just_fits", backoff.Incremental{Initial: math.MaxInt64 - 2, Increment: 1}, 3, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("Incremental{Initial: %v, Increment: %v, FastFirstRetry: %t}.Delay(%d) = %v; want %v",
					tt.s.Initial, tt.s.Increment, tt.s.FastFirstRetry, tt.retry, got, tt.want)
			}
		})
	}
}

func FuzzIncrementalDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), false)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), true)
	f.Add(math.MinInt, int64(-1), int64(-1), true)
	f.Fuzz(func(t *testing.T, retry int, initial, increment int64, fast bool) {
		s := backoff.Incremental{Initial: time.Duration(initial), Increment: time.Duration(increment), FastFirstRetry: fast}
		got := s.Delay(retry)
		if got < 0 {
			t.Fatalf("%+v.Delay(%d) = %d; want >= 0", s, retry, got)
		}
		if retry < math.MaxInt {
			if next := s.Delay(retry + 1); next < got {
				t.Fatalf("%+v: Delay(%d) = %d < Delay(%d) = %d", s, retry+1, next, retry, got)
			}
		}
	})
}

func TestConstant(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.Constant
		retry int
		want  time.Duration
	}{
		{"default", backoff.Constant{}, 1, time.Second},
		{"default_later", backoff.Constant{}, math.MaxInt, time.Second},
		{"custom", backoff.Constant{Interval: 500 * time.Millisecond}, 3, 500 * time.Millisecond},
		{"fast_first_retry", backoff.Constant{Interval: 500 * time.Millisecond, FastFirstRetry: true}, 1, 0},
		{"fast_first_retry_retry_zero", backoff.Constant{FastFirstRetry: true}, math.MinInt, 0},
		{"fast_first_retry_later", backoff.Constant{Interval: 500 * time.Millisecond, FastFirstRetry: true}, 2, 500 * time.Millisecond},
		{"negative_is_default", backoff.Constant{Interval: -time.Second}, 2, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("Constant{Interval: %v, FastFirstRetry: %t}.Delay(%d) = %v; want %v",
					tt.s.Interval, tt.s.FastFirstRetry, tt.retry, got, tt.want)
			}
		})
	}
}

func FuzzConstantDelay(f *testing.F) {
	f.Add(1, int64(0), false)
	f.Add(math.MinInt, int64(-1), true)
	f.Add(math.MaxInt, int64(math.MaxInt64), true)
	f.Fuzz(func(t *testing.T, retry int, interval int64, fast bool) {
		s := backoff.Constant{Interval: time.Duration(interval), FastFirstRetry: fast}
		want := s.Interval
		if want <= 0 {
			want = time.Second
		}
		if got := s.Delay(retry); got != want && (got != 0 || !fast || retry > 1) {
			t.Fatalf("%+v.Delay(%d) = %d; want %d", s, retry, got, want)
		}
	})
}
