package main

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPoissonArrivals checks the open loop's arrival times: in order,
// within the run, at the rate asked (to within four standard deviations of
// a Poisson count), with exponential gaps (standard deviation equal to the
// mean, 1 - 1/e of them shorter than it), the same for the same seed.
func TestPoissonArrivals(t *testing.T) {
	const rate, d = 1000.0, 20 * time.Second
	at := poissonArrivals(rate, d, rand.New(rand.NewPCG(1, 2)))
	n := float64(len(at))
	if want, sd := rate*d.Seconds(), math.Sqrt(rate*d.Seconds()); math.Abs(n-want) > 4*sd {
		t.Errorf("poissonArrivals(%v/s, %v) = %.0f arrivals; want %.0f ± %.0f", rate, d, n, want, 4*sd)
	}
	if !slices.IsSorted(at) || at[0] < 0 || at[len(at)-1] >= d {
		t.Errorf("poissonArrivals(%v/s, %v): arrivals from %v to %v, sorted %t; want sorted, within [0, %v)", rate, d, at[0], at[len(at)-1], slices.IsSorted(at), d)
	}
	var sum, squares, short float64
	prev := time.Duration(0)
	for _, a := range at {
		g := (a - prev).Seconds()
		prev = a
		sum += g
		squares += g * g
		if g < 1/rate {
			short++
		}
	}
	mean := sum / n
	cv := math.Sqrt(squares/n-mean*mean) / mean
	if math.Abs(mean*rate-1) > 0.03 || math.Abs(cv-1) > 0.03 || math.Abs(short/n-(1-1/math.E)) > 0.015 {
		t.Errorf("poissonArrivals(%v/s, %v) gaps: mean %.3f ms, coefficient of variation %.3f, %.3f shorter than 1/rate; want 1 ms, 1, %.3f (exponential)",
			rate, d, mean*1e3, cv, short/n, 1-1/math.E)
	}
	if again := poissonArrivals(rate, d, rand.New(rand.NewPCG(1, 2))); !slices.Equal(again, at) {
		t.Errorf("poissonArrivals(%v/s, %v) differs between two sources of the same seed", rate, d)
	}
}

// TestRunArrivals checks that every arrival runs once, none before its
// time, without waiting for the earlier ones, never more than inFlight at
// once, and that the arrivals that waited for a free slot are counted.
func TestRunArrivals(t *testing.T) {
	at := make([]time.Duration, 10) // 1 ms apart
	for i := range at {
		at[i] = time.Duration(i) * time.Millisecond
	}
	for _, tt := range []struct {
		inFlight, wantBlocked int
	}{{len(at), 0}, {3, len(at) - 3}} {
		var mu sync.Mutex
		running, peak := 0, 0
		start := time.Now()
		outs, blocked := runArrivals(start, at, tt.inFlight, func(_ context.Context, i int) outcome {
			o := outcome{start: time.Now(), status: 200 + i}
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(30 * time.Millisecond) // every arrival's time passes meanwhile
			mu.Lock()
			running--
			mu.Unlock()
			return o
		})
		for i, o := range outs {
			if o.status != 200+i {
				t.Errorf("runArrivals(inFlight %d): outcome %d has status %d; want %d (each arrival run once, in its own slot)", tt.inFlight, i, o.status, 200+i)
			}
			if due := start.Add(at[i]); o.start.Before(due) {
				t.Errorf("runArrivals(inFlight %d): arrival %d started %v before its time", tt.inFlight, i, due.Sub(o.start))
			}
		}
		if peak != min(tt.inFlight, len(at)) || blocked != tt.wantBlocked {
			t.Errorf("runArrivals(%d arrivals 1 ms apart, 30 ms each, inFlight %d): peak %d in flight, %d held back; want %d, %d",
				len(at), tt.inFlight, peak, blocked, min(tt.inFlight, len(at)), tt.wantBlocked)
		}
	}
}

// TestOpenloopGoals checks that the open-loop goals hold every run at
// every load, and that at half the capacity one request refused or
// delayed in one run misses the goal, while delays at 2x do not count.
func TestOpenloopGoals(t *testing.T) {
	run := func(goodput, share429 float64, refused, delayed int) openloopRun {
		return openloopRun{goodput: goodput, base: 100, share429: share429, refused: refused, delayed: delayed, arrivals: 400}
	}
	fine := []openloopRun{run(99, 0, 0, 0), run(100, 0.01, 0, 0)}
	busy := []openloopRun{run(95, 0.04, 3, 200), run(92, 0.05, 0, 180)}
	loads := []float64{0.5, 2}
	tests := []struct {
		name string
		runs [][]openloopRun
		want []bool // goodput, 429s, none refused or delayed at 0.5x
	}{
		{"everyRunMeetsAll", [][]openloopRun{fine, busy}, []bool{true, true, true}},
		{"oneDelayedAtHalf", [][]openloopRun{{run(99, 0, 0, 0), run(100, 0, 0, 1)}, busy}, []bool{true, true, false}},
		{"oneRefusedAtHalf", [][]openloopRun{{run(99, 0, 1, 0), run(100, 0, 0, 0)}, busy}, []bool{true, true, false}},
		{"oneRunLowGoodputAt2x", [][]openloopRun{fine, {run(95, 0.01, 0, 0), run(89, 0.01, 0, 0)}}, []bool{false, true, true}},
		{"oneRunManyThrottlesAt2x", [][]openloopRun{fine, {run(95, 0.01, 0, 0), run(95, 0.06, 0, 0)}}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := openloopGoals("ours", capacity{100, 10}, loads, tt.runs)
			var got []bool
			for _, g := range goals {
				got = append(got, g.met)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("openloopGoals(%s) met = %v; want %v\n%v", tt.name, got, tt.want, goals)
			}
		})
	}
}
