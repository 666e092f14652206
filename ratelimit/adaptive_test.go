package ratelimit_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// throttled returns an Adaptive whose scope "s" was throttled at t0+500ms at
// a measured 10 req/s: fill rate 7, capacity 1 (0.1 s of 7 tokens a second,
// raised to the floor), no token yet.
func throttled(t *testing.T, a *ratelimit.Adaptive) *ratelimit.Adaptive {
	t.Helper()
	play(a, steady(0, 500*ms, classify.Success, classify.Throttle))
	if st := a.StateAt(t0.Add(500*ms), "s"); st.FillRate != 7 || st.Tokens != 0 {
		t.Fatalf("setup: StateAt(s) = %+v; want fill rate 7 and no token", st)
	}
	return a
}

func TestAdaptiveNotEnabledNeverWaits(t *testing.T) {
	a := ratelimit.Adaptive{FailFast: true}
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * ms)
		if _, w, ok := a.ReserveAt(now, "s"); w != 0 || !ok {
			t.Fatalf("ReserveAt(t0+%dms, s) before any throttle = %v, %t; want 0, true", i, w, ok)
		}
		for _, k := range []classify.Kind{classify.Success, classify.Transient, classify.Timeout, classify.Fatal} {
			a.RecordAt(now, "s", k)
		}
	}
	if st := a.StateAt(t0.Add(time.Second), "s"); st.Enabled {
		t.Errorf("StateAt(s) after 4000 non-throttle outcomes: Enabled = true; want false")
	}
}

func TestAdaptiveStateOfUnknownScopeIsZero(t *testing.T) {
	var a ratelimit.Adaptive
	if diff := cmp.Diff(ratelimit.AdaptiveState{}, a.StateAt(t0, "never")); diff != "" {
		t.Errorf("StateAt(never) mismatch (-want +got):\n%s", diff)
	}
}

func TestAdaptiveStateReportsLastThrottle(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{})
	if got, want := a.StateAt(t0.Add(time.Second), "s").LastThrottle, t0.Add(500*ms); !got.Equal(want) {
		t.Errorf("StateAt(s).LastThrottle = %v; want %v", got, want)
	}
}

func TestAdaptiveFailFastRefusesWithoutTaking(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{FailFast: true})
	now := t0.Add(500 * ms)
	if _, w, ok := a.ReserveAt(now, "s"); w != 142857143 || ok {
		t.Errorf("ReserveAt(s) with FailFast and no token = %v, %t; want 142.857143ms, false", w, ok)
	}
	if got := a.StateAt(now, "s").Tokens; got != 0 {
		t.Errorf("StateAt(s).Tokens after a refusal = %v; want 0 (nothing taken)", got)
	}
	if _, w, ok := a.ReserveAt(now.Add(time.Second), "s"); w != 0 || !ok {
		t.Errorf("ReserveAt(s) with FailFast and a full bucket (1 token) = %v, %t; want 0, true", w, ok)
	}
}

func TestAdaptiveMaxWaitRefusesLongerWaits(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{MaxWait: 200 * ms})
	now := t0.Add(500 * ms)
	type result struct {
		Wait time.Duration
		OK   bool
	}
	var got []result
	for range 3 {
		_, w, ok := a.ReserveAt(now, "s")
		got = append(got, result{w, ok})
	}
	// 1/7 s fits in 200 ms; 2/7 s does not, and nothing is taken, so the
	// third call is refused the same way.
	want := []result{{142857143, true}, {285714286, false}, {285714286, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReserveAt(s) with MaxWait 200ms mismatch (-want +got):\n%s", diff)
	}
}

func TestAdaptiveCancelReturnsToken(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{})
	now := t0.Add(500 * ms)
	first, firstWait, _ := a.ReserveAt(now, "s")
	second, _, _ := a.ReserveAt(now, "s")
	a.CancelAt(now, second) // the second caller gave up
	if got := a.StateAt(now, "s").Tokens; got != -1 {
		t.Errorf("StateAt(s).Tokens after two reservations and a cancel = %v; want -1", got)
	}
	// The latest reservation leaves the queue: the one ahead keeps its turn.
	if d := a.DelayAt(now, first); d != firstWait {
		t.Errorf("first reservation's DelayAt after the second's cancel = %v; want %v, unchanged", d, firstWait)
	}
	r, w, _ := a.ReserveAt(now, "s")
	if w != 285714286 {
		t.Errorf("ReserveAt(s) after the cancel = %v; want 285.714286ms, the freed turn", w)
	}
	if d := a.DelayAt(now, r); d != w {
		t.Errorf("DelayAt of the new reservation = %v; want %v, what ReserveAt said", d, w)
	}
	// An hour refills the bucket to its capacity, 1; the token given back
	// must not raise it above that: min(1 + 1, 1).
	a.CancelAt(now.Add(time.Hour), r)
	if got, want := a.StateAt(now.Add(time.Hour), "s").Tokens, 1.0; got != want {
		t.Errorf("StateAt(s).Tokens after an hour and a cancel = %v; want %v (capacity)", got, want)
	}
	var zero ratelimit.Reservation
	zero.Cancel() // nothing happens
	if d := zero.Delay(); d != 0 {
		t.Errorf("zero Reservation's Delay = %v; want 0", d)
	}
}

// A reservation given back from the middle of the queue moves up the ones
// behind it by one turn and leaves the ones ahead of it where they were:
// nobody becomes due at once because someone behind gave up, so callers
// that give up together after a decrease do not turn into a burst of
// sends.
func TestAdaptiveCancelInTheMiddleKeepsTheTurnsAhead(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{}) // 7 tokens a second, none yet
	now := t0.Add(500 * ms)
	var rs []ratelimit.Reservation
	var waits []time.Duration
	for range 5 {
		r, w, _ := a.ReserveAt(now, "s")
		rs, waits = append(rs, r), append(waits, w)
	}
	a.CancelAt(now, rs[2]) // the third of five gives up
	a.CancelAt(now, rs[3]) // and the fourth
	for i, want := range []time.Duration{waits[0], waits[1], -1, -1, waits[2]} {
		if want < 0 {
			continue
		}
		if d := a.DelayAt(now, rs[i]); d != want {
			t.Errorf("DelayAt of reservation %d after the third and fourth gave up = %v; want %v", i+1, d, want)
		}
	}
	if _, w, _ := a.ReserveAt(now, "s"); w != waits[3] {
		t.Errorf("ReserveAt(s) after two of five gave up = %v; want %v, the fourth turn", w, waits[3])
	}
	// Once the turns ahead have come, the places given back are forgotten
	// and the queue goes on at the fill rate.
	later := now.Add(waits[2])
	if d := a.DelayAt(later, rs[4]); d != 0 {
		t.Errorf("DelayAt of the fifth reservation at its turn = %v; want 0", d)
	}
}

// An attempt released (sent, and ended without an outcome) is no longer
// outstanding, and nothing else changes: its send token stays spent, and
// no response is measured.
func TestAdaptiveReleaseEndsAReservationOnly(t *testing.T) {
	var a ratelimit.Adaptive
	a.ReserveAt(t0, "s")
	a.RecordAt(t0.Add(100*ms), "s", classify.Throttle) // enabled, the bucket empty
	now := t0.Add(100 * ms)
	a.ReserveAt(now, "s")
	a.ReserveAt(now, "s")
	before := a.StateAt(now, "s")
	if !before.Enabled || before.Tokens != -2 {
		t.Fatalf("setup: StateAt(s) = %+v; want enabled, two tokens owed", before)
	}
	if before.Outstanding != 2 {
		t.Fatalf("StateAt(s).Outstanding after two reservations = %d; want 2", before.Outstanding)
	}
	a.ReleaseAt(now, "s")
	after := a.StateAt(now, "s")
	want := before
	want.Outstanding = 1
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("StateAt(s) after ReleaseAt mismatch (-want +got):\n%s", diff)
	}
	a.ReleaseAt(now, "s")
	a.ReleaseAt(now, "s") // beyond the reservations outstanding: nothing
	if got := a.StateAt(now, "s").Outstanding; got != 0 {
		t.Errorf("StateAt(s).Outstanding after releasing both, and once more = %d; want 0", got)
	}
	a.ReleaseAt(now, "never") // a scope not stored stays so
	if diff := cmp.Diff(ratelimit.AdaptiveState{}, a.StateAt(now, "never")); diff != "" {
		t.Errorf("StateAt(never) after ReleaseAt mismatch (-want +got):\n%s", diff)
	}
}

// The cold start decreases from the scope's concurrency, the most
// reservations outstanding at once, over its first round trip, the time to
// its first response: five attempts released one after another never
// overlap, so with a sixth, throttled 300 ms after the first event, that
// is 1 over 0.3 s, not 6 (the released ones still outstanding), nor 1 over
// the 100 ms floor (a release taken for the first response).
func TestAdaptiveColdStartAfterReleases(t *testing.T) {
	var a ratelimit.Adaptive
	for i := range 5 {
		now := t0.Add(time.Duration(i) * ms)
		a.ReserveAt(now, "s")
		a.ReleaseAt(now, "s")
	}
	a.ReserveAt(t0.Add(200*ms), "s")
	now := t0.Add(300 * ms)
	a.RecordAt(now, "s", classify.Throttle)
	got := a.StateAt(now, "s")
	if want := 1 / 0.3; math.Abs(got.LastMax-want) > 1e-9 || got.Outstanding != 0 {
		t.Errorf("StateAt(s) after 5 released attempts and a throttle: LastMax %v, Outstanding %d; want %.4f and 0", got.LastMax, got.Outstanding, want)
	}
}

// Reservations come due in the order they were taken, at the rate in force
// while they wait: a decrease moves the waiting ones later, spaced at the
// new rate.
func TestAdaptiveReservationsFollowRateInOrder(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{}) // fill 7, empty bucket
	now := t0.Add(500 * ms)
	var rs []ratelimit.Reservation
	var waits []time.Duration
	for i := range 3 {
		r, w, _ := a.ReserveAt(now, "s")
		if want := secs(float64(i+1) / 7); !near(w, want) {
			t.Fatalf("reservation %d waits %v; want %v", i+1, w, want)
		}
		rs, waits = append(rs, r), append(waits, w)
	}
	now = now.Add(waits[0])
	if d := a.DelayAt(now, rs[0]); d != 0 {
		t.Fatalf("first reservation at its time: DelayAt = %v; want 0", d)
	}
	a.RecordAt(now, "s", classify.Throttle) // a decrease: 7 -> 4.9 req/s
	if st := a.StateAt(now, "s"); math.Abs(st.FillRate-4.9) > 1e-9 {
		t.Fatalf("fill rate after the second throttle = %v; want 4.9", st.FillRate)
	}
	for i, r := range rs[1:] {
		if got, want := a.DelayAt(now, r), secs(float64(i+1)/4.9); !near(got, want) {
			t.Errorf("reservation %d after the decrease: DelayAt = %v; want %v", i+2, got, want)
		}
	}
	// Cancelling the second gives its token to the third, which moves up.
	a.CancelAt(now, rs[1])
	if got, want := a.DelayAt(now, rs[2]), secs(1/4.9); !near(got, want) {
		t.Errorf("third reservation after the second's cancel: DelayAt = %v; want %v", got, want)
	}
}

// secs converts seconds to a Duration.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// near reports whether two durations are within a microsecond, what the
// limiter's float arithmetic and rounding up to the nanosecond leave.
func near(got, want time.Duration) bool { return (got - want).Abs() <= time.Microsecond }

// A reservation that outlives its scope's eviction is due at once, and
// cancelling it leaves the new scope of the same name alone.
func TestAdaptiveReservationOfEvictedScope(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{MaxScopes: 1})
	now := t0.Add(500 * ms)
	a.ReserveAt(now, "s")
	r, w, _ := a.ReserveAt(now, "s")
	if w == 0 {
		t.Fatalf("second reservation after the throttle does not wait")
	}
	a.ReserveAt(now, "other") // evicts s
	throttled(t, a)           // s again, a new scope
	for range 3 {             // whose queue reaches past r's place
		a.ReserveAt(now, "s")
	}
	before := a.StateAt(now, "s")
	if d := a.DelayAt(now, r); d != 0 {
		t.Errorf("DelayAt of a reservation of an evicted scope = %v; want 0", d)
	}
	a.CancelAt(now, r)
	if after := a.StateAt(now, "s"); after != before {
		t.Errorf("cancelling a reservation of an evicted scope changed its successor: %+v, was %+v", after, before)
	}
}

func TestAdaptiveScopesIndependent(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{FailFast: true})
	now := t0.Add(500 * ms)
	if _, _, ok := a.ReserveAt(now, "s"); ok {
		t.Fatalf("ReserveAt(s) after its throttle granted; want refused (no token, FailFast)")
	}
	for range 100 {
		if _, w, ok := a.ReserveAt(now, "other"); w != 0 || !ok {
			t.Fatalf("ReserveAt(other) while s is throttled = %v, %t; want 0, true", w, ok)
		}
	}
	if a.StateAt(now, "other").Enabled {
		t.Errorf("StateAt(other).Enabled = true after s was throttled; want false")
	}
}

func TestAdaptiveNonThrottleKindsDoNotDecrease(t *testing.T) {
	for _, k := range []classify.Kind{classify.Success, classify.Transient, classify.Timeout, classify.Fatal, classify.Kind(99)} {
		a := throttled(t, &ratelimit.Adaptive{})
		a.RecordAt(t0.Add(600*ms), "s", k)
		// The line from 0.7·10 = 7 at 2.5 req/s per second (no reservation
		// outstanding): 7 + 2.5·0.1 = 7.25, under the cap 2·10.
		if got := a.StateAt(t0.Add(600*ms), "s").FillRate; math.Abs(got-7.25) > 1e-6 {
			t.Errorf("FillRate after RecordAt(%v) = %v; want 7.25 (the line)", k, got)
		}
	}
}

func TestAdaptiveOutOfRangeSettingsMeanDefaults(t *testing.T) {
	script := steady(0, 3*time.Second, classify.Success, classify.Throttle)
	var def ratelimit.Adaptive
	play(&def, script)
	want := def.StateAt(t0.Add(4*time.Second), "s")
	for _, a := range []*ratelimit.Adaptive{
		{Beta: 1, Scale: -1, Smoothing: 1.5, MinFillRate: -1, Additive: -1},
		{Beta: math.NaN(), Scale: math.NaN(), Smoothing: math.NaN(), MinFillRate: math.NaN(), Additive: math.NaN()},
		{Beta: -0.5, Scale: math.Inf(1), Smoothing: -1, MinFillRate: math.Inf(1), Additive: math.Inf(1)},
		{Beta: ratelimit.DefaultBeta, Scale: ratelimit.DefaultScale, Smoothing: ratelimit.DefaultSmoothing, MinFillRate: ratelimit.DefaultMinFillRate},
	} {
		play(a, script)
		if diff := cmp.Diff(want, a.StateAt(t0.Add(4*time.Second), "s")); diff != "" {
			t.Errorf("StateAt with Beta %v, Scale %v, Smoothing %v, MinFillRate %v mismatch (-want +got):\n%s",
				a.Beta, a.Scale, a.Smoothing, a.MinFillRate, diff)
		}
	}
}

func TestAdaptiveClockBackwardsCountsAsStandingStill(t *testing.T) {
	a := throttled(t, &ratelimit.Adaptive{})
	// At 1 s, 0.5·7 = 3.5 tokens have come, the bucket holds 1, and the
	// reservation takes it: 0 left.
	a.ReserveAt(t0.Add(time.Second), "s")
	// Earlier than seen, so it counts at 1 s. It closes [0.5, 1) with
	// count 1: measured 0.8·1/0.5 + 0.2·10 = 3.6. The line 0.5 s after the
	// throttle, 7 + 2.5·0.5 = 8.25, is below 0.85 of the long-run rate
	// (10 at the throttle, 9.908 now) after more than 0.3 s without a
	// throttle, so it closes its gap with a time constant of 0.3 s:
	// 8.25 + (9.908 - 8.25)·(1 - e^(-0.5/0.3)) = 9.595, under the cap
	// max(2·3.6, 10) = 10: fill 9.595, capacity max(0.9595, 1) = 1, still 0
	// tokens.
	a.RecordAt(t0, "s", classify.Success)
	// Also at 1 s: nothing refilled, so the wait is (1 - 0)/9.595 =
	// 104.225287 ms (rounded up to the nanosecond) and -1 token is left.
	// Time counted backwards would instead refill a negative amount or run
	// the curve back to its floor.
	_, w, ok := a.ReserveAt(t0, "s")
	st := a.StateAt(t0, "s")
	type state struct {
		Wait                             time.Duration
		OK                               bool
		Fill, Measured, Tokens, Capacity float64
	}
	got := state{w, ok, st.FillRate, st.MeasuredRate, st.Tokens, st.Capacity}
	want := state{104225287, true, 9.594600672620226, 3.6, -1, 1}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("ReserveAt and StateAt at t0 after 1 s was seen mismatch (-want +got):\n%s", diff)
	}
}

func TestAdaptiveBurstAfterIdleIsATenthOfASecond(t *testing.T) {
	var a ratelimit.Adaptive
	// Twenty reservations at t0 and twenty responses by 100 ms, the last a
	// throttle: the cold-start rate is 20/0.1 = 200 req/s (see
	// TestAdaptiveArithmetic), so fill 0.7·200 = 140 and capacity 0.1·140
	// = 14, from an empty bucket.
	play(&a, reserves(19, 0), append(burst(19, 100*ms, classify.Success), rec(100*ms, classify.Throttle)))
	if st := a.StateAt(t0.Add(100*ms), "s"); st.FillRate != 140 || st.Capacity != 14 || st.Tokens != 0 {
		t.Fatalf("setup: StateAt(s) = %+v; want fill rate 140, capacity 14, no token", st)
	}
	// After a second without traffic (a wait the server asked for, say),
	// 140 tokens have come but the bucket holds 14: 14 sends go at once
	// and the 15th waits (1 - 0)/140 = 7.142857 ms, rounded up. With the
	// SDKs' capacity of a second, all 140 would go at once.
	now := t0.Add(1100 * ms)
	var n int
	var w time.Duration
	for ; n <= 140; n++ {
		var ok bool
		if _, w, ok = a.ReserveAt(now, "s"); !ok {
			t.Fatalf("ReserveAt(t0+1.1s, s) #%d refused; want granted", n+1)
		}
		if w > 0 {
			break
		}
	}
	if n != 14 || w != 7142858 {
		t.Errorf("after an idle second at fill 140: %d sends without waiting, then a wait of %v; want 14, then 7.142858ms", n, w)
	}
}

func TestAdaptiveMaxScopesEvictsLeastRecentlyUsed(t *testing.T) {
	a := ratelimit.Adaptive{MaxScopes: 3}
	for _, s := range []string{"a", "b", "c"} {
		a.RecordAt(t0, s, classify.Throttle)
	}
	a.ReserveAt(t0, "a") // b is now the least recently used
	a.ReserveAt(t0, "d")
	var got []bool
	for _, s := range []string{"a", "b", "c", "d"} {
		got = append(got, a.StateAt(t0, s).Enabled)
	}
	// d is stored but was never throttled; b was evicted and starts over.
	if diff := cmp.Diff([]bool{true, false, true, false}, got); diff != "" {
		t.Errorf("Enabled of a, b, c, d after adding d with MaxScopes 3 mismatch (-want +got):\n%s", diff)
	}
	for i := range 100 {
		a.ReserveAt(t0, fmt.Sprint("host", i))
	}
	if a.StateAt(t0, "a").Enabled || a.StateAt(t0, "c").Enabled {
		t.Errorf("a and c still stored after 100 newer scopes with MaxScopes 3")
	}
}

func TestAdaptiveUsesNowField(t *testing.T) {
	clock := faketime.New()
	a := ratelimit.Adaptive{Now: clock.Now}
	a.Reserve("s")
	for i := range 5 { // as throttled does, on the fake clock
		clock.Advance(100 * ms)
		k := classify.Success
		if i == 4 {
			k = classify.Throttle
		}
		a.Record("s", k)
	}
	r, w, ok := a.Reserve("s")
	r.Cancel()
	if st := a.State("s"); w != 142857143 || !ok || st.FillRate != 7 || st.Tokens != 0 {
		t.Errorf("on the fake clock: Reserve = %v, %t, then after Cancel State = %+v; want 142.857143ms, true, fill rate 7, no token", w, ok, st)
	}
}

func TestAdaptiveHotPathDoesNotAllocate(t *testing.T) {
	var a ratelimit.Adaptive
	a.ReserveAt(t0, "cold")
	if allocs := testing.AllocsPerRun(1000, func() {
		a.Reserve("cold")
		a.Record("cold", classify.Success)
	}); allocs != 0 {
		t.Errorf("Reserve and Record on a stored scope never throttled: %v allocs per run; want 0", allocs)
	}
	throttled(t, &a)
	now := t0.Add(500 * ms)
	if allocs := testing.AllocsPerRun(1000, func() {
		r, _, _ := a.ReserveAt(now, "s")
		a.DelayAt(now, r)
		a.CancelAt(now, r)
		a.RecordAt(now, "s", classify.Throttle)
		a.StateAt(now, "s")
	}); allocs != 0 {
		t.Errorf("ReserveAt, DelayAt, CancelAt, RecordAt and StateAt on a throttled scope: %v allocs per run; want 0", allocs)
	}
}

// BenchmarkAdaptiveReserveRecord measures one attempt's bookkeeping on a
// scope that was never throttled, and on one that was.
func BenchmarkAdaptiveReserveRecord(b *testing.B) {
	for _, enabled := range []bool{false, true} {
		b.Run(fmt.Sprintf("enabled=%t", enabled), func(b *testing.B) {
			var a ratelimit.Adaptive
			a.RecordAt(t0, "api.example.com", classify.Success)
			if enabled {
				a.RecordAt(t0, "api.example.com", classify.Throttle)
			}
			now := t0.Add(time.Hour) // tokens never run out
			b.ReportAllocs()
			for b.Loop() {
				a.ReserveAt(now, "api.example.com")
				a.RecordAt(now, "api.example.com", classify.Success)
			}
		})
	}
}

// TestAdaptiveStateLastThrottleFarAhead: a throttle recorded as far from
// the scope's origin as a Duration reaches is reported at that instant,
// not wrapped around before the origin.
func TestAdaptiveStateLastThrottleFarAhead(t *testing.T) {
	var a ratelimit.Adaptive
	a.RecordAt(t0, "s", classify.Throttle)
	far := t0.Add(math.MaxInt64)
	a.RecordAt(far, "s", classify.Throttle)
	st := a.StateAt(far, "s")
	if d := far.Sub(st.LastThrottle); st.LastThrottle.Before(t0) || d < 0 || d > time.Microsecond {
		t.Errorf("StateAt(t0 + %v).LastThrottle = %v; want %v, the throttle's instant", time.Duration(math.MaxInt64), st.LastThrottle, far)
	}
}

// ExtraThrottleRetries resolves ThrottleRetries: the default for zero,
// none for a negative value or in reference mode, and at most 100, so that
// a request against a server that throttles everything still ends.
func TestAdaptiveExtraThrottleRetries(t *testing.T) {
	tests := []struct {
		a    *ratelimit.Adaptive
		want int
	}{
		{&ratelimit.Adaptive{}, ratelimit.DefaultThrottleRetries},
		{&ratelimit.Adaptive{ThrottleRetries: 2}, 2},
		{&ratelimit.Adaptive{ThrottleRetries: -1}, 0},
		{&ratelimit.Adaptive{ThrottleRetries: 1 << 40}, 100},
		{&ratelimit.Adaptive{ThrottleRetries: 3, Reference: true}, 0},
	}
	for _, tt := range tests {
		if got := tt.a.ExtraThrottleRetries(); got != tt.want {
			t.Errorf("Adaptive{ThrottleRetries: %d, Reference: %t}.ExtraThrottleRetries() = %d; want %d", tt.a.ThrottleRetries, tt.a.Reference, got, tt.want)
		}
	}
}

// A scope that has sent for half a second without a throttle lets its
// first throttle pass, and the throttles of the requests sent before it
// (the same burst): a client's arrivals that bunch up past a server's
// burst get a 429 now and then, and pacing the client for it would delay
// every request that follows. A throttle of a request sent after the
// first one enables the limiter, from the measured rate; so does a
// throttle in reference mode, as in the SDKs.
func TestAdaptiveLetsAnIsolatedThrottlePass(t *testing.T) {
	warm := func(a *ratelimit.Adaptive) time.Time {
		for at := 100 * ms; at <= time.Second; at += 100 * ms {
			a.ReserveAt(t0.Add(at-100*ms), "s")
			a.RecordAt(t0.Add(at), "s", classify.Success) // 10 req/s, one at a time
		}
		return t0.Add(time.Second)
	}
	enabled := func(a *ratelimit.Adaptive, now time.Time) bool { return a.StateAt(now, "s").Enabled }

	var a ratelimit.Adaptive
	now := warm(&a)
	burst := make([]ratelimit.Reservation, 3)
	for i := range burst {
		burst[i], _, _ = a.ReserveAt(now, "s") // sent together
	}
	now = now.Add(ms)
	for i := range burst {
		a.RecordAt(now, "s", classify.Throttle)
		if enabled(&a, now) {
			t.Fatalf("after throttle %d of a burst sent together: enabled; want the isolated throttle let pass", i+1)
		}
	}
	if _, w, _ := a.ReserveAt(now, "s"); w != 0 {
		t.Fatalf("ReserveAt after an isolated throttle = %v; want no wait", w)
	}
	a.RecordAt(now.Add(ms), "s", classify.Throttle) // of the request sent after it
	if st := a.StateAt(now.Add(ms), "s"); !st.Enabled || st.FillRate != 7 {
		t.Errorf("after a throttle of a request sent after the isolated one: %+v; want enabled at 0.7·10 = 7", st)
	}

	// A throttle long after the isolated one is isolated again.
	var b ratelimit.Adaptive
	now = warm(&b)
	b.RecordAt(now, "s", classify.Throttle)
	for at := now.Add(100 * ms); at.Before(now.Add(1500 * ms)); at = at.Add(100 * ms) {
		b.ReserveAt(at, "s")
		b.RecordAt(at, "s", classify.Success)
	}
	b.RecordAt(now.Add(1500*ms), "s", classify.Throttle)
	if enabled(&b, now.Add(1500*ms)) {
		t.Errorf("a throttle 1.5 s after an isolated one: enabled; want it let pass too")
	}

	// Reference mode, as the SDKs, enables at the first throttle.
	r := ratelimit.Adaptive{Reference: true}
	now = warm(&r)
	r.RecordAt(now, "s", classify.Throttle)
	if !enabled(&r, now) {
		t.Errorf("reference mode after one throttle: not enabled; want enabled")
	}
}
