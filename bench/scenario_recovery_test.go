package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecoveryTime checks when the sliding window finds the rate back:
// the first window, starting at a response, that ends by the run's end and
// holds the rate asked, measured from the first response; +Inf if none.
func TestRecoveryTime(t *testing.T) {
	t0 := time.Now()
	// ends returns a response every gap from from to to (excluded), after
	// t0.
	ends := func(from, to, gap time.Duration) []time.Time {
		var es []time.Time
		for d := from; d < to; d += gap {
			es = append(es, t0.Add(d))
		}
		return es
	}
	ms := time.Millisecond
	// 100/s for 300 ms, then 1000/s.
	slowThenFast := append(ends(0, 300*ms, 10*ms), ends(300*ms, 2000*ms, ms)...)
	tests := []struct {
		name  string
		ends  []time.Time
		until time.Duration
		rate  float64
		want  float64 // seconds
	}{
		{"fastAtOnce", ends(0, 2000*ms, ms), 2000 * ms, 900, 0},
		// The first window that holds 90 responses starts at 290 ms: one
		// at 290 ms and 90 from 300 ms on; the one at 280 ms holds 2 + 80.
		{"slowThenFast", slowThenFast, 2000 * ms, 900, 0.29},
		{"neverFastEnough", ends(0, 2000*ms, 2*ms), 2000 * ms, 900, math.Inf(1)},
		// The fast stretch comes, but its first full window would end
		// after the run.
		{"fastTooLate", slowThenFast, 350 * ms, 900, math.Inf(1)},
		{"nothing", nil, time.Second, 900, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recoveryTime(tt.ends, t0.Add(tt.until), recoveryWindow, tt.rate); got != tt.want && !(math.Abs(got-tt.want) < 1e-9) {
				t.Errorf("recoveryTime(%s, until %v, %v/s) = %v s; want %v s", tt.name, tt.until, tt.rate, got, tt.want)
			}
		})
	}
}

// TestRecoveryGoals checks that the recovery goals hold our adaptive
// mode's every run against standard mode's median time, and every run's
// recovery against 1 s: one slow throttled request, or one run that never
// recovers, misses.
func TestRecoveryGoals(t *testing.T) {
	run := func(elapsed time.Duration, recovery float64) recoveryRun {
		return recoveryRun{elapsed: elapsed, status: 200, recovery: recovery}
	}
	s := time.Second
	// Standard mode's median time is 1 s; its slowest run, 3 s, is not
	// the bar.
	standard := []recoveryRun{run(s/2, 0), run(s, 0), run(3*s, 0)}
	tests := []struct {
		name string
		ours []recoveryRun
		want []bool // elapsed, recovery
		text string // in the first goal's line
	}{
		{"everyRunMeetsBoth", []recoveryRun{run(s/2, 0.1), run(s, 1), run(s/10, 0)}, []bool{true, true}, "1: 1.00 s vs 1.00 s"},
		{"oneRunSlowerThanTheMedian", []recoveryRun{run(s/2, 0.1), run(2*s, 0.2), run(s/10, 0)}, []bool{false, true}, "1: 2.00 s vs 1.00 s; missed at k 1"},
		{"oneRunNeverRecovers", []recoveryRun{run(s/2, 0.1), run(s/2, math.Inf(1)), run(s/10, 0)}, []bool{true, false}, "1: 0.50 s vs 1.00 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aws := []recoveryRun{run(9*s, 5)}
			goals := recoveryGoals("ours", []int{1}, [][][]recoveryRun{{tt.ours, standard, aws}})
			var got []bool
			for _, g := range goals {
				got = append(got, g.met)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("recoveryGoals(%s) met = %v; want %v\n%v", tt.name, got, tt.want, goals)
			}
			if len(goals) > 0 && !strings.Contains(goals[0].text, tt.text) {
				t.Errorf("recoveryGoals(%s) first goal = %q; want it to contain %q", tt.name, goals[0].text, tt.text)
			}
		})
	}
	if g := recoveryGoals("ours", []int{1}, [][][]recoveryRun{{{run(s, math.Inf(1))}, standard}}); !strings.Contains(g[1].text, "1: never; missed at k 1") {
		t.Errorf("recoveryGoals(never) recovery goal = %q; want it to say never and missed", g[1].text)
	}
}

// TestOutcomesCell checks the outcome cell: one status when all runs
// agree, counts otherwise, an error as "error".
func TestOutcomesCell(t *testing.T) {
	for _, tt := range []struct {
		statuses []int
		want     string
	}{{[]int{200, 200}, "200"}, {[]int{429, 200, 0, 429}, "200 ×1, 429 ×2, error ×1"}} {
		var rs []recoveryRun
		for _, s := range tt.statuses {
			rs = append(rs, recoveryRun{status: s})
		}
		if got := outcomesCell(rs); got != tt.want {
			t.Errorf("outcomesCell(%v) = %q; want %q", tt.statuses, got, tt.want)
		}
	}
}
