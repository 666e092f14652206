package redisretry_test

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// fleetSim is a discrete-event simulation of the bench's fleet scenario
// against a real Redis: replicas of closed-loop workers, each replica with
// its own Store and Adaptive on one Redis, share a server that admits
// rate requests per second with a burst and answers 429 beyond. Time is
// the simulation's: the Stores' clock, passed to the scripts, so a
// simulated 10 s take a fraction of a second.
type fleetSim struct {
	replicas, workers int
	rate, burst       float64       // the server's token bucket
	rtt               time.Duration // request round trip, jittered ±50 %
	redisRTT          time.Duration // a round trip to Redis, charged to Reserve and Record(Throttle)
	attempts          int           // per logical request, as the transport's MaxAttempts
	duration          time.Duration
	seed              uint64
	local             func() *ratelimit.Adaptive // nil: the Adaptive's default
	changes           []rateChange               // of the server's rate, in order
}

// rateChange sets the server's rate from an instant of the run on.
type rateChange struct {
	at   time.Duration
	rate float64
}

// fleetResult is what a simulation measured.
type fleetResult struct {
	goodput   float64 // successful requests over rate·duration
	share429  float64 // 429s over attempts
	steady429 float64 // 429s over attempts after the first second
	failed    int     // logical requests that got 429 on every attempt
	jain      float64 // over the replicas' successful requests
	p99       time.Duration
	perSecond []float64 // admitted per second of the run, whole fleet
}

// simEvent is a worker's next step at an instant.
type simEvent struct {
	at     time.Duration
	worker int
	seq    uint64 // ties broken in order of scheduling
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simWorker is one closed-loop worker's logical request in progress.
type simWorker struct {
	replica  int
	attempt  int           // of the current request, from 1
	start    time.Duration // of the current request
	state    int           // what its next event does
	reserved ratelimit.Reservation
}

const (
	simReserve = iota // reserve a slot for the next attempt
	simSend           // the slot is due: send
	simAnswer         // the response arrives
)

func (cfg fleetSim) run(t testing.TB, c *redis.Client) fleetResult {
	t.Helper()
	clock := faketime.New()
	origin := clock.Now()
	now := time.Duration(0)
	clockAt := func() time.Time { return origin.Add(now) }
	prefix := uniquePrefix(t)
	limiters := make([]*redisretry.Adaptive, cfg.replicas)
	for i := range limiters {
		s := &redisretry.Store{Client: c, Prefix: prefix, Timeout: 5 * time.Second, Now: clockAt}
		var local *ratelimit.Adaptive
		if cfg.local != nil {
			local = cfg.local()
			local.Now = clockAt
		}
		limiters[i] = s.Adaptive(local)
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0xf1ee7))
	tokens, last := cfg.burst, time.Duration(0) // the server's bucket
	rate, changes := cfg.rate, cfg.changes
	var capacity float64 // the rate's integral over the run
	admit := func() bool {
		for len(changes) > 0 && changes[0].at <= now {
			tokens = math.Min(tokens+(changes[0].at-last).Seconds()*rate, cfg.burst)
			capacity += (changes[0].at - last).Seconds() * rate
			last, rate, changes = changes[0].at, changes[0].rate, changes[1:]
		}
		tokens = math.Min(tokens+(now-last).Seconds()*rate, cfg.burst)
		capacity += (now - last).Seconds() * rate
		last = now
		if tokens >= 1 {
			tokens--
			return true
		}
		return false
	}
	jitter := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * (0.5 + rng.Float64()))
	}

	workers := make([]simWorker, cfg.replicas*cfg.workers)
	var q simQueue
	var seq uint64
	schedule := func(w int, at time.Duration) {
		seq++
		heap.Push(&q, simEvent{at: at, worker: w, seq: seq})
	}
	for i := range workers {
		workers[i] = simWorker{replica: i / cfg.workers, attempt: 1}
		schedule(i, 0)
	}
	var attempts, throttled, failed int
	var steadyAttempts, steadyThrottled int
	succeeded := make([]float64, cfg.replicas)
	var latencies []time.Duration
	perSecond := make([]float64, int(cfg.duration/time.Second)+1)
	outcome := make([]bool, len(workers)) // per worker: the last answer was a 429
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		if e.at >= cfg.duration {
			break
		}
		now = e.at
		w := &workers[e.worker]
		lim := limiters[w.replica]
		switch w.state {
		case simReserve:
			r, wait, ok := lim.Reserve("api.example.com")
			if !ok {
				t.Fatalf("Reserve refused without FailFast or MaxWait")
			}
			w.reserved, w.state = r, simSend
			schedule(e.worker, now+cfg.redisRTT+wait)
		case simSend:
			if d := w.reserved.Delay(); d > 0 {
				schedule(e.worker, now+d)
				continue
			}
			attempts++
			outcome[e.worker] = !admit()
			if now >= time.Second {
				steadyAttempts++
				if outcome[e.worker] {
					steadyThrottled++
				}
			}
			if !outcome[e.worker] {
				perSecond[int(now/time.Second)]++
			}
			w.state = simAnswer
			schedule(e.worker, now+jitter(cfg.rtt))
		case simAnswer:
			if outcome[e.worker] {
				throttled++
				lim.Record("api.example.com", classify.Throttle)
				now += cfg.redisRTT
				if w.attempt < cfg.attempts {
					// The transport's backoff: full jitter from 1 ms,
					// as the bench scales it.
					w.attempt++
					w.state = simReserve
					schedule(e.worker, now+time.Duration(rng.Float64()*float64(time.Millisecond<<(w.attempt-2))))
					continue
				}
				failed++
			} else {
				lim.Record("api.example.com", classify.Success)
				succeeded[w.replica]++
			}
			latencies = append(latencies, now-w.start)
			w.attempt, w.start, w.state = 1, now, simReserve
			schedule(e.worker, now)
		}
	}
	now = cfg.duration
	admit() // the capacity up to the end
	var sum, sumSq float64
	for _, s := range succeeded {
		sum += s
		sumSq += s * s
	}
	res := fleetResult{
		goodput:   sum / capacity,
		share429:  float64(throttled) / float64(max(attempts, 1)),
		steady429: float64(steadyThrottled) / float64(max(steadyAttempts, 1)),
		failed:    failed,
		jain:      sum * sum / (float64(len(succeeded)) * sumSq),
		perSecond: perSecond[:len(perSecond)-1],
	}
	slices.Sort(latencies)
	if len(latencies) > 0 {
		res.p99 = latencies[len(latencies)*99/100]
	}
	return res
}

// TestAdaptiveFleetSimulation runs the bench's fleet, 8 replicas of 2
// closed-loop workers against 200 req/s with a burst of 20, on the shared
// limiter with its defaults, and checks the fleet's goals: nearly all of
// the capacity used, few 429s, equal shares.
func TestAdaptiveFleetSimulation(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t, nil)
	cfg := fleetSim{replicas: 8, workers: 2, rate: 200, burst: 20, rtt: time.Millisecond,
		redisRTT: 200 * time.Microsecond, attempts: 3, duration: 10 * time.Second}
	for seed := range uint64(3) {
		cfg.seed = seed
		r := cfg.run(t, c)
		t.Logf("seed %d: goodput %.1f %%, 429s %.2f %%, failed %d, Jain %.4f, p99 %v, per second %v",
			seed, 100*r.goodput, 100*r.share429, r.failed, r.jain, r.p99, r.perSecond)
		if r.goodput < 0.95 || r.share429 > 0.02 || r.failed > 0 || r.jain < 0.99 {
			t.Errorf("seed %d: goodput %.1f %% (want >= 95), 429s %.2f %% (want <= 2), failed %d (want 0), Jain %.4f (want >= 0.99)",
				seed, 100*r.goodput, 100*r.share429, r.failed, r.jain)
		}
	}
}
