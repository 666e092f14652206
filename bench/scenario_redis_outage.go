package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// oneQuota is the retries one retry quota with the defaults pays for after
// transient outcomes (503s): 500 tokens at 5 a retry.
const oneQuota = ratelimit.DefaultQuotaCapacity / ratelimit.DefaultRetryCost

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
	runs := make([][]redisOutageRun, len(cs))
	for range cfg.fleetRuns {
		for i, c := range cs {
			r, err := redisOutage(cfg, f, c)
			if err != nil {
				return err
			}
			runs[i] = append(runs[i], r)
		}
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
	for i, c := range cs {
		rs := runs[i]
		col := func(g func(redisOutageRun) float64) []float64 {
			xs := make([]float64, len(rs))
			for k, r := range rs {
				xs[k] = g(r)
			}
			return xs
		}
		var replicas []float64
		for _, r := range rs {
			replicas = append(replicas, r.perReplica...)
		}
		retries := col(redisOutageRun.retries)
		t.add(c.name,
			spread(retries, whole),
			spread(col(func(r redisOutageRun) float64 { return r.retries() / oneQuota }), func(x float64) string { return fmt.Sprintf("%.2f", x) }),
			fmt.Sprintf("%.0f–%.0f", slices.Min(replicas), slices.Max(replicas)),
			spread(col(func(r redisOutageRun) float64 { return float64(r.attempts) / float64(r.requests) }), ratio),
			spread(col(func(r redisOutageRun) float64 { return float64(r.stats.quotaRefusals) }), whole),
			spread(col(func(r redisOutageRun) float64 { return float64(r.stats.fallbacks) }), whole),
			spread(col(func(r redisOutageRun) float64 { return float64(r.roundTrips) }), whole),
			spread(col(func(r redisOutageRun) float64 { return r.elapsed.Seconds() }), func(x float64) string { return fmt.Sprintf("%.2f s", x) }))
		if c.goals {
			limit := oneQuota * 1.05
			goals = append(goals, goal{slices.Max(retries) <= limit,
				fmt.Sprintf("%s: the fleet's retries at most one quota's worth + 5 %% (%.0f) in every run: worst %.0f%s",
					c.name, limit, slices.Max(retries), everyRun(retries, whole))})
		}
	}
	t.write(w)
	writeGoals(w, goals)
	for i, c := range cs {
		if !c.goals {
			var retries []float64
			for _, r := range runs[i] {
				retries = append(retries, r.retries())
			}
			med := medianOf(retries)
			fmt.Fprintf(w, "- for information, %s: the fleet retried %.0f times (median), %.2f quotas' worth; %d replicas' own quotas pay for %d\n",
				c.name, med, med/oneQuota, fleetClients, fleetClients*oneQuota)
		}
	}
	return nil
}

// redisOutage runs one contender's fleet once through an outage.
func redisOutage(cfg config, f *redisFleet, c fleetReplica) (redisOutageRun, error) {
	var hits [fleetClients]atomic.Int64
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		if i, err := strconv.Atoi(r.Header.Get(fleetClientHeader)); err == nil && i >= 0 && i < fleetClients {
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
	clients := make([]*http.Client, fleetClients)
	for i := range clients {
		base := newBase()
		defer base.CloseIdleConnections()
		clients[i] = &http.Client{Transport: f.replica(c, base)}
	}

	start := time.Now()
	var wg sync.WaitGroup
	for i, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := strconv.Itoa(i)
			runCount(fleetWorkers, perReplica, func(ctx context.Context, _ int) outcome {
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				req.Header.Set(fleetClientHeader, id)
				return send(ctx, client, req)
			})
		}()
	}
	wg.Wait()
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

// whole formats a count.
func whole(x float64) string { return fmt.Sprintf("%.0f", x) }
