package ratelimit_test

import (
	"testing"
	"time"
)

// This file runs the fleet of sim_fleet_test.go with its replicas starting
// one after another, as they do on loopback: in the bench's fleet
// (bench/, 8 transports of 2 workers on 2 CPUs) the first replicas to get
// a connection and a CPU take the server's burst of 20, and the others'
// first response is a 429. The cold-start estimate (responses so far over
// at least 100 ms) then reads 70 to 90 req/s for the first and 10 for the
// others, and that order, not the replicas' rates, sets the shares the
// fleet starts from. Throttles after that come a few per replica per ten
// seconds, too few for the line to even out a factor of nine within the
// run, and the long-run rate each replica recovers towards (seeded by its
// first measured decrease, averaged over 16 s) brings the same shares back
// after a capacity drop. With every worker starting in the first
// millisecond (sim_fleet_test.go) the estimates are close and none of
// this shows.

// staggeredStart is how far apart the replicas start in these runs.
const staggeredStart = 10 * time.Millisecond

// TestFleetSimulationStaggeredStart runs the steady and the capacity-change
// fleets with the replicas starting within staggeredStart of each other.
// It logs Jain's index per seed and guards what holds today: the capacity
// is filled, no request fails, and the index stays at least 0.75 steady
// and 0.6 with the capacity change (0.778 and 0.638 on the worst seed; the
// bench on loopback saw 0.677 and 0.544). The goal is the simultaneous
// start's 0.94.
func TestFleetSimulationStaggeredStart(t *testing.T) {
	stagger := func(f *fleetSim) { f.ClientStart = staggeredStart }
	for _, tc := range []struct {
		name    string
		setup   func(*fleetSim)
		minJain float64
	}{
		{"steady", stagger, 0.75},
		{"capacity_change", func(f *fleetSim) { stagger(f); capacityChange(f) }, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var jains []float64
			for _, r := range fleetRuns(t, false, tc.setup) {
				j := r.jain(0, r.sim.Duration)
				jains = append(jains, j)
				if g, n := r.goodputShare(), r.failed(); g < 0.9 || n > 0 || j < tc.minJain {
					t.Errorf("seed %d: goodput %.1f%%, %d failed, Jain %.3f; want >= 90%%, 0, >= %.2f", r.sim.Seed, 100*g, n, j, tc.minJain)
				}
			}
			t.Logf("Jain's index, median over %d seeds: %.3f", fleetSeeds, median(jains))
		})
	}
}
