package main

import (
	"strings"
	"testing"
)

// fakeShapesRuns returns one run per goodput, against a target of 100/s,
// with the 429 share of the same index.
func fakeShapesRuns(goodputs, shares []float64) []shapesRun {
	rs := make([]shapesRun, len(goodputs))
	for i := range rs {
		rs[i] = shapesRun{goodput: goodputs[i], target: 100, share429: shares[i]}
	}
	return rs
}

// TestShapesGoals checks that the shapes goals hold every run of every
// worker count: one run below 90 % of the target, or above 5 % 429s, with
// one worker count misses the goal and names it, however good the others.
func TestShapesGoals(t *testing.T) {
	ws := []int{1, 16}
	good := fakeShapesRuns([]float64{95, 99, 101}, []float64{0.01, 0.05, 0.02})
	tests := []struct {
		name   string
		runs   [][]shapesRun
		want   []bool // goodput, 429s
		missed []string
	}{
		{"everyRunMeetsBoth", [][]shapesRun{good, good}, []bool{true, true}, nil},
		{"oneRunLowGoodput", [][]shapesRun{good, fakeShapesRuns([]float64{99, 89.9, 101}, []float64{0.01, 0.01, 0.01})},
			[]bool{false, true}, []string{"missed at workers 16"}},
		{"oneRunManyThrottles", [][]shapesRun{fakeShapesRuns([]float64{95, 99, 101}, []float64{0.01, 0.051, 0.01}), good},
			[]bool{true, false}, []string{"", "missed at workers 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := shapesGoals("ours", capacity{100, 10}, ws, tt.runs)
			if len(goals) != len(tt.want) {
				t.Fatalf("shapesGoals(%s) = %d goals; want %d", tt.name, len(goals), len(tt.want))
			}
			for i, g := range goals {
				if g.met != tt.want[i] {
					t.Errorf("shapesGoals(%s) goal %d met = %t; want %t: %s", tt.name, i, g.met, tt.want[i], g.text)
				}
				if i < len(tt.missed) && tt.missed[i] != "" && !strings.HasSuffix(g.text, tt.missed[i]) {
					t.Errorf("shapesGoals(%s) goal %d = %q; want it to end %q", tt.name, i, g.text, tt.missed[i])
				}
			}
		})
	}
}
