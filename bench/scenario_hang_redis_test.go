package main

import (
	"slices"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
)

// TestHangRedisGoals checks that each hang-redis goal fails when one run
// misses it: more probes than open times, circuits that never all opened,
// or a replica closed later than a probe interval after the recovery, or
// never.
func TestHangRedisGoals(t *testing.T) {
	good := hangRedisRun{probes: 1, intervals: 1, closedAfter: 900 * time.Millisecond}
	good.probeInterval = 3 * time.Second
	tests := []struct {
		name string
		bad  func(*hangRedisRun)
		want []bool // probes per open time, all closed
	}{
		{"everyRunMeetsBoth", func(*hangRedisRun) {}, []bool{true, true}},
		{"twoProbesInOneOpenTime", func(r *hangRedisRun) { r.probes = 2 }, []bool{false, true}},
		{"aProbeWithoutAnOpenTime", func(r *hangRedisRun) { r.intervals = 0 }, []bool{false, true}},
		{"neverAllOpen", func(r *hangRedisRun) { r.probes = -1 }, []bool{false, true}},
		{"closedLate", func(r *hangRedisRun) { r.closedAfter = 3100 * time.Millisecond }, []bool{true, false}},
		{"neverClosed", func(r *hangRedisRun) { r.closedAfter = -1 }, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := good
			tt.bad(&bad)
			goals := hangRedisGoals("shared", []hangRedisRun{good, bad})
			var got []bool
			for _, g := range goals {
				got = append(got, g.met)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("hangRedisGoals(%s) met = %v; want %v\n%v", tt.name, got, tt.want, goals)
			}
		})
	}
}

// scriptedBreaker is a stateBreaker whose State is set by the test.
type scriptedBreaker struct {
	breaker.Circuit // Allow, never called
	state           breaker.State
}

func (b *scriptedBreaker) State(string) breaker.State { return b.state }

// TestCircuitWatch checks what the watch makes of the circuits' states:
// when they had all opened (in the hang, not before), the open times that
// ended in the hang after that, counted once for a shared circuit and
// averaged over the replicas for a circuit each, the longest open time at
// the recovery, and when they had all closed after it.
func TestCircuitWatch(t *testing.T) {
	t0 := time.Now()
	ph := hangPhases{start: t0, hangAt: t0.Add(3 * time.Second), recoverAt: t0.Add(8 * time.Second), end: t0.Add(11 * time.Second)}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	open := func(opens uint64, until float64, openFor time.Duration) breaker.State {
		return breaker.State{Phase: breaker.Open, Opens: opens, Until: at(until), OpenFor: openFor}
	}
	closed := breaker.State{}
	a, b := &scriptedBreaker{}, &scriptedBreaker{}
	cw := &circuitWatch{ph: ph, breakers: []stateBreaker{a, b}}
	cw.untils = []map[uint64]time.Time{{}, {}}
	// Both open before the hang (a run's own trouble): not the opening.
	a.state, b.state = open(1, 2.5, time.Second), open(1, 2.5, time.Second)
	cw.look(at(2))
	a.state, b.state = closed, closed
	cw.look(at(2.6))
	// In the hang: a opens, then b, with open times that end in it.
	a.state = open(2, 5.0, 1500*time.Millisecond)
	cw.look(at(3.5))
	b.state = open(2, 5.1, 1500*time.Millisecond)
	cw.look(at(3.6))
	// They probe and open again, until after the recovery.
	a.state, b.state = open(3, 8.5, 3*time.Second), open(3, 8.6, 3*time.Second)
	cw.look(at(5.5))
	b.state.OpenFor = 6 * time.Second
	cw.look(at(8)) // the recovery
	a.state = closed
	cw.look(at(8.5))
	b.state = closed
	cw.look(at(8.6))

	if !cw.opened.Equal(at(3.6)) || cw.openFor != 6*time.Second || !cw.closed.Equal(at(8.6)) {
		t.Errorf("circuitWatch: opened %v, open time at the recovery %v, closed %v after the start; want 3.6s, 6s, 8.6s",
			cw.opened.Sub(t0), cw.openFor, cw.closed.Sub(t0))
	}
	// Shared: opening 2 ended in the hang after 3.6 s (5.0 as a saw it,
	// 5.1 as b did), 1 before the hang, 3 after the recovery.
	if got := cw.intervals(true); got != 1 {
		t.Errorf("circuitWatch.intervals(shared) = %v; want 1", got)
	}
	// A circuit each: one open time each in the hang.
	if got := cw.intervals(false); got != 1 {
		t.Errorf("circuitWatch.intervals(a circuit each) = %v; want 1", got)
	}
	b.state = open(4, 9, time.Second)
	cw2 := &circuitWatch{ph: ph, breakers: []stateBreaker{a, b}, untils: []map[uint64]time.Time{{}, {}}}
	cw2.look(at(4))
	if !cw2.opened.IsZero() || cw2.intervals(true) != 0 {
		t.Errorf("circuitWatch with one circuit closed: opened at %v, %v open times; want never, 0", cw2.opened.Sub(t0), cw2.intervals(true))
	}
}
