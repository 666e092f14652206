package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func TestScaledJitterDefaults(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		// Rand 0 takes nothing off: the ceilings 10ms * 1.5^(n-1), capped at 20s.
		{1, 0, 10 * time.Millisecond},
		{2, 0, 15 * time.Millisecond},
		{3, 0, 22500 * time.Microsecond},
		{4, 0, 33750 * time.Microsecond},
		{5, 0, 50625 * time.Microsecond},
		{6, 0, 75937500 * time.Nanosecond},
		{7, 0, 113906250 * time.Nanosecond},
		{8, 0, 170859375 * time.Nanosecond},
		{9, 0, 256289063 * time.Nanosecond},    // 256289062.5ns, rounded
		{19, 0, 14778918800 * time.Nanosecond}, // 10ms * 1.5^18 = 14.7789188003...s
		{20, 0, 20 * time.Second},              // 22.17s capped
		{math.MaxInt, 0, 20 * time.Second},

		// Rand 0.5 takes half off; the truncated half goes to the jitter.
		{1, 0.5, 5 * time.Millisecond},
		{2, 0.5, 7500 * time.Microsecond},
		{3, 0.5, 11250 * time.Microsecond},
		{8, 0.5, 85429688 * time.Nanosecond}, // 170859375 - 85429687
		{20, 0.5, 10 * time.Second},

		// Rand 0.999999 leaves a millionth of the ceiling.
		{1, justUnderOne, 10 * time.Nanosecond},
		{2, justUnderOne, 15 * time.Nanosecond},
		{3, justUnderOne, 23 * time.Nanosecond}, // 22.5ns, the jitter's part truncated
		{20, justUnderOne, 20 * time.Microsecond},
		{1, 1, 0},
	}
	for _, tt := range tests {
		s := backoff.ScaledJitter{Rand: fixed(tt.r)}
		if got := s.Delay(tt.retry); got != tt.want {
			t.Errorf("ScaledJitter{Rand: %v}.Delay(%d) = %v; want %v", tt.r, tt.retry, got, tt.want)
		}
	}
}

func TestScaledJitterFields(t *testing.T) {
	tests := []struct {
		name  string
		s     backoff.ScaledJitter
		retry int
		want  time.Duration
	}{
		{"half_jitter_rand_half", backoff.ScaledJitter{Jitter: 0.5, Rand: fixed(0.5)}, 1, 7500 * time.Microsecond},
		{"half_jitter_rand_zero", backoff.ScaledJitter{Jitter: 0.5, Rand: fixed(0)}, 20, 20 * time.Second},
		{"half_jitter_capped", backoff.ScaledJitter{Jitter: 0.5, Rand: fixed(0.5)}, 30, 15 * time.Second},
		{"half_jitter_just_under_one", backoff.ScaledJitter{Jitter: 0.5, Rand: fixed(justUnderOne)}, 1, 5000005 * time.Nanosecond},
		{"jitter_above_one_is_one", backoff.ScaledJitter{Jitter: 2, Rand: fixed(0.5)}, 1, 5 * time.Millisecond},
		{"negative_jitter_is_full", backoff.ScaledJitter{Jitter: -0.5, Rand: fixed(0.5)}, 1, 5 * time.Millisecond},
		{"nan_jitter_is_full", backoff.ScaledJitter{Jitter: math.NaN(), Rand: fixed(0.5)}, 1, 5 * time.Millisecond},
		{"no_jitter", backoff.ScaledJitter{NoJitter: true, Rand: fixed(0.5)}, 3, 22500 * time.Microsecond},
		{"no_jitter_overrides_jitter", backoff.ScaledJitter{Jitter: 0.5, NoJitter: true, Rand: fixed(0.5)}, 1, 10 * time.Millisecond},
		{"factor_two", backoff.ScaledJitter{InitialDelay: time.Second, ScaleFactor: 2, NoJitter: true}, 5, 16 * time.Second},
		{"factor_two_capped", backoff.ScaledJitter{InitialDelay: time.Second, ScaleFactor: 2, NoJitter: true}, 6, 20 * time.Second},
		{"factor_three_custom_cap", backoff.ScaledJitter{InitialDelay: time.Second, ScaleFactor: 3, MaxBackoff: 10 * time.Second, NoJitter: true}, 3, 9 * time.Second},
		{"factor_below_one_is_one", backoff.ScaledJitter{ScaleFactor: 0.5, NoJitter: true}, 50, 10 * time.Millisecond},
		{"negative_factor_is_default", backoff.ScaledJitter{ScaleFactor: -2, NoJitter: true}, 3, 22500 * time.Microsecond},
		{"nan_factor_is_default", backoff.ScaledJitter{ScaleFactor: math.NaN(), NoJitter: true}, 3, 22500 * time.Microsecond},
		{"infinite_factor", backoff.ScaledJitter{ScaleFactor: math.Inf(1), NoJitter: true}, 2, 20 * time.Second},
		{"infinite_factor_retry_one", backoff.ScaledJitter{ScaleFactor: math.Inf(1), NoJitter: true}, 1, 10 * time.Millisecond},
		{"negative_fields_are_defaults", backoff.ScaledJitter{InitialDelay: -1, MaxBackoff: -1, NoJitter: true}, 2, 15 * time.Millisecond},
		{"initial_above_max", backoff.ScaledJitter{InitialDelay: time.Minute, NoJitter: true}, 1, 20 * time.Second},
		{"retry_below_one_is_one", backoff.ScaledJitter{NoJitter: true}, math.MinInt, 10 * time.Millisecond},
		{"largest_max", backoff.ScaledJitter{InitialDelay: 1, MaxBackoff: math.MaxInt64, NoJitter: true}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.retry); got != tt.want {
				t.Errorf("ScaledJitter{InitialDelay: %v, ScaleFactor: %v, MaxBackoff: %v, Jitter: %v, NoJitter: %t}.Delay(%d) = %v; want %v",
					tt.s.InitialDelay, tt.s.ScaleFactor, tt.s.MaxBackoff, tt.s.Jitter, tt.s.NoJitter, tt.retry, got, tt.want)
			}
		})
	}
}

func TestScaledJitterNoJitterSkipsRand(t *testing.T) {
	rand, calls := sequence(0.5)
	backoff.ScaledJitter{NoJitter: true, Rand: rand}.Delay(3)
	if *calls != 0 {
		t.Errorf("ScaledJitter{NoJitter: true}.Delay(3) called Rand %d times; want 0", *calls)
	}
}

func TestScaledJitterCeilingNeverShrinks(t *testing.T) {
	for _, factor := range []float64{1, 1.0001, 1.5, 2, 3.7} {
		s := backoff.ScaledJitter{InitialDelay: time.Nanosecond, ScaleFactor: factor, MaxBackoff: math.MaxInt64, NoJitter: true}
		prev := s.Delay(1)
		for retry := 2; retry <= 2000; retry++ {
			got := s.Delay(retry)
			if got < prev {
				t.Fatalf("ScaledJitter{ScaleFactor: %v}: Delay(%d) = %d < Delay(%d) = %d", factor, retry, got, retry-1, prev)
			}
			prev = got
		}
	}
}

func FuzzScaledJitterDelay(f *testing.F) {
	f.Add(1, int64(0), 0.0, int64(0), 0.0, false, 0.5)
	f.Add(-1, int64(-1), -1.0, int64(-1), -1.0, false, -1.0)
	f.Add(math.MaxInt, int64(1), math.Inf(1), int64(math.MaxInt64), math.NaN(), true, math.NaN())
	f.Add(200, int64(math.MaxInt64), 1.0000001, int64(math.MaxInt64), 2.0, false, justUnderOne)
	f.Add(40, int64(time.Millisecond), math.NaN(), int64(time.Second), 0.5, false, 1.0)
	f.Fuzz(func(t *testing.T, retry int, initial int64, factor float64, maxBackoff int64, jitter float64, noJitter bool, r float64) {
		s := backoff.ScaledJitter{
			InitialDelay: time.Duration(initial),
			ScaleFactor:  factor,
			MaxBackoff:   time.Duration(maxBackoff),
			Jitter:       jitter,
			NoJitter:     noJitter,
			Rand:         fixed(r),
		}
		limit := s.MaxBackoff
		if limit <= 0 {
			limit = backoff.DefaultMaxBackoff
		}
		if got := s.Delay(retry); got < 0 || got > limit {
			t.Fatalf("%+v.Delay(%d) = %d; want in [0, %d]", s, retry, got, limit)
		}
	})
}
