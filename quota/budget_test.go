package quota_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
)

// grant asks b for n retries of scope at at, and returns how many it
// granted.
func grant(b *quota.Budget, at time.Time, scope string, n int) int {
	got := 0
	for range n {
		if cost, wait, ok := b.AcquireAt(at, scope, classify.Transient); ok {
			if cost != 1 || wait != 0 {
				panic("a budget's retry costs 1 and never waits")
			}
			got++
		}
	}
	return got
}

// requests counts n requests of scope at at.
func requests(b *quota.Budget, at time.Time, scope string, n int) {
	for range n {
		b.RequestAt(at, scope)
	}
}

func TestBudgetFloorAndRatio(t *testing.T) {
	// Defaults: 20 % of the requests of the last 10 s, or 10 a second
	// when that is more; and the same within each second of the window.
	var b quota.Budget
	if got := grant(&b, t0, "s", 150); got != 10 {
		t.Errorf("retries without requests = %d; want 10, the floor's second", got)
	}
	requests(&b, t0, "s", 1000)
	if got := grant(&b, t0, "s", 500); got != 190 {
		t.Errorf("retries after 1000 requests = %d; want 190 more (20 %%, not on top of the floor)", got)
	}
	if l := b.LevelAt(t0, "s"); l != 0 {
		t.Errorf("LevelAt after the budget is spent = %v; want 0", l)
	}
	if got := grant(&b, t0, "other", 1); got != 1 {
		t.Errorf("a retry to another scope was refused; want each scope its own budget")
	}
}

// TestBudgetSlidingWindow: counts leave the window a tenth of it at a
// time, so the budget comes back gradually, not all at once.
func TestBudgetSlidingWindow(t *testing.T) {
	b := quota.Budget{Ratio: 0.5, MinPerSecond: -1, Window: time.Second}
	requests(&b, t0, "s", 100)
	if got := grant(&b, t0, "s", 100); got != 50 {
		t.Fatalf("retries after 100 requests at ratio 0.5, no floor = %d; want 50", got)
	}
	// 500 ms on, new requests add their half; the first slice's requests
	// and retries are still in the window.
	requests(&b, t0.Add(500*time.Millisecond), "s", 10)
	if got := grant(&b, t0.Add(500*time.Millisecond), "s", 100); got != 5 {
		t.Errorf("retries 500 ms on after 10 more requests = %d; want 5", got)
	}
	// 1 s on, the first slice has left: 10 requests and 5 retries remain,
	// so nothing is left to retry.
	if l := b.LevelAt(t0.Add(time.Second), "s"); l != 0 {
		t.Errorf("LevelAt once the first slice left = %v; want 0", l)
	}
	// 1.5 s on, everything has left.
	if l := b.LevelAt(t0.Add(1500*time.Millisecond), "s"); l != 0 {
		t.Errorf("LevelAt once the whole window left = %v; want 0 (no floor)", l)
	}
	requests(&b, t0.Add(1500*time.Millisecond), "s", 4)
	if got := grant(&b, t0.Add(1500*time.Millisecond), "s", 10); got != 2 {
		t.Errorf("retries after a fresh window of 4 requests = %d; want 2", got)
	}
	// A clock going backwards counts in the current slice.
	requests(&b, t0, "s", 2)
	if got := grant(&b, t0, "s", 10); got != 1 {
		t.Errorf("retries after 2 requests on a clock gone backwards = %d; want 1", got)
	}
}

// TestBudgetFloorOverTheWindow: the floor is a rate: a second's share of
// it each second, the whole of it over the window.
func TestBudgetFloorOverTheWindow(t *testing.T) {
	var b quota.Budget
	total := 0
	for i := range 10 {
		total += grant(&b, t0.Add(time.Duration(i)*time.Second), "s", 50)
	}
	if total != 100 {
		t.Errorf("retries over 10 s without requests = %d; want 100, the floor of the 10 s window", total)
	}
	if got := grant(&b, t0.Add(10*time.Second), "s", 50); got != 10 {
		t.Errorf("retries once the first second left the window = %d; want its 10 back", got)
	}
}

// TestBudgetNoBurstAfterQuietTimes: a budget left unspent while all was
// well is not spent at once when an outage begins: the retries of each
// second stay within Ratio of its requests.
func TestBudgetNoBurstAfterQuietTimes(t *testing.T) {
	var b quota.Budget
	for i := range 9 { // 9 s of 1000 requests a second, all fine
		requests(&b, t0.Add(time.Duration(i)*time.Second), "s", 1000)
	}
	at := t0.Add(9 * time.Second)
	requests(&b, at, "s", 1000) // the outage's first second: every request fails twice
	if got := grant(&b, at, "s", 2000); got != 200 {
		t.Errorf("retries in the outage's first second = %d; want 200 (20 %% of its requests), not the window's unspent 2000", got)
	}
}

func TestBudgetSettings(t *testing.T) {
	tests := []struct {
		name string
		b    *quota.Budget
		want int // retries granted without requests
	}{
		{"defaults", &quota.Budget{}, 10},
		{"floor_per_second", &quota.Budget{MinPerSecond: 20, Window: 5 * time.Second}, 10},
		{"no_floor", &quota.Budget{MinPerSecond: -1}, 0},
		{"nan_means_default", &quota.Budget{MinPerSecond: math.NaN(), Ratio: math.NaN()}, 10},
		{"negative_window_means_default", &quota.Budget{Window: -time.Second}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := grant(tt.b, t0, "s", 1000); got != tt.want {
				t.Errorf("retries granted = %d; want %d", got, tt.want)
			}
		})
	}
	b := quota.Budget{Ratio: -1, MinPerSecond: -1}
	requests(&b, t0, "s", 100)
	if got := grant(&b, t0, "s", 10); got != 0 {
		t.Errorf("negative Ratio and no floor: %d retries; want none", got)
	}
}

func TestBudgetRefusesWhatIsNotRetryable(t *testing.T) {
	var b quota.Budget
	for _, k := range []classify.Kind{classify.Success, classify.Fatal} {
		if _, _, ok := b.AcquireAt(t0, "s", k); ok {
			t.Errorf("AcquireAt after %v granted a retry; want a refusal", k)
		}
	}
	b.Refund("s", 1) // does nothing: the budget is unchanged
	b.Success("s")
	if l := b.LevelAt(t0, "s"); l != 10 {
		t.Errorf("LevelAt = %v; want 10", l)
	}
}

func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	b := quota.Budget{MaxScopes: 1} // 10 a second
	grant(&b, t0, "a", 10)
	grant(&b, t0, "b", 1) // evicts a
	if got := grant(&b, t0, "a", 20); got != 10 {
		t.Errorf("retries to an evicted scope = %d; want 10, a fresh budget", got)
	}
}

func TestBudgetUsesNowField(t *testing.T) {
	now := t0
	b := quota.Budget{MinPerSecond: 10, Window: time.Second, Now: func() time.Time { return now }} // one retry a tenth of the window
	b.Request("s")
	if _, _, ok := b.Acquire("s", classify.Transient); !ok {
		t.Fatal("first Acquire refused; want the floor's one retry")
	}
	if _, _, ok := b.Acquire("s", classify.Transient); ok {
		t.Fatal("second Acquire in the same window granted; want a refusal")
	}
	now = now.Add(2 * time.Second) // on the Now clock only: the wall clock has not moved
	if l := b.Level("s"); l != 1 {
		t.Errorf("Level 2 s on by the Now field = %v; want 1, the window emptied", l)
	}
	if _, _, ok := b.Acquire("s", classify.Transient); !ok {
		t.Error("Acquire 2 s on by the Now field refused; want the next window's retry")
	}
}

// TestBudgetCancelGivesBackUnsentRetries: a retry granted and not sent
// after all is given back with Cancel, not Refund.
func TestBudgetCancelGivesBackUnsentRetries(t *testing.T) {
	b := quota.Budget{MinPerSecond: -1}
	requests(&b, t0, "s", 50) // 10 retries
	if got := grant(&b, t0, "s", 10); got != 10 {
		t.Fatalf("granted %d; want 10", got)
	}
	b.Refund("s", 3) // a retry that was sent: still counts
	if l := b.LevelAt(t0, "s"); l != 0 {
		t.Errorf("LevelAt after Refund = %v; want 0", l)
	}
	b.CancelAt(t0, "s", 3)
	if l := b.LevelAt(t0, "s"); l != 3 {
		t.Errorf("LevelAt after cancelling 3 = %v; want 3", l)
	}
	b.CancelAt(t0, "s", 100) // more than was granted: stops at none
	if l := b.LevelAt(t0, "s"); l != 10 {
		t.Errorf("LevelAt after cancelling more than granted = %v; want 10", l)
	}
	b.CancelAt(t0, "unknown", 1) // no such scope: nothing happens

	// Retries granted in an earlier slice are given back there.
	c := quota.Budget{MinPerSecond: -1}
	requests(&c, t0, "s", 50)
	grant(&c, t0, "s", 10)
	later := t0.Add(1500 * time.Millisecond)
	requests(&c, later, "s", 50)
	grant(&c, later, "s", 10) // the window's 20 are spent
	c.CancelAt(later, "s", 15)
	if l := c.LevelAt(later, "s"); l != 10 {
		t.Errorf("LevelAt after cancelling 15 of 20 over two slices = %v; want 10 (the current slice's bound)", l)
	}
}

// TestBudgetWindowUnderTenNanoseconds: a Window too short for ten slices
// of a nanosecond counts as 10 ns, so every method works and the counts
// leave the window after 10 ns.
func TestBudgetWindowUnderTenNanoseconds(t *testing.T) {
	for _, w := range []time.Duration{1, 5 * time.Nanosecond, 9 * time.Nanosecond} {
		b := quota.Budget{Ratio: 0.5, MinPerSecond: -1, Window: w}
		requests(&b, t0, "s", 10)
		if got := grant(&b, t0, "s", 10); got != 5 {
			t.Errorf("Window %v: retries after 10 requests at ratio 0.5 = %d; want 5", w, got)
		}
		b.CancelAt(t0, "s", 1)
		if l := b.LevelAt(t0, "s"); l != 1 {
			t.Errorf("Window %v: LevelAt after one retry given back = %v; want 1", w, l)
		}
		if got := grant(&b, t0.Add(10*time.Nanosecond), "s", 10); got != 0 {
			t.Errorf("Window %v: retries 10 ns later, no requests since = %d; want 0: the window is 10 ns", w, got)
		}
	}
}
