package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func TestGrow(t *testing.T) {
	tests := []struct {
		name   string
		base   time.Duration
		factor float64
		steps  int
		limit  time.Duration
		want   time.Duration
	}{
		{"no_steps", time.Second, 2, 0, time.Minute, time.Second},
		{"negative_steps", time.Second, 2, -5, time.Minute, time.Second},
		{"doubling", time.Second, 2, 4, time.Minute, 16 * time.Second},
		{"doubling_capped", time.Second, 2, 6, time.Minute, time.Minute},
		{"doubling_huge_steps", 1, 2, math.MaxInt, math.MaxInt64, math.MaxInt64},
		{"doubling_exact_above_2p53", 1<<53 + 1, 2, 1, math.MaxInt64, 1<<54 + 2},
		{"one_and_a_half", 10 * time.Millisecond, 1.5, 3, time.Minute, 33750 * time.Microsecond},
		{"one_and_a_half_rounds", 10 * time.Millisecond, 1.5, 8, time.Minute, 256289063}, // 256289062.5ns
		{"factor_one", time.Second, 1, math.MaxInt, time.Minute, time.Second},
		{"float_huge_steps", time.Second, 1.5, math.MaxInt, time.Minute, time.Minute},
		{"float_product_above_maxint64", math.MaxInt64 / 2, 3, 1, math.MaxInt64, math.MaxInt64},
		{"infinite_factor", time.Second, math.Inf(1), 1, time.Minute, time.Minute},
		{"base_above_limit", time.Hour, 2, 0, time.Minute, time.Minute},
		{"zero_base", 0, 2, math.MaxInt, time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff.Grow(tt.base, tt.factor, tt.steps, tt.limit); got != tt.want {
				t.Errorf("grow(%d, %v, %d, %d) = %d; want %d", tt.base, tt.factor, tt.steps, tt.limit, got, tt.want)
			}
		})
	}
}
