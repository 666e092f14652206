package main

import (
	"slices"
	"strings"
	"testing"
)

// fakeThrottledRuns returns one run per goodput, with the 429 share and
// connections of the same index.
func fakeThrottledRuns(goodputs, shares []float64, conns []int64) []throttledRun {
	rs := make([]throttledRun, len(goodputs))
	for i := range rs {
		rs[i] = throttledRun{goodput: goodputs[i], share429: shares[i], conns: conns[i], requests: 100, failed: 90}
	}
	return rs
}

// TestThrottledGoals checks that the throttled goals hold our worst run
// against the median of the peer with the lowest median 429 share, and our
// most connections against the bare transport's fewest: a good median of
// ours cannot hide a bad run, and the peer's best run is not the bar.
func TestThrottledGoals(t *testing.T) {
	cs := []contender{{name: "bare", kind: kindBare}, {name: "ours", kind: kindOurs},
		{name: "hammer", kind: kindPeer}, {name: "gentle", kind: kindPeer}}
	bare := fakeThrottledRuns([]float64{202, 202, 202}, []float64{0.99, 0.99, 0.99}, []int64{16, 17, 16})
	hammer := fakeThrottledRuns([]float64{202, 202, 202}, []float64{0.98, 0.99, 0.97}, []int64{900, 900, 900})
	// Median goodput 50/s, median 429 share 3 %; its best run, 200/s, is
	// not the bar.
	gentle := fakeThrottledRuns([]float64{30, 200, 50}, []float64{0.03, 0.05, 0.02}, []int64{16, 16, 16})
	tests := []struct {
		name     string
		goodputs []float64
		shares   []float64
		conns    []int64
		want     []bool // goodput, 429 share, connections
	}{
		{"worstRunsClearTheMedian", []float64{60, 195, 194}, []float64{0.01, 0.02, 0.03}, []int64{16, 32, 20}, []bool{true, true, true}},
		{"oneBadRunMisses", []float64{195, 40, 194}, []float64{0.01, 0.04, 0.01}, []int64{16, 33, 16}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := fakeThrottledRuns(tt.goodputs, tt.shares, tt.conns)
			goals, info := throttledGoals(cs, [][]throttledRun{bare, ours, hammer, gentle})
			var got []bool
			for _, g := range goals {
				got = append(got, g.met)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("throttledGoals(ours %v, %v, %v) met = %v; want %v\n%v", tt.goodputs, tt.shares, tt.conns, got, tt.want, goals)
			}
			for i, want := range []string{"vs 50.0/s (gentle)", "vs 3.0 % (gentle)", "bare opened 16"} {
				if i < len(goals) && !strings.Contains(goals[i].text, want) {
					t.Errorf("throttledGoals(ours %v, …) goal %d = %q; want it to contain %q", tt.goodputs, i, goals[i].text, want)
				}
			}
			if len(info) != 1 || !strings.Contains(info[0], "hammer, 98.0 % 429s, 270 of 300 logical requests failed over 3 runs") {
				t.Errorf("throttledGoals(ours %v, …) info = %q; want one line on hammer, its median 429 share and failures over the runs", tt.goodputs, info)
			}
		})
	}
}
