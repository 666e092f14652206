package svgplot_test

import (
	"math"
	"testing"

	"github.com/retrytransport/retrytransport/internal/svgplot"
)

// TestTickStep checks the axis steps: 1, 2 or 5 times a power of ten.
func TestTickStep(t *testing.T) {
	type step struct {
		span float64
		n    int
		want float64
	}
	for _, tc := range []step{
		{10, 10, 1}, {1.5, 10, 0.2}, {230, 5, 50}, {1000, 5, 200}, {0, 5, 1}, {3, 5, 1},
		{260, 6, 50}, {0.6, 6, 0.1}, {9.5, 1, 10},
	} {
		if got := svgplot.TickStep(tc.span, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("TickStep(%v, %d) = %v; want %v", tc.span, tc.n, got, tc.want)
		}
	}
}

func TestTickLabel(t *testing.T) {
	for _, tc := range []struct {
		v, step float64
		want    string
	}{
		{200, 50, "200"}, {1, 1, "1"}, {1.5, 0.5, "1.5"}, {0.2, 0.2, "0.2"}, {0.15, 0.05, "0.15"},
	} {
		if got := svgplot.TickLabel(tc.v, tc.step); got != tc.want {
			t.Errorf("TickLabel(%v, %v) = %q; want %q", tc.v, tc.step, got, tc.want)
		}
	}
}
