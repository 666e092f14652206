package ratelimit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The expected values in this file are worked out by hand from the formulas
// of docs/aws.md (see the comments on each row), not taken from a run. Instants
// are offsets from t0, the scope's first event, in milliseconds. The
// capacity is max(r·0.1, 1) for a rate r (fill = max(r, 0.5)), except in
// reference mode, where it is the SDKs' max(r, 1).

const ms = time.Millisecond

var approx = cmpopts.EquateApprox(0, 1e-9)

// ev is one call on a scope: a reservation, or the record of an outcome.
type ev struct {
	at      time.Duration
	reserve bool
	kind    classify.Kind
}

func res(at time.Duration) ev                  { return ev{at: at, reserve: true} }
func rec(at time.Duration, k classify.Kind) ev { return ev{at: at, kind: k} }

// steady returns the records of a client answered every 100 ms in (from, to],
// all of kind k except the last, of kind last.
func steady(from, to time.Duration, k, last classify.Kind) []ev {
	var evs []ev
	for at := from + 100*ms; at <= to; at += 100 * ms {
		evs = append(evs, rec(at, k))
	}
	evs[len(evs)-1].kind = last
	return evs
}

// play applies evs to scope "s" of a, after a reservation at t0 that sets the
// scope's origin.
func play(a *ratelimit.Adaptive, evs ...[]ev) {
	a.ReserveAt(t0, "s")
	for _, list := range evs {
		for _, e := range list {
			if e.reserve {
				a.ReserveAt(t0.Add(e.at), "s")
			} else {
				a.RecordAt(t0.Add(e.at), "s", e.kind)
			}
		}
	}
}

func TestAdaptiveArithmetic(t *testing.T) {
	const (
		ok = classify.Success
		th = classify.Throttle
	)
	// Ten successes a second up to 500 ms: bucket [0, 0.5) closes at 500 ms
	// with count 5 (the closing response included), a rate of 5/0.5 = 10.
	tenPerSecond := steady(0, 500*ms, ok, ok)
	throttleAt500 := steady(0, 500*ms, ok, th)
	type want struct {
		Enabled                      bool
		Fill, Measured, Cap, LastMax float64
	}
	tests := []struct {
		name string
		a    *ratelimit.Adaptive
		evs  [][]ev
		at   time.Duration // instant of the snapshot
		want want
	}{
		// Before any bucket closes: 4 responses over 0.4 s estimate 10 req/s.
		// The curve before a throttle is 0.4·t³ capped at 2·measured: at 0.4 s
		// 0.0256, so fill is the 0.5 floor and capacity the 1 floor
		// (0.00256 tokens).
		{"estimate_before_close", &ratelimit.Adaptive{}, [][]ev{steady(0, 400*ms, ok, ok)}, 400 * ms, want{false, 0.5, 10, 1, 0}},
		// The reference has no measurement yet: 0.
		{"reference_zero_before_close", &ratelimit.Adaptive{Reference: true}, [][]ev{steady(0, 400*ms, ok, ok)}, 400 * ms, want{false, 0.5, 0, 1, 0}},
		// First close: 0.8·10 + 0.2·(estimate 5/0.5 = 10) = 10.
		{"first_close", &ratelimit.Adaptive{}, [][]ev{tenPerSecond}, 500 * ms, want{false, 0.5, 10, 1, 0}},
		// Reference: 0.8·10 + 0.2·0 = 8.
		{"reference_first_close", &ratelimit.Adaptive{Reference: true}, [][]ev{tenPerSecond}, 500 * ms, want{false, 0.5, 8, 1, 0}},
		// Second close at 1 s: 0.8·10 + 0.2·8 = 9.6; curve 0.4·1³ = 0.4 < floor.
		{"reference_second_close", &ratelimit.Adaptive{Reference: true}, [][]ev{steady(0, time.Second, ok, ok)}, time.Second, want{false, 0.5, 9.6, 1, 0}},
		// Smoothing 0.75 (docs/aws.md): the first close gives 0.75·10 + 0.25·0
		// = 7.5, the second 0.75·10 + 0.25·7.5 = 9.375.
		{"reference_smoothing_075", &ratelimit.Adaptive{Reference: true, Smoothing: 0.75}, [][]ev{steady(0, time.Second, ok, ok)}, time.Second, want{false, 0.5, 9.375, 1, 0}},
		// A gap: after 10 req/s to 1 s, the next response at 2.2 s closes
		// [1, 2) with count 1 over 1 s: 0.8·1 + 0.2·10 = 2.8. The curve,
		// 0.4·2.2³ = 4.2592, is under the cap 2·2.8; capacity
		// max(0.42592, 1) = 1.
		{"gap", &ratelimit.Adaptive{}, [][]ev{steady(0, time.Second, ok, ok), {rec(2200*ms, ok)}}, 2200 * ms, want{false, 4.2592, 2.8, 1, 0}},
		// Before a throttle the curve is 0.4·t³: at 3 s 10.8, under 2·10;
		// capacity 10.8·0.1 = 1.08, just over the floor.
		{"curve_before_throttle", &ratelimit.Adaptive{}, [][]ev{steady(0, 3*time.Second, ok, ok)}, 3 * time.Second, want{false, 10.8, 10, 1.08, 0}},
		// A throttle at measured 10: lastMax 10, new 0.7·10 = 7 < 2·10;
		// capacity max(0.7, 1) = 1.
		{"throttle", &ratelimit.Adaptive{}, [][]ev{throttleAt500}, 500 * ms, want{true, 7, 10, 1, 10}},
		// Reference, measured 8: 0.7·8 = 5.6, and a second of it, 5.6
		// tokens, as capacity.
		{"reference_throttle", &ratelimit.Adaptive{Reference: true}, [][]ev{throttleAt500}, 500 * ms, want{true, 5.6, 8, 5.6, 8}},
		// Beta 0.5: 0.5·10 = 5; capacity max(0.5, 1) = 1.
		{"throttle_beta_05", &ratelimit.Adaptive{Beta: 0.5}, [][]ev{throttleAt500}, 500 * ms, want{true, 5, 10, 1, 10}},
		// After a throttle the changed algorithm climbs along a line from
		// 0.7·10 = 7 at 2.5 req/s per second per reservation outstanding;
		// these records answer none, so the slope is 2.5 (under the bound
		// 10·0.3/1 s = 3). The throttle came after a bucket closed, so the
		// long-run rate starts at 10; the line is below 0.85 of it, and
		// once 0.3 s have passed without another throttle it also closes
		// its gap to the long-run rate with a time constant of 0.3 s (the
		// recovery). One second after the throttle the line has passed the
		// long-run rate (9.99 by then), and the recovery is over: 10.759;
		// capacity 1.0759.
		{"line_1s_after", &ratelimit.Adaptive{}, [][]ev{throttleAt500, steady(500*ms, 1500*ms, ok, ok)}, 1500 * ms, want{true, 10.758827642135135, 10, 1.0758827642135136, 10}},
		// Three seconds after: the line alone from there, 10.759 + 2.5·2
		// = 15.759, past the rate of the throttle with no plateau;
		// capacity 1.5759.
		{"line_3s_after", &ratelimit.Adaptive{}, [][]ev{throttleAt500, steady(500*ms, 3500*ms, ok, ok)}, 3500 * ms, want{true, 15.758827642135135, 10, 1.5758827642135136, 10}},
		// Additive 2: one second after the throttle its line is
		// 0.7·10 + 2·1 = 9, under the default line's 10.759, which wins.
		{"additive_under_line", &ratelimit.Adaptive{Additive: 2}, [][]ev{throttleAt500, steady(500*ms, 1500*ms, ok, ok)}, 1500 * ms, want{true, 10.758827642135135, 10, 1.0758827642135136, 10}},
		// Additive 5: 0.7·10 + 5·1 = 12 is over the line and under the cap
		// 2·10; capacity 1.2.
		{"additive_over_curve", &ratelimit.Adaptive{Additive: 5}, [][]ev{throttleAt500, steady(500*ms, 1500*ms, ok, ok)}, 1500 * ms, want{true, 12, 10, 1.2, 10}},
		// Reference mode ignores it: the curve from the throttle's lastMax
		// 8 (W = cbrt(6) = 1.817121 s) one second later,
		// 0.4·(1 - 1.817121)³ + 8 = 7.781768, with a second of it as
		// capacity; the buckets closing at 1 and 1.5 s measured
		// 0.8·10 + 0.2·8 = 9.6 and then 0.8·10 + 0.2·9.6 = 9.92.
		{"reference_ignores_additive", &ratelimit.Adaptive{Reference: true, Additive: 5}, [][]ev{throttleAt500, steady(500*ms, 1500*ms, ok, ok)}, 1500 * ms, want{true, 7.781767987274984, 9.92, 7.781767987274984, 8}},
		// The cap: after the throttle, silence until 1.5 s. The response then
		// closes [0.5, 1.5) with count 1: measured 0.8·1 + 0.2·10 = 2.8,
		// twice which is 5.6; but the rate of the last throttle, 10, was
		// sent, so the cap is max(5.6, 10) and the line's 7 + 2.5·1 = 9.5
		// stands (a client whose workers slept through a Retry-After goes
		// back to its rate). Capacity max(0.95, 1) = 1.
		{"cap_last_max", &ratelimit.Adaptive{}, [][]ev{throttleAt500, {rec(1500*ms, ok)}}, 1500 * ms, want{true, 9.5, 2.8, 1, 10}},
		// The same in reference mode, where capacity is the rate: the
		// throttle's close measured 8 (lastMax 8, W = cbrt(8·0.3/0.4) =
		// cbrt(6) = 1.817121 s); at 1.5 s, 0.8·1 + 0.2·8 = 2.4, so the
		// curve's 0.4·(1 - 1.817121)³ + 8 = 7.781768 is capped at 2·2.4 =
		// 4.8, and capacity is 4.8 too.
		{"reference_cap_2x_measured", &ratelimit.Adaptive{Reference: true}, [][]ev{throttleAt500, {rec(1500*ms, ok)}}, 1500 * ms, want{true, 4.8, 2.4, 4.8, 8}},
		// The floors. Reference cold start: throttled at 4 ms with measured
		// 0, so lastMax 0 and new 0: fill max(0, 0.5), capacity max(0, 1).
		{"reference_cold_start", &ratelimit.Adaptive{Reference: true}, [][]ev{{rec(4*ms, th)}}, 4 * ms, want{true, 0.5, 0, 1, 0}},
		// The Kotlin SDK's MinFillRate 1.0 (docs/aws.md): fill max(0, 1).
		{"reference_min_fill_1", &ratelimit.Adaptive{Reference: true, MinFillRate: 1}, [][]ev{{rec(4*ms, th)}}, 4 * ms, want{true, 1, 0, 1, 0}},
		// One response in 1 s, a throttle: it closes [0, 1) with count 1,
		// 0.8·1 + 0.2·(estimate 1/1) = 1; new 0.7 is above the 0.5 floor but
		// capacity stays at 1 (0.07 tokens).
		{"capacity_floor", &ratelimit.Adaptive{}, [][]ev{{rec(time.Second, th)}}, time.Second, want{true, 0.7, 1, 1, 1}},
		// The cold-start fix: 21 reservations at t0 (play's and 20 more),
		// 20 responses at 2 ms, a throttle at 4 ms. The first decrease
		// starts from the concurrency over the first round trip (Little's
		// law), the round trip floored at 100 ms: 21/max(0.002, 0.1) = 210,
		// so fill 0.7·210 = 147 and capacity 0.1·147 = 14.7 (the SDKs would
		// hold 147). The measured rate is the responses so far over at
		// least 100 ms, 21/0.1 = 210 too.
		{"cold_start", &ratelimit.Adaptive{}, [][]ev{reserves(20, 0), burst(20, 2*ms, ok), {rec(4*ms, th)}}, 4 * ms, want{true, 147, 210, 14.7, 210}},
		// The same client whose first response is the throttle (another
		// client had the server's burst): the same 210 and 147, where a
		// count of the responses would read 1/0.1 = 10.
		{"cold_start_arrival_order", &ratelimit.Adaptive{}, [][]ev{reserves(20, 0), {rec(2*ms, th)}}, 2 * ms, want{true, 147, 10, 14.7, 210}},
		// A round trip past the floor: 5 reservations at t0 and the first
		// response, a throttle, at 250 ms read 5/0.25 = 20, so the fill is
		// 14 and the capacity 1.4; the measured rate is 1/0.25 = 4.
		{"cold_start_past_floor", &ratelimit.Adaptive{}, [][]ev{reserves(4, 0), {rec(250*ms, th)}}, 250 * ms, want{true, 14, 4, 1.4, 20}},
		{"reference_cold_start_burst", &ratelimit.Adaptive{Reference: true}, [][]ev{burst(20, 2*ms, ok), {rec(4*ms, th)}}, 4 * ms, want{true, 0.5, 0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			play(tt.a, tt.evs...)
			st := tt.a.StateAt(t0.Add(tt.at), "s")
			got := want{st.Enabled, st.FillRate, st.MeasuredRate, st.Capacity, st.LastMax}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("StateAt(t0+%v) mismatch (-want +got):\n%s", tt.at, diff)
			}
		})
	}
}

// reserves returns n reservations at at.
func reserves(n int, at time.Duration) []ev {
	evs := make([]ev, n)
	for i := range evs {
		evs[i] = res(at)
	}
	return evs
}

func burst(n int, at time.Duration, k classify.Kind) []ev {
	evs := make([]ev, n)
	for i := range evs {
		evs[i] = rec(at, k)
	}
	return evs
}

func TestAdaptiveDampsCompoundedDecreases(t *testing.T) {
	const (
		ok = classify.Success
		th = classify.Throttle
	)
	// A client answered every 100 ms reserves again after each answer, and
	// reserves three more at 450 ms: four requests are in flight (8
	// reservations, 4 answers) when all four are throttled at 500 ms.
	var inFlight []ev
	for at := 100 * ms; at <= 400*ms; at += 100 * ms {
		inFlight = append(inFlight, rec(at, ok), res(at))
	}
	inFlight = append(inFlight, res(450*ms), res(450*ms), res(450*ms))
	type want struct{ Fill, LastMax float64 }
	tests := []struct {
		name      string
		reference bool
		evs       []ev
		at        time.Duration
		want      want
	}{
		// The first throttle closes [0, 0.5) at 10 req/s (8 in reference
		// mode) and decreases to 0.7·10 = 7. The other three answer
		// reservations taken before it (answers 6 to 8 of 8 reservations):
		// they restart the curve at 7 without decreasing again.
		{"held", false, burst(4, 500*ms, th), 500 * ms, want{7, 10}},
		// The reference decreases four times: 5.6, then 0.7·min(8, 5.6) =
		// 3.92, 2.744 and 1.9208.
		{"reference_compounds", true, burst(4, 500*ms, th), 500 * ms, want{1.9208, 2.744}},
		// A request reserved after the decrease is throttled at 600 ms (answer
		// 9 > 8): that is news, the rate decreases from min(10, 7) to 4.9.
		{"next_round_trip_decreases", false, append(burst(4, 500*ms, th), res(500*ms), rec(600*ms, th)), 600 * ms, want{4.9, 7}},
		{"reference_next_round_trip", true, append(burst(4, 500*ms, th), res(500*ms), rec(600*ms, th)), 600 * ms, want{1.34456, 1.9208}},
		// A hold lasts under a second: a throttle at 1499 ms is still held
		// (the curve restarts at 0.7·10 = 7, under the cap 2·(0.8·1/0.5 +
		// 0.2·10) = 7.2)...
		{"held_under_1s", false, []ev{rec(500*ms, th), rec(1499*ms, th)}, 1499 * ms, want{7, 10}},
		// ...one at 1500 ms decreases, from the fill rate in use, 7 (the
		// SDKs would take the measured 0.8·1/1 + 0.2·10 = 2.8, lower: a
		// client throttled twice in a row would fall far below its share):
		// 0.7·7 = 4.9.
		{"hold_expires_after_1s", false, []ev{rec(500*ms, th), rec(1500*ms, th)}, 1500 * ms, want{4.9, 7}},
		// The reference decreases from the lower of the measured and the
		// fill rate, as the SDKs do: after its throttle at 500 ms (measured
		// 8, fill 5.6) the throttle at 1500 ms, measured 0.8·1/1 + 0.2·8 =
		// 2.4, takes 0.7·2.4 = 1.68.
		{"reference_decreases_from_measured", true, []ev{rec(500*ms, th), rec(1500*ms, th)}, 1500 * ms, want{1.68, 2.4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ratelimit.Adaptive{Reference: tt.reference}
			play(&a, inFlight, tt.evs)
			st := a.StateAt(t0.Add(tt.at), "s")
			if diff := cmp.Diff(tt.want, want{st.FillRate, st.LastMax}, approx); diff != "" {
				t.Errorf("StateAt(t0+%v) mismatch (-want +got):\n%s", tt.at, diff)
			}
		})
	}
}

func TestAdaptiveWaitsForRefill(t *testing.T) {
	throttleAt500 := steady(0, 500*ms, classify.Success, classify.Throttle)
	type step struct {
		At   time.Duration
		Wait time.Duration
	}
	tests := []struct {
		name  string
		a     *ratelimit.Adaptive
		steps []step
	}{
		// Enabled at 500 ms with fill 7, capacity max(0.7, 1) = 1 and an
		// empty bucket: the first send waits (1 - 0)/7 = 142.857143 ms, the
		// second (1 + 1)/7, rounded up to the nanosecond. A second later 7
		// tokens have come, but the bucket holds 1: min(-2 + 7, 1) = 1, so
		// one send goes at once and the next waits (1 - 0)/7 again (with
		// the SDKs' capacity of 7, four would go at once).
		{"fixed", &ratelimit.Adaptive{}, []step{
			{500 * ms, 142857143}, {500 * ms, 285714286}, {1500 * ms, 0}, {1500 * ms, 142857143},
		}},
		// The reference filled the bucket before the throttle: 0.05 tokens
		// per 100 ms at 0.5/s up to capacity 1, so 0.25 at 500 ms, and the
		// first wait is (1 - 0.25)/5.6 = 133.928571 ms, the second
		// (1 + 0.75)/5.6 = 312.5 ms. A second later 5.6 tokens have come
		// and the bucket holds 5.6: -1.75 + 5.6 = 3.85, so three sends go
		// at once and the fourth waits (1 - 0.85)/5.6 = 26.785714 ms.
		{"reference", &ratelimit.Adaptive{Reference: true}, []step{
			{500 * ms, 133928572}, {500 * ms, 312500000},
			{1500 * ms, 0}, {1500 * ms, 0}, {1500 * ms, 0}, {1500 * ms, 26785715},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			play(tt.a, throttleAt500)
			var got []step
			for _, s := range tt.steps {
				_, w, ok := tt.a.ReserveAt(t0.Add(s.At), "s")
				if !ok {
					t.Fatalf("ReserveAt(t0+%v) refused; want granted", s.At)
				}
				got = append(got, step{s.At, w})
			}
			if diff := cmp.Diff(tt.steps, got); diff != "" {
				t.Errorf("ReserveAt waits mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
