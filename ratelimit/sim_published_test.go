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
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file simulates clients against a server that publishes its quota:
// a fixed window of Limit requests per Window, every response carrying
// what is left of it and the seconds to the window's end (the IETF
// RateLimit field's r and t, t rounded up to whole seconds as servers
// send it), and 429 beyond. Each client is a replica with its own
// Adaptive, as separate processes have, and runs the transport's loop for
// every logical request: reserve a send token (asking the reservation
// again after each wait), send, record the outcome and the quota the
// answer publishes, in one call; after a 429, wait the reset the 429
// carries, as the transport waits a server's delay, and send again, up to
// fleetMaxAttempts. Round trips vary between RTT/2 and 3·RTT/2, from a
// seeded generator, so every run is the same.

// quotaSim is one run's setup.
type quotaSim struct {
	Clients, Workers int
	RTT              time.Duration
	Limit            int           // requests per window
	Window           time.Duration // fixed windows from the start of the run
	Duration         time.Duration
	Seed             uint64
	Ignore           bool // the clients do not record the quota: their limiter learns from 429s alone
	Floor            bool // the server rounds t down instead of up
}

// quotaClient is one client's limiter and figures.
type quotaClient struct {
	lim                       *ratelimit.Adaptive
	sent, admitted, throttled int // attempts
	failed                    int // logical requests
	latencies                 []time.Duration
	admittedWin, throttledWin []int // attempts per window, by send time
}

// quotaResult is what a run measured.
type quotaResult struct {
	sim     *quotaSim
	clients []*quotaClient
}

// quotaServer is the fixed-window server.
type quotaServer struct {
	limit  int
	window time.Duration
	floor  bool
	win    time.Duration // start of the current window
	count  int           // requests admitted in it
}

// admit answers a request that arrives at at: whether it is admitted, and
// the quota its answer publishes.
func (s *quotaServer) admit(at time.Duration) (ok bool, remaining int64, reset time.Duration) {
	if w := at / s.window * s.window; w != s.win {
		s.win, s.count = w, 0
	}
	if ok = s.count < s.limit; ok {
		s.count++
	}
	left := s.win + s.window - at
	secs := math.Ceil(left.Seconds())
	if s.floor {
		secs = math.Floor(left.Seconds())
	}
	return ok, int64(s.limit - s.count), time.Duration(secs) * time.Second
}

// run simulates the clients.
func (f *quotaSim) run() *quotaResult {
	// What the answer in flight publishes, per worker.
	type published struct {
		remaining int64
		reset     time.Duration
	}
	rnd := rand.New(rand.NewPCG(f.Seed, 3))
	wins := int((f.Duration + f.Window - 1) / f.Window)
	res := &quotaResult{sim: f}
	for range f.Clients {
		res.clients = append(res.clients, &quotaClient{lim: &ratelimit.Adaptive{},
			admittedWin: make([]int, wins), throttledWin: make([]int, wins)})
	}
	srv := &quotaServer{limit: f.Limit, window: f.Window, floor: f.Floor}
	answers := make([]published, f.Clients*f.Workers)
	starts := make([]time.Duration, len(answers))
	for w := range starts {
		starts[w] = time.Duration(rnd.Int64N(int64(time.Millisecond)))
	}
	client := func(w int) *quotaClient { return res.clients[w/f.Workers] }
	l := &simLoop{
		Until:   f.Duration,
		Late:    func() time.Duration { return time.Duration(rnd.Int64N(int64(simLate))) },
		Limiter: func(w int) (simLimiter, simWaiting, string) { return client(w).lim, waitQueue, fleetScope },
		Send: func(w int, at time.Duration, _ *simRequest) (time.Duration, bool) {
			c := client(w)
			c.sent++
			// The server counts the request halfway through its round trip.
			rtt := f.RTT/2 + time.Duration(rnd.Int64N(int64(f.RTT)))
			arrive := at + rtt/2
			admitted, remaining, reset := srv.admit(arrive)
			if win := int(arrive / f.Window); win < wins {
				if admitted {
					c.admitted++
					c.admittedWin[win]++
				} else {
					c.throttled++
					c.throttledWin[win]++
				}
			}
			answers[w] = published{remaining, reset}
			return rtt, !admitted
		},
		Record: func(w int, now time.Time, scope string, k classify.Kind) {
			c, a := client(w), answers[w]
			if f.Ignore {
				c.lim.RecordAt(now, scope, k)
				return
			}
			c.lim.RecordQuotaAt(now, scope, k, a.remaining, a.reset)
		},
		Answer: func(w int, at time.Duration, throttled bool, r *simRequest) (wait time.Duration, done bool) {
			c, a := client(w), answers[w]
			switch {
			case !throttled:
				done = true
			case r.attempt >= fleetMaxAttempts:
				c.failed++
				done = true
			default:
				wait = a.reset // the 429's delay: its reset, as retryafter.ParseSources reads it
			}
			if done {
				c.latencies = append(c.latencies, at-r.start)
			}
			return wait, done
		},
	}
	l.run(starts)
	return res
}

// windows returns the whole windows of the run after the first.
func (r *quotaResult) windows() []int {
	var ws []int
	for w := 1; time.Duration(w+1)*r.sim.Window <= r.sim.Duration; w++ {
		ws = append(ws, w)
	}
	return ws
}

// throttledAfterFirst returns the 429s of the windows after the first.
func (r *quotaResult) throttledAfterFirst() int {
	n := 0
	for _, c := range r.clients {
		for _, w := range r.windows() {
			n += c.throttledWin[w]
		}
	}
	return n
}

// throttledFirst returns the 429s of the first window.
func (r *quotaResult) throttledFirst() int {
	n := 0
	for _, c := range r.clients {
		n += c.throttledWin[0]
	}
	return n
}

// leastUsed returns the smallest share of the quota admitted in a window
// after the first.
func (r *quotaResult) leastUsed() float64 {
	least := math.Inf(1)
	for _, w := range r.windows() {
		n := 0
		for _, c := range r.clients {
			n += c.admittedWin[w]
		}
		least = min(least, float64(n)/float64(r.sim.Limit))
	}
	return least
}

// jain returns Jain's fairness index of the clients' admitted attempts in
// the windows after the first.
func (r *quotaResult) jain() float64 {
	var sum, sq float64
	for _, c := range r.clients {
		x := 0.0
		for _, w := range r.windows() {
			x += float64(c.admittedWin[w])
		}
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(r.clients)) * sq)
}

// failed returns the logical requests that failed.
func (r *quotaResult) failed() int {
	return sumOver(r.clients, func(c *quotaClient) int { return c.failed })
}

// p99 returns the 99th percentile of the logical requests' latencies.
func (r *quotaResult) p99() time.Duration {
	return p99Over(r.clients, func(c *quotaClient) []time.Duration { return c.latencies })
}

func (r *quotaResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "429s %d in the first window, %d after; least quota used in a window after the first %.1f%%; Jain %.3f; failed %d; p99 %v\n",
		r.throttledFirst(), r.throttledAfterFirst(), 100*r.leastUsed(), r.jain(), r.failed(), r.p99())
	for i, c := range r.clients {
		fmt.Fprintf(&b, "client %d: admitted per window %v, 429s per window %v\n", i, c.admittedWin, c.throttledWin)
	}
	return b.String()
}

// quotaScenario is issue 27's fleet: 600 requests per 10 s fixed window
// shared by 8 replicas of 2 workers, 2 ms round trips, 30 s.
func quotaScenario(seed uint64) *quotaSim {
	return &quotaSim{Clients: 8, Workers: 2, RTT: 2 * ms, Limit: 600, Window: 10 * time.Second,
		Duration: 30 * time.Second, Seed: seed}
}

// quotaSeeds is how many seeded runs each test makes; every bound must
// hold on every one.
const quotaSeeds = 20

// quotaRuns runs the scenario that setup makes of quotaScenario once per
// seed and logs min / median / max of its figures.
func quotaRuns(t *testing.T, setup func(*quotaSim)) []*quotaResult {
	t.Helper()
	var rs []*quotaResult
	for seed := range uint64(quotaSeeds) {
		f := quotaScenario(seed)
		if setup != nil {
			setup(f)
		}
		r := f.run()
		if seed == 0 {
			t.Logf("seed 0: %v", r)
		}
		rs = append(rs, r)
	}
	figure := func(name string, x func(*quotaResult) float64, format string) {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = x(r)
		}
		slices.Sort(xs)
		t.Logf("%-40s "+format+" / "+format+" / "+format, name, xs[0], xs[len(xs)/2], xs[len(xs)-1])
	}
	figure("429s in the first window", func(r *quotaResult) float64 { return float64(r.throttledFirst()) }, "%.0f")
	figure("429s after the first window", func(r *quotaResult) float64 { return float64(r.throttledAfterFirst()) }, "%.0f")
	figure("least quota used in a later window (%)", func(r *quotaResult) float64 { return 100 * r.leastUsed() }, "%.1f")
	figure("Jain's index after the first window", func(r *quotaResult) float64 { return r.jain() }, "%.3f")
	figure("failed logical requests", func(r *quotaResult) float64 { return float64(r.failed()) }, "%.0f")
	figure("p99 (ms)", func(r *quotaResult) float64 { return float64(r.p99()) / float64(ms) }, "%.0f")
	return rs
}

// TestPublishedQuotaSimulationFleet runs issue 27's fleet: 8 independent
// replicas of 2 workers share a fixed window of 600 requests per 10 s for
// 30 s. Reading the quota every answer publishes, they must get no 429
// after the first window, use at least 95 % of every later window's quota
// and share it with a Jain's index of at least 0.97, on every seed: with
// 2 ms round trips, and with 300 µs ones as on loopback (where a share
// that was left where it started kept one replica at twice the others').
// With 8 workers per replica, at least 0.96.
func TestPublishedQuotaSimulationFleet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*quotaSim)
		minJain float64
	}{
		{"2ms", nil, 0.97},
		{"300us", func(f *quotaSim) { f.RTT = 300 * time.Microsecond }, 0.97},
		{"8_workers", func(f *quotaSim) { f.Workers = 8 }, 0.96},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range quotaRuns(t, tc.setup) {
				if n, u, j, f := r.throttledAfterFirst(), r.leastUsed(), r.jain(), r.failed(); n > 0 || u < 0.95 || j < tc.minJain || f > 0 {
					t.Errorf("seed %d: %d 429s after the first window, least quota used %.1f%%, Jain %.3f, %d failed; want 0, >= 95%%, >= %.2f, 0",
						r.sim.Seed, n, 100*u, j, f, tc.minJain)
				}
			}
		})
	}
}

// TestPublishedQuotaSimulationIgnored runs the same fleet with limiters
// that are not told the quota, which learn from 429s alone: every window
// ends in 429s, which the fields let a client avoid.
func TestPublishedQuotaSimulationIgnored(t *testing.T) {
	for _, r := range quotaRuns(t, func(f *quotaSim) { f.Ignore = true }) {
		if r.throttledAfterFirst() == 0 {
			t.Errorf("seed %d: no 429 after the first window without the quota; the scenario no longer shows what reading it avoids", r.sim.Seed)
		}
	}
}

// TestPublishedQuotaSimulationSingleClient runs one client of 16 workers
// against the same server: it spends each window evenly, gets no 429 after
// the first, and uses at least 90 % of each later window's quota (its
// pace runs to the reset it computes from whole seconds rounded up, up to
// a second past the true one).
func TestPublishedQuotaSimulationSingleClient(t *testing.T) {
	for _, r := range quotaRuns(t, func(f *quotaSim) { f.Clients, f.Workers = 1, 16 }) {
		if n, u, f := r.throttledAfterFirst(), r.leastUsed(), r.failed(); n > 0 || u < 0.90 || f > 0 {
			t.Errorf("seed %d: %d 429s after the first window, least quota used %.1f%%, %d failed; want 0, >= 90%%, 0", r.sim.Seed, n, 100*u, f)
		}
	}
}

// TestPublishedQuotaSimulationRoundedDown runs the fleet against a server
// that rounds t down to whole seconds. The clients then believe each
// window over up to a second before it is, stop pacing, and get the last
// second's 429s, which wait the reset the 429 says, 0 s, and fail on their
// third attempt. The fields give nothing to tell that rounding from the
// usual one (up), which a client must assume; this is what it costs.
func TestPublishedQuotaSimulationRoundedDown(t *testing.T) {
	for _, r := range quotaRuns(t, func(f *quotaSim) { f.Floor = true }) {
		if r.throttledAfterFirst() == 0 {
			t.Errorf("seed %d: no 429 from a server that rounds its reset down; update the documentation of RecordQuotaAt", r.sim.Seed)
		}
	}
}
