package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func TestDrawClamps(t *testing.T) {
	tests := []struct {
		r, want float64
	}{
		{0, 0},
		{0.25, 0.25},
		{justUnderOne, justUnderOne},
		{1, 1},
		{1.5, 1},
		{math.Inf(1), 1},
		{-0.5, 0},
		{math.Inf(-1), 0},
		{math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := backoff.Draw(fixed(tt.r)); got != tt.want {
			t.Errorf("draw(%v) = %v; want %v", tt.r, got, tt.want)
		}
	}
	for range 100 {
		if got := backoff.Draw(nil); got < 0 || got >= 1 {
			t.Fatalf("draw(nil) = %v; want in [0, 1)", got)
		}
	}
}

func TestFromFloat(t *testing.T) {
	tests := []struct {
		name  string
		ns    float64
		limit time.Duration
		want  time.Duration
	}{
		{"rounds_down", 1.4, time.Second, 1},
		{"rounds_half_up", 2.5, time.Second, 3},
		{"zero", 0, time.Second, 0},
		{"negative", -5, time.Second, 0},
		{"negative_infinity", math.Inf(-1), time.Second, 0},
		{"at_limit", 1e9, time.Second, time.Second},
		{"above_limit", 2e9, time.Second, time.Second},
		{"infinity", math.Inf(1), time.Second, time.Second},
		{"nan", math.NaN(), time.Second, time.Second},
		// float64(MaxInt64) is 2^63, one above MaxInt64: never converted.
		{"two_to_the_63", math.Exp2(63), math.MaxInt64, math.MaxInt64},
		{"huge", 1e300, math.MaxInt64, math.MaxInt64},
		{"just_below_two_to_the_63", math.Nextafter(math.Exp2(63), 0), math.MaxInt64, math.MaxInt64 - 1023},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff.FromFloat(tt.ns, tt.limit); got != tt.want {
				t.Errorf("fromFloat(%v, %d) = %d; want %d", tt.ns, tt.limit, got, tt.want)
			}
		})
	}
}
