package ratelimit_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file runs the single-client scenario of sim_test.go over many seeds,
// with the perturbations a real client meets at start-up. Without them the
// scenario is the same on every seed: all 16 workers start together and
// every round trip is 2 ms, so the first throttle always comes after the
// same 21 responses, and a limiter whose result depends on that number
// looks right on one lucky value. With them, the first throttle comes after
// 7 to 21 responses, as it does on loopback.

// simJitter is the seeded perturbations of a simulated run. The zero value
// but for Seed is the unperturbed run.
type simJitter struct {
	Seed        uint64
	StartSpread time.Duration // each worker starts uniformly in [0, StartSpread)
	RTTJitter   bool          // each round trip uniform in [RTT/2, 3·RTT/2)
	ServerPhase bool          // the server's bucket starts Burst-u tokens full, u uniform in [0, 1)
	Late        time.Duration // timers fire up to this late; zero means simLate
	// StartTail adds to each round trip sent in the first simStartUp an
	// exponentially distributed delay of this mean: fresh connections
	// dialled together and accepted one by one, and goroutines starting on
	// two CPUs, bring the first responses back late and out of order.
	StartTail time.Duration
	Stall     time.Duration // one pause of the whole client, of up to this long, somewhere in the first simStartUp
}

// simStartUp is the span at start-up that StartTail and Stall affect.
const simStartUp = 50 * time.Millisecond

// simVariant is one set of perturbations of the single-client scenario.
type simVariant struct {
	name string
	rtt  time.Duration
	j    simJitter
}

// simVariants are the perturbations, cumulative up to fleet_like; the
// loopback ones start again from a shorter round trip. The single-client
// goals hold on every one.
var simVariants = []simVariant{
	{"lateness", 2 * ms, simJitter{}},
	{"start_offsets", 2 * ms, simJitter{StartSpread: ms}},
	{"rtt_jitter", 2 * ms, simJitter{StartSpread: ms, RTTJitter: true}},
	{"fleet_like", 2 * ms, simJitter{StartSpread: ms, RTTJitter: true, ServerPhase: true}},
	{"loopback", 200 * time.Microsecond, simJitter{StartSpread: 5 * ms, RTTJitter: true, ServerPhase: true}},
	{"loopback_late_timers", 200 * time.Microsecond, simJitter{StartSpread: 5 * ms, RTTJitter: true, ServerPhase: true, Late: ms}},
	{"start_tail_500us", 200 * time.Microsecond, simJitter{StartSpread: 5 * ms, RTTJitter: true, ServerPhase: true, StartTail: ms / 2}},
	{"start_tail_2ms", 200 * time.Microsecond, simJitter{StartSpread: 5 * ms, RTTJitter: true, ServerPhase: true, StartTail: 2 * ms}},
	{"stall_20ms", 200 * time.Microsecond, simJitter{StartSpread: 5 * ms, RTTJitter: true, ServerPhase: true, Stall: 20 * ms}},
}

// simSeeds is how many seeds each seeded test runs: every bound must hold
// on every one.
const simSeeds = 20

// spread is a figure over seeded runs.
type spread []float64

// mmm returns the least, median and greatest value.
func (s spread) mmm() (lo, med, hi float64) {
	v := slices.Sorted(slices.Values(s))
	n := len(v)
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return v[0], med, v[n-1]
}

// format formats the spread as min / median / max, each with verb.
func (s spread) format(verb string) string {
	if len(s) == 0 {
		return "-"
	}
	lo, med, hi := s.mmm()
	return fmt.Sprintf(verb+" / "+verb+" / "+verb, lo, med, hi)
}

// firstThrottle is an Adaptive that notes its state just after the first
// throttle.
type firstThrottle struct {
	*ratelimit.Adaptive
	first *ratelimit.AdaptiveState
}

func (p *firstThrottle) RecordAt(now time.Time, scope string, k classify.Kind) {
	p.Adaptive.RecordAt(now, scope, k)
	if st := p.StateAt(now, scope); p.first == nil && st.Enabled {
		p.first = &st
	}
}

// simSingleSeeds runs the single-client scenario of v on every seed, the
// server answering each throttle with retryAfter, and returns the goodput,
// the throttled share and the first throttle's LastMax of each run, and
// whether every worker slept through the run's first second: all 16 sent
// their second request before the first 429 came back and drew a 429 too,
// so only the server's burst went through before 1 s. Such a run can reach
// 180 req/s only by sending at exactly the capacity from the instant its
// workers wake (a burst of 20 before the sleep, 20 after it, 7·200 in the
// seven seconds left: 1,440 requests in 8 s), whatever the limiter does.
func simSingleSeeds(newLimiter func() *ratelimit.Adaptive, v simVariant, retryAfter time.Duration) (goodput, throttled, firstMax spread, asleep []bool) {
	for seed := range uint64(simSeeds) {
		j := v.j
		j.Seed = seed
		s := &simScope{Name: "api", Workers: 16, RTT: v.rtt, Server: &simServer{Rate: 200, Burst: 20, RetryAfter: retryAfter}}
		p := &firstThrottle{Adaptive: newLimiter()}
		simRunJittered(p, waitQueue, simDuration, j, s)
		goodput = append(goodput, s.goodput(simDuration))
		throttled = append(throttled, 100*s.throttledShare())
		if p.first != nil {
			firstMax = append(firstMax, p.first.LastMax)
		}
		asleep = append(asleep, s.bins[0]+s.bins[1] <= 2*int(s.Server.Burst))
	}
	return goodput, throttled, firstMax, asleep
}

// TestAdaptiveSimulationSeeds runs the single-client scenario of
// TestAdaptiveSimulation under every start-up variant, with and without
// Retry-After: 1, over simSeeds seeds. Each run must keep 90 % of the
// server's 200 req/s through with at most 5 % of attempts throttled,
// however many responses came back before the first throttle (on main
// before the line, 128 to 193 req/s in fleet_like, 101 to 184 in
// start_tail_2ms). A run in which every worker slept through the first
// second cannot reach 180 req/s; it must reach 175.
func TestAdaptiveSimulationSeeds(t *testing.T) {
	for _, ra := range []time.Duration{0, time.Second} {
		for _, v := range simVariants {
			g, f, first, asleep := simSingleSeeds(func() *ratelimit.Adaptive { return &ratelimit.Adaptive{} }, v, ra)
			t.Logf("Retry-After %v, %-20s goodput %s req/s, 429s %s %%, first lastMax %s",
				ra, v.name, g.format("%.1f"), f.format("%.2f"), first.format("%.0f"))
			for i, x := range g {
				if x < 180 && !(asleep[i] && x >= 175) {
					t.Errorf("Retry-After %v, %s, seed %d: goodput %.1f req/s; want at least 180 (175 if every worker slept through the first second)", ra, v.name, i, x)
				}
			}
			if _, _, hi := f.mmm(); hi > 5 {
				t.Errorf("Retry-After %v, %s: greatest throttled share %.2f%%; want at most 5%%", ra, v.name, hi)
			}
		}
	}
}

// fleetSpread is the figures of seeded fleet runs.
type fleetSpread struct {
	goodput, throttled, p99, jain, failed, down, up spread
	never                                           int // runs not back within 10 % of the capacity's return within the run
}

// fleetSeedRuns runs the fleet that setup makes of fleetScenario on seeds
// 0 to n-1.
func fleetSeedRuns(n int, setup func(*fleetSim)) (fs fleetSpread) {
	for seed := range uint64(n) {
		f := fleetScenario(seed)
		if setup != nil {
			setup(f)
		}
		r := f.run()
		fs.goodput = append(fs.goodput, 100*r.goodputShare())
		fs.throttled = append(fs.throttled, 100*r.throttledShare())
		fs.p99 = append(fs.p99, float64(r.p99().Microseconds())/1000)
		fs.jain = append(fs.jain, r.jain(0, f.Duration))
		fs.failed = append(fs.failed, float64(r.failed()))
		if len(f.Capacity) > 1 {
			fs.down = append(fs.down, r.settle(capacityDrop, capacityReturn).Seconds())
			if up := r.settle(capacityReturn, f.Duration); up >= 0 {
				fs.up = append(fs.up, up.Seconds())
			} else {
				fs.never++
			}
		}
	}
	return fs
}

func (fs fleetSpread) String() string {
	s := fmt.Sprintf("goodput %s %%, 429s %s %%, p99 %s ms, Jain %s, failed %s",
		fs.goodput.format("%.1f"), fs.throttled.format("%.2f"), fs.p99.format("%.0f"), fs.jain.format("%.3f"), fs.failed.format("%.0f"))
	if len(fs.down) > 0 {
		s += fmt.Sprintf(", to 50 req/s in %s s, back to 200 in %s s (not within the run: %d)", fs.down.format("%.1f"), fs.up.format("%.1f"), fs.never)
	}
	return s
}

// loopbackRTT is the round trip of the fleet runs that stand for the
// bench's fleet on loopback (see loopbackFleet).
const loopbackRTT = 300 * time.Microsecond

// loopbackFleet makes f the bench's fleet as it runs on loopback: round
// trips of a few hundred microseconds and replicas starting one after
// another. Its spread of fairness is the real transport's (Jain's index
// 0.923 / 0.971 / 0.993 over the 20 seeds, against 0.940 / 0.979 / 0.997
// over 43 runs of bench/'s steady fleet on 2 CPUs), where the 2 ms fleet
// of fleetScenario reads 0.970 / 0.986 / 0.997. The fleet gets about 28
// throttles in 10 s, three or four per replica, too few for the share
// each replica gets to follow its rate: in the least even seed the
// fastest replica, at 39 req/s, was throttled twice, where its rate makes
// five or six the expected count. Tune fairness on these runs.
func loopbackFleet(f *fleetSim) {
	f.RTT = loopbackRTT
	f.ClientStart = staggeredStart
}

// TestFleetSimulationTable logs the fleet's cases over fleetSeeds seeds as
// min / median / max, the figures of docs/adaptive.md; the bounds are in
// the tests of sim_fleet_test.go. The loopback cases have no bounds yet:
// they are the runs on which the fleet's fairness is to be tuned.
func TestFleetSimulationTable(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(*fleetSim)
	}{
		{"steady", nil},
		{"retry_after", func(f *fleetSim) { f.RetryAfter = time.Second }},
		{"capacity_change", capacityChange},
		{"loopback", loopbackFleet},
		{"loopback_ra", func(f *fleetSim) { loopbackFleet(f); f.RetryAfter = time.Second }},
	} {
		t.Logf("%-16s %v", c.name, fleetSeedRuns(fleetSeeds, c.setup))
	}
}
