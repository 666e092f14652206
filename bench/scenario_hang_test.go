package main

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestHangOutcomes checks the callers' side of a hang run: the p99 of the
// requests started from hangSettled into the hang until the recovery
// only, the first success that ended after the recovery, and the failures
// started from hangSettled after it apart from the others.
func TestHangOutcomes(t *testing.T) {
	t0 := time.Now()
	ph := hangPhases{start: t0, hangAt: t0.Add(3 * time.Second), recoverAt: t0.Add(8 * time.Second), end: t0.Add(11 * time.Second)}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ok := func(from, to float64) outcome { return outcome{start: at(from), end: at(to), status: 200} }
	failed := func(from, to float64) outcome {
		return outcome{start: at(from), end: at(to), err: errors.New("timeout")}
	}
	outs := []outcome{
		ok(0, 0.005),
		failed(3.2, 3.7),     // in the hang, before it settled: not in the p99
		failed(4.0, 4.001),   // settled: 1 ms
		failed(5.0, 5.5),     // the probe: 500 ms
		failed(7.999, 8.499), // started in the hang, ended after the recovery: in the p99, not late
		failed(8.5, 8.5),     // after the recovery, not yet late
		ok(8.6, 8.605),       // the first success: 605 ms after the recovery
		failed(9.0, 9.0),     // late
		ok(9.1, 9.2),
	}
	r := hangOutcomes(outs, ph)
	want := hangRun{requests: 9, p99: 500 * time.Millisecond, firstSuccess: 605 * time.Millisecond, failedLate: 1, failed: 6}
	if r.p99 != want.p99 || r.requests != want.requests || r.failedLate != want.failedLate || r.failed != want.failed ||
		(r.firstSuccess-want.firstSuccess).Abs() > time.Microsecond {
		t.Errorf("hangOutcomes() = %+v; want %+v", r, want)
	}
	if r := hangOutcomes(outs[:6], ph); r.firstSuccess != -1 {
		t.Errorf("hangOutcomes(no success after the recovery).firstSuccess = %v; want -1", r.firstSuccess)
	}
}

// TestHangGoals checks that each hang goal fails when one run misses it:
// a slow p99 in the hang, too many requests to the hung server, a first
// success later than that run's probe interval, or none, and one late
// failure.
func TestHangGoals(t *testing.T) {
	ms := time.Millisecond
	good := hangRun{p99: ms, hung: 10, firstSuccess: 500 * ms, probeInterval: 3 * time.Second}
	tests := []struct {
		name string
		bad  func(*hangRun)
		want []bool // p99, hung, first success, late failures
	}{
		{"everyRunMeetsAll", func(*hangRun) {}, []bool{true, true, true, true}},
		{"slowInTheHang", func(r *hangRun) { r.p99 = 11 * ms }, []bool{false, true, true, true}},
		{"elevenHung", func(r *hangRun) { r.hung = 11 }, []bool{true, false, true, true}},
		{"firstSuccessAfterTheInterval", func(r *hangRun) { r.firstSuccess, r.probeInterval = 1600*ms, 1500*ms }, []bool{true, true, false, true}},
		{"noSuccess", func(r *hangRun) { r.firstSuccess = -1 }, []bool{true, true, false, true}},
		{"oneLateFailure", func(r *hangRun) { r.failedLate = 1 }, []bool{true, true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := good
			tt.bad(&bad)
			goals := hangGoals("ours", []hangRun{good, bad, good})
			var got []bool
			for _, g := range goals {
				got = append(got, g.met)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("hangGoals(%s) met = %v; want %v\n%v", tt.name, got, tt.want, goals)
			}
		})
	}
}

// TestBrownoutBreakerGoal checks that ours with the breaker may fail no
// more requests after the brownout's recovery in any run than standard
// mode at its median.
func TestBrownoutBreakerGoal(t *testing.T) {
	runs := func(failedAfter ...int) []brownoutRun {
		rs := make([]brownoutRun, len(failedAfter))
		for i, n := range failedAfter {
			rs[i].failedAfter = n
		}
		return rs
	}
	standard := runs(0, 1, 5)
	for _, tt := range []struct {
		ours []brownoutRun
		want bool
	}{{runs(0, 1, 0), true}, {runs(0, 2, 0), false}} {
		if g := brownoutBreakerGoal("ours", tt.ours, standard); g.met != tt.want {
			t.Errorf("brownoutBreakerGoal(%v against %v) met = %t; want %t: %s", tt.ours, standard, g.met, tt.want, g.text)
		}
	}
}
