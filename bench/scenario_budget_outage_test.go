package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestAmplificationWindows checks the sliding windows and their worst
// ratio on bins whose sums are known.
func TestAmplificationWindows(t *testing.T) {
	bins := []amplified{{10, 30}, {10, 10}, {10, 12}, {0, 2}}
	ws := windows(bins, 2)
	if want := []amplified{{20, 40}, {20, 22}, {10, 14}}; !slices.Equal(ws, want) {
		t.Errorf("windows(%v, 2) = %v; want %v", bins, ws, want)
	}
	if got := windows(bins, 5); got != nil {
		t.Errorf("windows(%v, 5) = %v; want none", bins, got)
	}
	if got, at := maxRatio(ws); got != 2 || at != 0 {
		t.Errorf("maxRatio(%v) = %v, %d; want 2, 0", ws, got, at)
	}
	// A bin where no request started counts as 0, not as infinite.
	if got, at := maxRatio(bins[3:]); got != 0 || at != 0 {
		t.Errorf("maxRatio(%v) = %v, %d; want 0, 0", bins[3:], got, at)
	}
	if got, want := everyNth(ws, 2), []amplified{{20, 40}, {10, 14}}; !slices.Equal(got, want) {
		t.Errorf("everyNth(%v, 2) = %v; want %v", ws, got, want)
	}
}

// TestRunOpenLoop checks that the open loop runs every request once, none
// before its time, without waiting for the earlier ones to end, and never
// more than inFlight at once.
func TestRunOpenLoop(t *testing.T) {
	start := time.Now()
	const rate, n, inFlight = 200, 40, 4
	var mu sync.Mutex
	running, peak := 0, 0 // requests in do now, and at most
	outs := runOpenLoop(start, rate, n*time.Second/rate, inFlight, func(_ context.Context, i int) outcome {
		o := outcome{start: time.Now()}
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		// Eight starts' time (5 ms apart): unbounded, about eight would
		// run at once.
		time.Sleep(40 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		o.end = time.Now()
		o.status = 200 + i
		return o
	})
	if len(outs) != n {
		t.Fatalf("runOpenLoop(%d/s for %d requests) returned %d outcomes; want %d", rate, n, len(outs), n)
	}
	for i, o := range outs {
		if o.status != 200+i {
			t.Errorf("runOpenLoop: outcome %d has status %d; want %d (each request run once, in its own slot)", i, o.status, 200+i)
		}
		if due := start.Add(time.Duration(i) * time.Second / rate); o.start.Before(due) {
			t.Errorf("runOpenLoop: request %d started %v before its time", i, due.Sub(o.start))
		}
	}
	if peak < 2 || peak > inFlight {
		t.Errorf("runOpenLoop(%d/s, inFlight %d): at most %d requests ran at once; want 2 to %d (each starts while earlier ones run, up to inFlight)",
			rate, inFlight, peak, inFlight)
	}
}
