package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// redisThrottledReplicas are the throttled table's contenders: adaptive
// mode with each replica's own limiter and quota, with both shared in
// Redis (the goals are its), and standard mode paced at the server's
// published rate and burst by a fixed rate shared in Redis, with the quota
// shared too, with the default fallback and the recommended one.
func redisThrottledReplicas() []fleetReplica {
	return []fleetReplica{
		{"retrytransport adaptive, limiter and quota per replica", false, func(*redisretry.Store) policy.Policy {
			return scaled(policy.Adaptive())
		}},
		redisSharedAdaptive(),
		// The fixed rate falls back, when Redis does not answer in time, to
		// Local: by default the whole rate for each replica; redisretry.Fixed
		// recommends the replica's share of it.
		{fmt.Sprintf("retrytransport standard, shared Redis fixed rate %d/s (burst %d) and quota", fleetRate, fleetBurst), false,
			func(s *redisretry.Store) policy.Policy {
				p := scaled(policy.Standard())
				p.Quota = s.Quota(nil)
				p.RateLimit = s.Fixed(redis_rate.Limit{Rate: fleetRate, Period: time.Second, Burst: fleetBurst}, nil)
				return p
			}},
		{fmt.Sprintf("the same, Local %d/s (burst %d) per replica", fleetRate/fleetClients, fleetBurst/fleetClients), false,
			func(s *redisretry.Store) policy.Policy {
				p := scaled(policy.Standard())
				p.Quota = s.Quota(nil)
				p.RateLimit = s.Fixed(redis_rate.Limit{Rate: fleetRate, Period: time.Second, Burst: fleetBurst},
					&ratelimit.Fixed{Rate: fleetRate / fleetClients, Burst: fleetBurst / fleetClients})
				return p
			}},
	}
}

// redisSharedAdaptive is adaptive mode with its limiter and quota shared
// in Redis, the contender whose goals the throttled and overhead tables
// check.
func redisSharedAdaptive() fleetReplica {
	return fleetReplica{"retrytransport adaptive, shared Redis limiter and quota", true, func(s *redisretry.Store) policy.Policy {
		p := scaled(policy.Adaptive())
		p.Quota = s.Quota(nil)
		p.Limiter = s.Adaptive(nil)
		return p
	}}
}

// redisThrottledRun is one contender's result in one throttled run.
type redisThrottledRun struct {
	fleetRun
	stats           replicaStats
	tripsPerAttempt float64 // the replicas' round trips to Redis, over the attempts the server counted
	late429         float64 // 429s over attempts from redisColdStart on
}

// Goals of the shared adaptive limiter in the throttled fleet.
const (
	redisMinGoodput = 0.98 // of the capacity
	redisMax429     = 0.01 // of the attempts
	redisMinJain    = 0.99

	// redisColdStart is the start of a run that the 429 share "after" leaves
	// out: the fleet sends unpaced until its first throttles.
	redisColdStart = time.Second
)

// runRedisThrottled runs the fleet's steady variant (fleetRate req/s,
// burst fleetBurst, no Retry-After) cfg.fleetRuns times per contender,
// interleaved, each replica a separate transport with its own Redis
// client.
func runRedisThrottled(w io.Writer, cfg config, f *redisFleet) error {
	v := fleetVariants()[0]
	cs := redisThrottledReplicas()
	runs, err := interleaveErr(cfg.fleetRuns, cs, func(_ int, c fleetReplica) (redisThrottledRun, error) {
		return redisThrottledOnce(cfg, v, f, c)
	})
	if err != nil {
		return err
	}

	phases := v.schedule(cfg.fleetFor)
	t := &table{
		title: fmt.Sprintf("fleet-redis, throttled: %d replicas × %d closed-loop workers against one server (token bucket, %d req/s, burst %d), 429 beyond; %v, %s",
			fleetClients, fleetWorkers, fleetRate, fleetBurst, cfg.fleetFor, plural(cfg.fleetRuns, "run")),
		notes: []string{fmt.Sprintf("%s The fleet table's server and measures: goodput share is successful logical requests over the "+
			"requests the server's rate admits in the run (%.0f; its burst left out); 429 share is of all attempts the server received, "+
			"\"after %v\" of those it received from then on, past the fleet's cold start (no limiter paces a scope before its first throttle); "+
			"Jain's index is over the %d replicas' successful logical requests. fallbacks: decisions of the quotas and limiters made from "+
			"a replica's own state because Redis did not answer within the Store's Timeout. Redis trips/attempt: the replicas' round trips "+
			"to Redis during the run (its cancelled tail included) over the attempts the server received within it.",
			cellsNote(cfg.fleetRuns), capacityIntegral(phases, cfg.fleetFor), redisColdStart, fleetClients), waitsNote},
		cols: []string{"contender", "goodput share", "429 share", fmt.Sprintf("after %v", redisColdStart), "failed", "p50", "p99", "Jain's index",
			"slowest replica/s", "fastest replica/s", "fallbacks", "Redis trips/attempt"},
	}
	var goals []goal
	for i, c := range cs {
		rs := runs[i]
		shares := column(rs, func(r redisThrottledRun) float64 { return r.goodputShare })
		s429 := column(rs, func(r redisThrottledRun) float64 { return r.share429 })
		jains := column(rs, func(r redisThrottledRun) float64 { return r.jain })
		late := column(rs, func(r redisThrottledRun) float64 { return r.late429 })
		t.add(c.name, spread(shares, percent), spread(s429, percent), spread(late, percent),
			failedCell(column(rs, func(r redisThrottledRun) float64 { return float64(r.failed) })),
			spread(column(rs, func(r redisThrottledRun) float64 { return r.p50.Seconds() }), msFromSeconds),
			spread(column(rs, func(r redisThrottledRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			spread(jains, ratio),
			spread(column(rs, func(r redisThrottledRun) float64 { return r.slowest }), perSecond),
			spread(column(rs, func(r redisThrottledRun) float64 { return r.fastest }), perSecond),
			spread(column(rs, func(r redisThrottledRun) float64 { return float64(r.stats.fallbacks) }), whole),
			spread(column(rs, func(r redisThrottledRun) float64 { return r.tripsPerAttempt }), twoPlaces))
		if !c.goals {
			continue
		}
		goals = append(goals,
			goal{slices.Min(shares) >= redisMinGoodput, fmt.Sprintf("%s goodput share at least %s in every run: worst %s%s",
				c.name, percent(redisMinGoodput), percent(slices.Min(shares)), everyRun(shares, percent))},
			goal{slices.Max(s429) <= redisMax429, fmt.Sprintf("%s 429 share at most %s in every run: worst %s%s",
				c.name, percent(redisMax429), percent(slices.Max(s429)), everyRun(s429, percent)+
					fmt.Sprintf("; after the first %v, worst %s", redisColdStart, percent(slices.Max(late))))},
			// Not "Jain's index at least", which names the fleet tables' goal.
			goal{slices.Min(jains) >= redisMinJain, fmt.Sprintf("%s fairness across replicas (Jain's index) %.2f or more in every run: worst %s%s",
				c.name, redisMinJain, ratio(slices.Min(jains)), everyRun(jains, ratio))})
	}
	t.write(w)
	writeGoals(w, goals)
	return nil
}

// redisThrottledOnce runs c's fleet once in variant v, Redis emptied
// first, and measures the run's late 429 share and round trips to Redis.
func redisThrottledOnce(cfg config, v fleetVariant, f *redisFleet, c fleetReplica) (redisThrottledRun, error) {
	before, err := f.beginRun()
	if err != nil {
		return redisThrottledRun{}, err
	}
	r := redisThrottledRun{fleetRun: fleet(cfg, v, f.contender(c))}
	trips := f.trips.count() - before
	r.stats = f.endRun()
	var lateAttempts, late429 int64
	for k := range fleetClients {
		for b, n := range r.trace.attempts[k] {
			if time.Duration(b)*fleetBin >= redisColdStart {
				lateAttempts += n
				late429 += r.trace.throttles[k][b]
			}
		}
	}
	if lateAttempts > 0 {
		r.late429 = float64(late429) / float64(lateAttempts)
	}
	if r.attempts > 0 {
		r.tripsPerAttempt = float64(trips) / float64(r.attempts)
	}
	return r, nil
}
