package ratelimit_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
)

type reservation struct {
	Wait time.Duration
	OK   bool
}

// reserveAll calls f.ReserveAt(t0+at, scope) for each instant and returns the
// results.
func reserveAll(f *ratelimit.Fixed, scope string, at ...time.Duration) []reservation {
	var got []reservation
	for _, d := range at {
		_, w, ok := f.ReserveAt(t0.Add(d), scope)
		got = append(got, reservation{w, ok})
	}
	return got
}

// reserveLast is reserveAll returning the reservation the last call took.
func reserveLast(f *ratelimit.Fixed, scope string, at ...time.Duration) ratelimit.Reservation {
	reserveAll(f, scope, at[:len(at)-1]...)
	r, _, _ := f.ReserveAt(t0.Add(at[len(at)-1]), scope)
	return r
}

func TestFixedPaces(t *testing.T) {
	tests := []struct {
		name string
		f    *ratelimit.Fixed
		at   []time.Duration
		want []reservation
	}{
		// Burst 2 at 10/s: two tokens at once, then one every 100 ms.
		{"burst_2", &ratelimit.Fixed{Rate: 10, Burst: 2}, []time.Duration{0, 0, 0, 0},
			[]reservation{{0, true}, {0, true}, {100 * ms, true}, {200 * ms, true}}},
		// Burst zero means 1: evenly spaced.
		{"burst_default_1", &ratelimit.Fixed{Rate: 10}, []time.Duration{0, 0, 0, 0},
			[]reservation{{0, true}, {100 * ms, true}, {200 * ms, true}, {300 * ms, true}}},
		// After one second idle the burst is back, not more.
		{"refill_caps_at_burst", &ratelimit.Fixed{Rate: 10, Burst: 2}, []time.Duration{0, 0, time.Second, time.Second, time.Second},
			[]reservation{{0, true}, {0, true}, {0, true}, {0, true}, {100 * ms, true}}},
		// SNS maxReceivesPerSecond 1 (docs/sns.md): one a second.
		{"one_per_second", &ratelimit.Fixed{Rate: 1}, []time.Duration{0, 0, 500 * ms},
			[]reservation{{0, true}, {time.Second, true}, {1500 * ms, true}}},
		{"fail_fast", &ratelimit.Fixed{Rate: 10, FailFast: true}, []time.Duration{0, 0, 50 * ms, 100 * ms},
			[]reservation{{0, true}, {100 * ms, false}, {50 * ms, false}, {0, true}}},
		// 150 ms fits, 250 ms does not; the refusal takes nothing.
		{"max_wait", &ratelimit.Fixed{Rate: 10, Burst: 1, MaxWait: 150 * ms}, []time.Duration{0, 0, 0, 0},
			[]reservation{{0, true}, {100 * ms, true}, {200 * ms, false}, {200 * ms, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, reserveAll(tt.f, "s", tt.at...)); diff != "" {
				t.Errorf("ReserveAt(s) at %v mismatch (-want +got):\n%s", tt.at, diff)
			}
		})
	}
}

func TestFixedNoRateMeansNoLimit(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		f := ratelimit.Fixed{Rate: r, FailFast: true}
		for i := range 100 {
			if res, w, ok := f.ReserveAt(t0, "s"); w != 0 || !ok || res != (ratelimit.Reservation{}) {
				t.Fatalf("Fixed{Rate: %v}.ReserveAt #%d = %v, %v, %t; want the zero Reservation, 0, true", r, i, res, w, ok)
			}
		}
		if allocs := testing.AllocsPerRun(100, func() { res, _, _ := f.ReserveAt(t0, "s"); f.CancelAt(t0, res) }); allocs != 0 {
			t.Errorf("Fixed{Rate: %v}.ReserveAt and CancelAt: %v allocs per run; want 0", r, allocs)
		}
	}
}

func TestFixedScopesIndependent(t *testing.T) {
	f := ratelimit.Fixed{Rate: 10}
	reserveAll(&f, "a", 0, 0, 0)
	if diff := cmp.Diff([]reservation{{0, true}, {100 * ms, true}}, reserveAll(&f, "b", 0, 0)); diff != "" {
		t.Errorf("ReserveAt(b) after three on a mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedCancelGivesBackOnlyWaiter(t *testing.T) {
	f := ratelimit.Fixed{Rate: 10}
	waiter := reserveLast(&f, "s", 0, 0) // the second waits 100 ms
	if d := f.DelayAt(t0.Add(20*ms), waiter); d != 80*ms {
		t.Errorf("DelayAt of the waiter 20 ms on = %v; want 80ms", d)
	}
	f.CancelAt(t0.Add(20*ms), waiter)
	// The only waiter gave up: its turn at 100 ms is free again.
	again, w, _ := f.ReserveAt(t0.Add(20*ms), "s")
	if w != 80*ms {
		t.Errorf("ReserveAt(s) after the only waiter cancelled waits %v; want 80ms", w)
	}
	f.CancelAt(t0.Add(20*ms), again)  // cancels the 100 ms turn again
	f.CancelAt(t0.Add(20*ms), again)  // nothing left to give back
	f.CancelAt(t0.Add(20*ms), waiter) // a reservation given back already: nothing
	if diff := cmp.Diff([]reservation{{80 * ms, true}}, reserveAll(&f, "s", 20*ms)); diff != "" {
		t.Errorf("ReserveAt(s) after cancelling twice mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedCancelWithSeveralWaitersNeverSpeedsUp(t *testing.T) {
	f := ratelimit.Fixed{Rate: 10}
	latest := reserveLast(&f, "s", 0, 0, 0) // waits 0, 100 ms, 200 ms
	f.CancelAt(t0.Add(10*ms), latest)
	// Two callers still wait, at 100 and 200 ms; giving a token back would
	// let the next caller go at 200 ms too. The next turn stays at 300 ms.
	if diff := cmp.Diff([]reservation{{290 * ms, true}}, reserveAll(&f, "s", 10*ms)); diff != "" {
		t.Errorf("ReserveAt(s) after a cancel with two waiters mismatch (-want +got):\n%s", diff)
	}
	f.CancelAt(t0.Add(time.Second), latest) // every turn has passed: nothing to give back
	if diff := cmp.Diff([]reservation{{0, true}, {100 * ms, true}}, reserveAll(&f, "s", time.Second, time.Second)); diff != "" {
		t.Errorf("ReserveAt(s) after a late cancel mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedMaxScopesEvictsLeastRecentlyUsed(t *testing.T) {
	f := ratelimit.Fixed{Rate: 1, MaxScopes: 2}
	reserveAll(&f, "a", 0)
	reserveAll(&f, "b", 0)
	reserveAll(&f, "a", 0) // waits; b is now the least recently used
	reserveAll(&f, "c", 0) // evicts b
	got := append(reserveAll(&f, "a", 0), reserveAll(&f, "b", 0)...)
	// a keeps its state (a third send waits 2 s); b starts with a full burst.
	if diff := cmp.Diff([]reservation{{2 * time.Second, true}, {0, true}}, got); diff != "" {
		t.Errorf("ReserveAt(a), ReserveAt(b) after evicting b mismatch (-want +got):\n%s", diff)
	}
}

func TestFixedUsesNowField(t *testing.T) {
	clock := faketime.New()
	f := ratelimit.Fixed{Rate: 10, Now: clock.Now}
	f.Reserve("s")
	r, w1, _ := f.Reserve("s")
	clock.Advance(50 * ms)
	if d := r.Delay(); d != 50*ms {
		t.Errorf("Delay on the fake clock 50 ms on = %v; want 50ms", d)
	}
	r.Cancel()
	_, w2, _ := f.Reserve("s")
	if w1 != 100*ms || w2 != 50*ms {
		t.Errorf("Reserve waits on the fake clock = %v, then after Cancel %v; want 100ms, 50ms", w1, w2)
	}
}

func TestFixedConcurrentUseKeepsRate(t *testing.T) {
	f := ratelimit.Fixed{Rate: 100, Burst: 5, MaxScopes: 2}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		sends = map[string][]time.Duration{}
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fmt.Sprint("scope", g%2)
			for range 200 {
				_, w, ok := f.ReserveAt(t0, s)
				if !ok {
					t.Errorf("ReserveAt(%s) refused; want granted", s)
					return
				}
				mu.Lock()
				sends[s] = append(sends[s], w)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for s, waits := range sends {
		// 800 sends at one instant, rate 100 and burst 5: the last waits
		// (800 - 5)/100 s.
		longest := time.Duration(0)
		for _, w := range waits {
			longest = max(longest, w)
		}
		if want := 7950 * ms; longest != want {
			t.Errorf("longest wait of %d sends to %s = %v; want %v", len(waits), s, longest, want)
		}
	}
}

// TestFixedWaitPastYear2262: a reservation due after the last instant
// UnixNano can represent (a very low Rate) still says to wait, rather than
// reading as due at once.
func TestFixedWaitPastYear2262(t *testing.T) {
	const centuries = 200 * 365 * 24 * time.Hour
	f := ratelimit.Fixed{Rate: 1e-12} // one send per 31,700 years
	if _, w, ok := f.ReserveAt(t0, "s"); !ok || w != 0 {
		t.Fatalf("first ReserveAt = %v, %t; want no wait", w, ok)
	}
	r, w, ok := f.ReserveAt(t0, "s")
	if !ok || w < centuries {
		t.Fatalf("second ReserveAt = %v, %t; want a wait of centuries", w, ok)
	}
	if d := f.DelayAt(t0.Add(time.Hour), r); d < centuries {
		t.Errorf("DelayAt an hour later = %v; want centuries still", d)
	}
}
