package svgplot

import (
	"fmt"
	"math"
)

// TickStep returns a step of 1, 2 or 5 times a power of ten that divides
// [0, span] into at most n intervals: the smallest such step, up to a
// relative 1e-9 that absorbs the rounding of span/n. A span that is not
// positive gets 1.
func TickStep(span float64, n int) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// TickLabel formats the tick value v with as many decimals as its step
// needs: none for a step of 1 or more, one for 0.5, two for 0.05.
func TickLabel(v, step float64) string {
	return fmt.Sprintf("%.*f", max(0, int(math.Ceil(-math.Log10(step)-1e-9))), v)
}
