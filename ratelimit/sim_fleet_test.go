package ratelimit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file extends the simulation to a fleet: independent clients, each
// with its own Adaptive and its own quota.Bucket as separate transports have,
// sharing one server. Each client runs the transport's loop for every
// logical request: reserve a send token (asking the reservation again after
// each wait, as the transport does), send, record the outcome; after a throttle, pay the
// quota (in reference mode only, as the transport does), sleep the
// server's Retry-After or the backoff, and try again, up to
// fleetMaxAttempts, and after throttles up to the limiter's
// ExtraThrottleRetries more, as the transport counts them. Round trips vary between RTT/2 and 3·RTT/2 and backoffs
// are jittered, both from a seeded generator, so every run is the same.

// fleetSim is one fleet run's setup.
type fleetSim struct {
	Clients, Workers int
	RTT              time.Duration
	Capacity         []capacityStep // the server's rate over time; the first step is at 0
	Burst            float64
	RetryAfter       time.Duration // of every 429; zero means none, the clients back off
	Duration         time.Duration
	Seed             uint64
	NewLimiter       func() *ratelimit.Adaptive // nil means &ratelimit.Adaptive{}
	NewQuota         func() *quota.Bucket       // nil means &quota.Bucket{}
	Waiting          simWaiting                 // how the workers wait for their send tokens; zero means as the transport does

	// ClientStart, if set, starts each client's workers at an offset drawn
	// for the client from [0, ClientStart), as replicas on loopback start
	// one after another (see sim_startup_test.go); zero starts every
	// worker within the first millisecond.
	ClientStart time.Duration
}

// The transport's defaults that the fleet runs use: AWS standard mode's
// three attempts, and its throttle backoff scaled as bench/ scales it
// (full jitter from 1 ms, capped at 20 ms).
const (
	fleetMaxAttempts = 3
	fleetBackoffBase = time.Millisecond
	fleetBackoffMax  = 20 * time.Millisecond
	fleetBin         = 100 * time.Millisecond
)

// fleetClient is one client's state and figures.
type fleetClient struct {
	lim   *ratelimit.Adaptive
	quota *quota.Bucket

	sent, admitted, throttled int // attempts
	failed, quotaRefusals     int // logical requests
	latencies                 []time.Duration
	admittedBins              []int // attempts admitted per fleetBin, by send time
}

// fleetResult is what a fleet run measured.
type fleetResult struct {
	sim     *fleetSim
	clients []*fleetClient
}

const fleetScope = "api"

// run simulates the fleet.
func (f *fleetSim) run() *fleetResult {
	// What a logical request carries beyond what simLoop keeps of it.
	type fleetRequest struct {
		extra int // retries after paced throttles, beyond fleetMaxAttempts (ExtraThrottleRetries)
		cost  int
	}
	rnd := rand.New(rand.NewPCG(f.Seed, 1))
	bins := int(f.Duration / fleetBin)
	res := &fleetResult{sim: f}
	for range f.Clients {
		c := &fleetClient{admittedBins: make([]int, bins)}
		c.lim, c.quota = &ratelimit.Adaptive{}, &quota.Bucket{}
		if f.NewLimiter != nil {
			c.lim = f.NewLimiter()
		}
		if f.NewQuota != nil {
			c.quota = f.NewQuota()
		}
		res.clients = append(res.clients, c)
	}
	srv := &simServer{Rate: f.Capacity[0].Rate, Burst: f.Burst, Changes: f.Capacity[1:]}
	reqs := make([]fleetRequest, f.Clients*f.Workers) // one logical request per worker at a time
	offsets := make([]time.Duration, f.Clients)
	if f.ClientStart > 0 {
		// Drawn only when set, so that the other runs draw as before.
		for i := range offsets {
			offsets[i] = time.Duration(rnd.Int64N(int64(f.ClientStart)))
		}
	}
	starts := make([]time.Duration, len(reqs))
	for w := range starts {
		// Workers start within the first millisecond, not all at once.
		starts[w] = offsets[w/f.Workers] + time.Duration(rnd.Int64N(int64(time.Millisecond)))
	}
	client := func(w int) *fleetClient { return res.clients[w/f.Workers] }
	l := &simLoop{
		Until: f.Duration,
		Late:  func() time.Duration { return time.Duration(rnd.Int64N(int64(simLate))) },
		Limiter: func(w int) (simLimiter, simWaiting, string) {
			return client(w).lim, f.Waiting, fleetScope
		},
		Send: func(w int, at time.Duration, _ *simRequest) (time.Duration, bool) {
			c := client(w)
			c.sent++
			admitted := srv.admit(at)
			if admitted {
				c.admitted++
				c.admittedBins[at/fleetBin]++
			} else {
				c.throttled++
			}
			return f.RTT/2 + time.Duration(rnd.Int64N(int64(f.RTT))), !admitted
		},
		Answer: func(w int, at time.Duration, throttled bool, lr *simRequest) (wait time.Duration, done bool) {
			c, r, now := client(w), &reqs[w], t0.Add(at)
			switch {
			case !throttled:
				if r.cost > 0 {
					c.quota.RefundAt(now, fleetScope, r.cost)
				} else if lr.attempt == 1 {
					c.quota.SuccessAt(now, fleetScope)
				}
				done = true
			case lr.attempt-r.extra >= fleetMaxAttempts && r.extra >= c.lim.ExtraThrottleRetries():
				c.failed++
				done = true
			default:
				cost, ok := 0, true
				if c.lim.Reference { // as in the transport, a changed limiter's throttles cost no quota
					cost, _, ok = c.quota.AcquireAt(now, fleetScope, classify.Throttle)
				}
				if !ok {
					c.failed++
					c.quotaRefusals++
					done = true
					break
				}
				r.cost = cost
				if lr.attempt-r.extra >= fleetMaxAttempts {
					r.extra++ // as in the transport, the limiter's retry, not one of the policy's attempts
				}
				if f.RetryAfter > 0 {
					wait = f.RetryAfter
				} else {
					ceil := min(fleetBackoffBase<<(lr.attempt-1), fleetBackoffMax)
					wait = time.Duration(rnd.Int64N(int64(ceil) + 1))
				}
			}
			if done {
				c.latencies = append(c.latencies, at-lr.start)
				*r = fleetRequest{}
			}
			return wait, done
		},
	}
	l.run(starts)
	return res
}

// capacityAt returns the server's rate at instant at.
func (f *fleetSim) capacityAt(at time.Duration) float64 {
	r := f.Capacity[0].Rate
	for _, s := range f.Capacity[1:] {
		if at >= s.At {
			r = s.Rate
		}
	}
	return r
}

// capacityBetween returns the requests the server's rate admits in [from, to).
func (f *fleetSim) capacityBetween(from, to time.Duration) float64 {
	n := 0.0
	for at := from; at < to; at += fleetBin {
		n += f.capacityAt(at) * fleetBin.Seconds()
	}
	return n
}

// goodputShare returns the admitted attempts over the capacity of the run.
func (r *fleetResult) goodputShare() float64 {
	n := 0
	for _, c := range r.clients {
		n += c.admitted
	}
	return float64(n) / r.sim.capacityBetween(0, r.sim.Duration)
}

// throttledShare returns the share of attempts answered 429.
func (r *fleetResult) throttledShare() float64 {
	sent, throttled := 0, 0
	for _, c := range r.clients {
		sent += c.sent
		throttled += c.throttled
	}
	return float64(throttled) / float64(sent)
}

// failed returns the logical requests that failed.
func (r *fleetResult) failed() int {
	return sumOver(r.clients, func(c *fleetClient) int { return c.failed })
}

// sumOver returns the sum of f over clients.
func sumOver[C any](clients []C, f func(C) int) int {
	n := 0
	for _, c := range clients {
		n += f(c)
	}
	return n
}

// p99 returns the 99th percentile of the logical requests' latencies.
func (r *fleetResult) p99() time.Duration {
	return p99Over(r.clients, func(c *fleetClient) []time.Duration { return c.latencies })
}

// p99Over returns the 99th percentile of the latencies f gives of clients,
// all together.
func p99Over[C any](clients []C, f func(C) []time.Duration) time.Duration {
	var all []time.Duration
	for _, c := range clients {
		all = append(all, f(c)...)
	}
	slices.Sort(all)
	return all[min(len(all)*99/100, len(all)-1)]
}

// jain returns Jain's fairness index of the clients' admitted attempts in
// [from, to): (Σx)²/(n·Σx²), 1 when all are equal, 1/n when one has all.
func (r *fleetResult) jain(from, to time.Duration) float64 {
	var sum, sq float64
	for _, c := range r.clients {
		x := 0.0
		for _, n := range c.admittedBins[from/fleetBin : to/fleetBin] {
			x += float64(n)
		}
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(r.clients)) * sq)
}

// settle returns how long after the capacity change at instant at the fleet
// took to be admitted within ±10 % of the new capacity: the end of the first
// 500 ms window starting at or after the change whose admitted rate is
// within 10 % of it. It returns -1 if no window before until is.
func (r *fleetResult) settle(at, until time.Duration) time.Duration {
	const window = 5 * fleetBin
	want := r.sim.capacityAt(at) * window.Seconds()
	for from := at; from+window <= until; from += fleetBin {
		n := 0
		for _, c := range r.clients {
			for _, k := range c.admittedBins[from/fleetBin : (from+window)/fleetBin] {
				n += k
			}
		}
		if math.Abs(float64(n)-want) <= 0.1*want {
			return from + window - at
		}
	}
	return -1
}

func (r *fleetResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goodput %.1f%% of capacity, 429s %.2f%%, failed %d, p99 %v, Jain %.3f\n",
		100*r.goodputShare(), 100*r.throttledShare(), r.failed(), r.p99(), r.jain(0, r.sim.Duration))
	for i, c := range r.clients {
		fmt.Fprintf(&b, "client %d: %.1f req/s admitted, %d throttled, %d failed (%d by the quota), quota %.0f; admitted per 500 ms:",
			i, float64(c.admitted)/r.sim.Duration.Seconds(), c.throttled, c.failed, c.quotaRefusals, c.quota.LevelAt(t0.Add(r.sim.Duration), fleetScope))
		for j := 0; j+5 <= len(c.admittedBins); j += 5 {
			n := 0
			for _, k := range c.admittedBins[j : j+5] {
				n += k
			}
			fmt.Fprintf(&b, " %d", n)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fleetScenario is the fleet of the bench: 8 clients of 2 workers each, a
// server of 200 req/s with a burst of 20, for 10 seconds.
func fleetScenario(seed uint64) *fleetSim {
	return &fleetSim{Clients: 8, Workers: 2, RTT: 2 * ms, Capacity: []capacityStep{{0, 200}}, Burst: 20,
		Duration: 10 * time.Second, Seed: seed}
}

// fleetSeeds is how many seeded runs each fleet test makes: every bound
// must hold on every one of them.
const fleetSeeds = 20

// fleetRuns runs the scenario that setup makes of fleetScenario once per
// seed, with the changed algorithm or the reference one.
func fleetRuns(t *testing.T, reference bool, setup func(*fleetSim)) []*fleetResult {
	t.Helper()
	var rs []*fleetResult
	for seed := range uint64(fleetSeeds) {
		f := fleetScenario(seed)
		f.NewLimiter = func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Reference: reference} }
		if setup != nil {
			setup(f)
		}
		r := f.run()
		t.Logf("reference %t, seed %d: %v", reference, seed, r)
		rs = append(rs, r)
	}
	return rs
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// TestFleetSimulation runs 8 independent clients against one server of 200
// req/s without Retry-After. The changed algorithm must fill the capacity
// and fail no logical request on every seed, share it evenly (Jain's index
// at least 0.96 on every seed, 0.98 at the median; 0.970 / 0.986 since the
// cold start no longer counts responses) with at most 3 % of
// attempts throttled; the reference algorithm, whose clients each collapse
// at cold start, is logged and must stay well below.
func TestFleetSimulation(t *testing.T) {
	var jains []float64
	for _, r := range fleetRuns(t, false, nil) {
		g, f, n, p99, j := r.goodputShare(), r.throttledShare(), r.failed(), r.p99(), r.jain(0, r.sim.Duration)
		jains = append(jains, j)
		if g < 0.95 || f > 0.045 || n > 0 || p99 > 250*ms || j < 0.975 {
			t.Errorf("seed %d: goodput %.1f%%, 429s %.2f%%, %d failed, p99 %v, Jain %.3f; want >= 95%%, <= 4.5%%, 0, <= 250ms, >= 0.975",
				r.sim.Seed, 100*g, 100*f, n, p99, j)
		}
	}
	if m := median(jains); m < 0.98 {
		t.Errorf("median Jain's index %.3f; want >= 0.98", m)
	}
	for _, r := range fleetRuns(t, true, nil) {
		if g := r.goodputShare(); g > 0.75 {
			t.Errorf("reference, seed %d: goodput %.1f%%; want below 75%%, or the simulation no longer shows the cold-start collapse", r.sim.Seed, 100*g)
		}
	}
}

// TestFleetSimulationRetryAfter is TestFleetSimulation with Retry-After: 1
// on every 429: each throttled worker sleeps a second. The bucket holding a
// tenth of a second of tokens is what keeps the fleet near capacity: with a
// second's worth, as the SDKs hold, the same fleet got 49 % to 76 % of it.
// A client whose workers slept goes back to the rate of its last throttle
// at once (the cap is not twice a measured rate that the sleep dragged
// down), which keeps the shares even.
func TestFleetSimulationRetryAfter(t *testing.T) {
	for _, r := range fleetRuns(t, false, func(f *fleetSim) { f.RetryAfter = time.Second }) {
		if g, f, n, j := r.goodputShare(), r.throttledShare(), r.failed(), r.jain(0, r.sim.Duration); g < 0.9 || f > 0.04 || n > 0 || j < 0.95 {
			t.Errorf("seed %d: goodput %.1f%%, 429s %.2f%%, %d failed, Jain %.3f; want >= 90%%, <= 4%%, 0, >= 0.95", r.sim.Seed, 100*g, 100*f, n, j)
		}
	}
}

// The capacity-change runs: the server drops from 200 to 50 req/s at
// capacityDrop and comes back to 200 at capacityReturn.
const (
	capacityDrop   = 4 * time.Second
	capacityReturn = 7 * time.Second
)

// capacityFound bounds how long after the capacity comes back the fleet
// takes to be within 10 % of it: 2 s is the goal, with a tenth of a second
// of slack for the simulation's 100 ms bins. The 20 seeds take 1.0 to
// 1.8 s; one of seeds 20 to 39 takes 2.6 s.
const capacityFound = 2100 * time.Millisecond

// capacityChange gives f's server the capacity-change schedule.
func capacityChange(f *fleetSim) {
	f.Capacity = []capacityStep{{0, 200}, {capacityDrop, 50}, {capacityReturn, 200}}
}

// TestFleetSimulationCapacityChange drops the server from 200 to 50 req/s
// at 4 s and raises it back to 200 at 7 s. The fleet must follow the drop
// within a second and the return within two (the recovery towards each
// client's long-run rate; the CUBIC curve alone did not within the run),
// and keep 90 % of the run's capacity through, and no logical request may
// fail: a throttle the limiter paces does not use up one of the three
// attempts (ExtraThrottleRetries).
func TestFleetSimulationCapacityChange(t *testing.T) {
	for _, r := range fleetRuns(t, false, capacityChange) {
		down, up := r.settle(capacityDrop, capacityReturn), r.settle(capacityReturn, r.sim.Duration)
		t.Logf("seed %d: within 10%% of 50 req/s after %v, of 200 req/s after %v (-1: not within the run), %d failed", r.sim.Seed, down, up, r.failed())
		if g, n := r.goodputShare(), r.failed(); down < 0 || down > time.Second || up < 0 || up > capacityFound || r.throttledShare() > 0.09 || g < 0.9 || n > 0 {
			t.Errorf("seed %d: within 10%% of 50 req/s after %v, of 200 req/s after %v, 429s %.2f%%, goodput %.1f%%, %d failed; want within 1s, within %v, <= 9%%, >= 90%%, 0",
				r.sim.Seed, down, up, 100*r.throttledShare(), 100*g, n, capacityFound)
		}
	}
}

// TestFleetSimulationAdditive runs the steady and the capacity-change fleets
// with Additive set to 10 req/s per second, a line over the default one:
// every client regains at least 10 req/s each second after a throttle. The
// fleet climbs back to 200 req/s within 2 s of the capacity's return while
// the steady fleet stays under 6 % of attempts throttled. The default line
// meets those bounds too, so each steady run is also compared with the
// default's on the same seed: the steeper line probes the capacity more
// often, and more of its attempts are throttled.
func TestFleetSimulationAdditive(t *testing.T) {
	additive := func(f *fleetSim) {
		f.NewLimiter = func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Additive: 10} }
	}
	plain := fleetRuns(t, false, nil)
	for i, r := range fleetRuns(t, false, additive) {
		if g, f := r.goodputShare(), r.throttledShare(); g < 0.95 || f > 0.06 || f <= plain[i].throttledShare() {
			t.Errorf("steady, seed %d: goodput %.1f%%, 429s %.2f%% (%.2f%% without Additive); want >= 95%%, <= 6%% and more than without",
				r.sim.Seed, 100*g, 100*f, 100*plain[i].throttledShare())
		}
	}
	for _, r := range fleetRuns(t, false, func(f *fleetSim) { additive(f); capacityChange(f) }) {
		up := r.settle(capacityReturn, r.sim.Duration)
		if g := r.goodputShare(); up < 0 || up > 2*time.Second || g < 0.93 {
			t.Errorf("capacity change, seed %d: within 10%% of 200 req/s after %v, goodput %.1f%%; want within 2s, >= 93%%", r.sim.Seed, up, 100*g)
		}
	}
}
