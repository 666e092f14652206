package secs

import (
	"math"
	"testing"
	"time"
)

func TestCeilAndRound(t *testing.T) {
	tests := []struct {
		s           float64
		ceil, round time.Duration
	}{
		{0, 0, 0},
		{1.5e-9, 2, 2},
		{1.4e-9, 2, 1},
		{2.5, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{1e300, math.MaxInt64, math.MaxInt64},
		{math.Inf(1), math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := Ceil(tt.s); got != tt.ceil {
			t.Errorf("Ceil(%v) = %v; want %v", tt.s, got, tt.ceil)
		}
		if got := Round(tt.s); got != tt.round {
			t.Errorf("Round(%v) = %v; want %v", tt.s, got, tt.round)
		}
	}
}
