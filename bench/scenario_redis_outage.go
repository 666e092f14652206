package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// oneQuota is the retries one retry quota with the defaults pays for after
// transient outcomes (503s): 500 tokens at 5 a retry.
const oneQuota = quota.DefaultCapacity / quota.DefaultRetryCost

// redisOutageReplicas are the outage table's contenders: standard mode
// with each replica's own quota, and with the quota shared in Redis.
func redisOutageReplicas() []fleetReplica {
	return []fleetReplica{
		{"retrytransport standard, quota per replica", false, func(*redisretry.Store) policy.Policy {
			return scaled(policy.Standard())
		}},
		{"retrytransport standard, shared Redis quota", true, func(s *redisretry.Store) policy.Policy {
			p := scaled(policy.Standard())
			p.Quota = s.Quota(nil)
			return p
		}},
	}
}

// redisOutageRun is one contender's result in one outage run.
type redisOutageRun struct {
	requests, attempts int64
	perReplica         []float64 // retries of each replica
	stats              replicaStats
	roundTrips         int64 // the replicas' round trips to Redis
	elapsed            time.Duration
}

func (r redisOutageRun) retries() float64 { return float64(r.attempts - r.requests) }

// runRedisOutage sends cfg.redisOutage logical GETs from the
// fleet, fleetWorkers workers per replica, to a server that answers every
// attempt 503, and counts the fleet's retries: every replica's own quota
// stops its own retries after oneQuota of them, a shared quota the
// fleet's.
func runRedisOutage(w io.Writer, cfg config, f *redisFleet) error {
	cs := redisOutageReplicas()
	runs, err := interleaveErr(cfg.fleetRuns, cs, func(_ int, c fleetReplica) (redisOutageRun, error) { return redisOutage(cfg, f, c) })
	if err != nil {
		return err
	}
	perReplica := cfg.redisOutage / fleetClients
	t := &table{
		title: fmt.Sprintf("fleet-redis, outage: every response is 503; %d replicas × %d workers, %d logical GETs each; %s",
			fleetClients, fleetWorkers, perReplica, plural(cfg.fleetRuns, "run")),
		notes: []string{fmt.Sprintf("Cells are min / median / max over the runs (one value where they are equal). "+
			"retries: attempts the server received minus logical requests, fleet-wide; one quota (500 tokens, 5 a retry after a 503) "+
			"pays for %d. per replica: the fewest and the most retries of one replica, over all runs. "+
			"refusals: retries the quotas refused, from the transports' Snapshot. fallbacks: quota decisions made from a replica's "+
			"own state because Redis did not answer within the Store's Timeout. Redis trips: the replicas' round trips to Redis "+
			"(commands or pipelines sent; a script's EVALSHA and, after NOSCRIPT, its EVAL are two).", oneQuota), waitsNote},
		cols: []string{"contender", "retries", "quotas' worth", "per replica", "hits/request", "refusals", "fallbacks", "Redis trips", "time"},
	}
	var goals []goal
	var info []string // of the contenders without goals, after the goals
	for i, c := range cs {
		rs := runs[i]
		var replicas []float64
		for _, r := range rs {
			replicas = append(replicas, r.perReplica...)
		}
		retries := column(rs, redisOutageRun.retries)
		t.add(c.name,
			spread(retries, whole),
			spread(column(rs, func(r redisOutageRun) float64 { return r.retries() / oneQuota }), twoPlaces),
			fmt.Sprintf("%.0f–%.0f", slices.Min(replicas), slices.Max(replicas)),
			spread(column(rs, func(r redisOutageRun) float64 { return float64(r.attempts) / float64(r.requests) }), ratio),
			spread(column(rs, func(r redisOutageRun) float64 { return float64(r.stats.quotaRefusals) }), whole),
			spread(column(rs, func(r redisOutageRun) float64 { return float64(r.stats.fallbacks) }), whole),
			spread(column(rs, func(r redisOutageRun) float64 { return float64(r.roundTrips) }), whole),
			spread(column(rs, func(r redisOutageRun) float64 { return r.elapsed.Seconds() }), func(x float64) string { return fmt.Sprintf("%.2f s", x) }))
		if !c.goals {
			med := medianOf(retries)
			info = append(info, fmt.Sprintf("- for information, %s: the fleet retried %.0f times (median), %.2f quotas' worth; %d replicas' own quotas pay for %d",
				c.name, med, med/oneQuota, fleetClients, fleetClients*oneQuota))
			continue
		}
		limit := oneQuota * 1.05
		goals = append(goals, goal{slices.Max(retries) <= limit,
			fmt.Sprintf("%s: the fleet's retries at most one quota's worth + 5 %% (%.0f) in every run: worst %.0f%s",
				c.name, limit, slices.Max(retries), everyRun(retries, whole))})
	}
	t.write(w)
	writeGoals(w, goals)
	for _, line := range info {
		fmt.Fprintln(w, line)
	}
	return nil
}

// redisOutage runs one contender's fleet once through an outage.
func redisOutage(cfg config, f *redisFleet, c fleetReplica) (redisOutageRun, error) {
	var hits [fleetClients]atomic.Int64
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		if i := fleetClientOf(r); i >= 0 {
			hits[i].Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	defer srv.Close()
	before, err := f.beginRun()
	if err != nil {
		return redisOutageRun{}, err
	}
	perReplica := cfg.redisOutage / fleetClients
	clients, closeIdle := newFleetClients(f.contender(c).wrap)
	defer closeIdle()

	start := time.Now()
	sendFleet(clients, srv.URL, func(do func(context.Context, int) outcome) []outcome {
		return runCount(fleetWorkers, perReplica, do)
	})
	r := redisOutageRun{elapsed: time.Since(start), requests: int64(fleetClients * perReplica)}
	r.roundTrips = f.trips.count() - before
	r.stats = f.endRun()
	for i := range hits {
		h := hits[i].Load()
		r.attempts += h
		r.perReplica = append(r.perReplica, float64(h-int64(perReplica)))
	}
	return r, nil
}
