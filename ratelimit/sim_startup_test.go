package ratelimit_test

import (
	"testing"
	"time"
)

// This file runs the fleet of sim_fleet_test.go with its replicas starting
// one after another, as they do on loopback: in the bench's fleet
// (bench/, 8 transports of 2 workers on 2 CPUs) the first replicas to get
// a connection and a CPU take the server's burst of 20, and the others'
// first response is a 429. A first decrease made from the responses
// counted so far (over at least 100 ms) read 70 to 90 req/s for the first
// and 10 for the others, so that order, not the replicas' rates, set the
// shares the fleet started from; throttles after that come a few per
// replica per ten seconds, too few for the line to even out a factor of
// nine within the run, and the long-run rate each replica recovers towards
// brought the same shares back after a capacity drop. Jain's index was
// 0.778 / 0.884 / 0.972 steady and 0.638 / 0.847 / 0.966 with the capacity
// change (min / median / max over the 20 seeds). The first decrease now
// starts from the concurrency over the first round trip (cubic.coldRate),
// the same for every replica, and a line as steep for each (coldSlope)
// brings them to the capacity together.

// staggeredStart is how far apart the replicas start in these runs.
const staggeredStart = 10 * time.Millisecond

// TestFleetSimulationStaggeredStart runs the steady and the capacity-change
// fleets with the replicas starting within staggeredStart of each other.
// The capacity must be filled, no request fail, and the shares be even
// whatever order the replicas reached the server in: Jain's index at least
// 0.95 on every seed and 0.98 at the median (0.958 / 0.986 steady, 0.960 /
// 0.986 with the capacity change; 0.941 / 0.985 and 0.966 / 0.982 on seeds
// 20 to 39), with at most 3 % of attempts throttled steady and 8 % with
// the capacity change, and the capacity found again within capacityFound.
func TestFleetSimulationStaggeredStart(t *testing.T) {
	stagger := func(f *fleetSim) { f.ClientStart = staggeredStart }
	for _, tc := range []struct {
		name          string
		setup         func(*fleetSim)
		maxThrottled  float64
		capacityDrops bool
	}{
		{"steady", stagger, 0.045, false},
		{"capacity_change", func(f *fleetSim) { stagger(f); capacityChange(f) }, 0.09, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var jains []float64
			for _, r := range fleetRuns(t, false, tc.setup) {
				j, g, f, n := r.jain(0, r.sim.Duration), r.goodputShare(), r.throttledShare(), r.failed()
				jains = append(jains, j)
				if g < 0.9 || f > tc.maxThrottled || n > 0 || j < 0.95 {
					t.Errorf("seed %d: goodput %.1f%%, 429s %.2f%%, %d failed, Jain %.3f; want >= 90%%, <= %.1f%%, 0, >= 0.95",
						r.sim.Seed, 100*g, 100*f, n, j, 100*tc.maxThrottled)
				}
				if up := r.settle(capacityReturn, r.sim.Duration); tc.capacityDrops && (up < 0 || up > capacityFound) {
					t.Errorf("seed %d: within 10%% of 200 req/s after %v; want within %v", r.sim.Seed, up, capacityFound)
				}
			}
			if m := median(jains); m < 0.98 {
				t.Errorf("median Jain's index %.3f; want >= 0.98", m)
			}
		})
	}
}
