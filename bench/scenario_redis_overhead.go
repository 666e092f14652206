package main

import (
	"fmt"
	"io"
	"net/http"

	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/redisretry"
)

// redisMaxTripsPerRequest is the happy path's budget of round trips to
// Redis per request: the ratelimit interfaces ask for none, and a healthy
// replica asks Redis once per scope per Refresh of the limiter (100 ms)
// and of the quota (1 s).
const redisMaxTripsPerRequest = 0.01

// runRedisOverhead measures the happy path, sequential GETs that all
// succeed at once, as the overhead table does (paired with the bare
// transport in the same testing.Benchmark iterations, p50 over p50): the
// in-process defaults of adaptive mode, and the same with the quota and
// limiter shared in Redis, whose scope is never throttled.
func runRedisOverhead(w io.Writer, cfg config, f *redisFleet) error {
	cs := []fleetReplica{
		{contenders()[0].name, false, nil}, // the bare transport
		{"retrytransport adaptive, in process", false, func(*redisretry.Store) policy.Policy {
			return scaled(policy.Adaptive())
		}},
		redisSharedAdaptive(),
	}
	if _, err := f.beginRun(); err != nil {
		return err
	}
	defer f.endRun()
	runs := make([]*overheadRun, len(cs))
	for i, c := range cs {
		srv := newServer(okHandler)
		defer srv.Close()
		base := newBase()
		defer base.CloseIdleConnections()
		var rt http.RoundTripper = base
		k := kindBare
		if c.newReplica != nil {
			rt, k = f.replica(c, base), kindOurs
		}
		runs[i] = &overheadRun{c: contender{name: c.name, kind: k}, srv: srv, client: &http.Client{Transport: rt}}
	}
	bare := runs[0]
	for range cfg.benchRounds {
		for _, r := range runs[1:] {
			pairRound(bare, r, opGET, newGET)
		}
	}
	bare.ratios[opGET] = []float64{1}

	// Allocations and round trips to Redis from a run of each alone.
	tripsPerRequest := make([]float64, len(runs))
	if err := setBenchTime(fmt.Sprintf("%dx", memRuns)); err != nil {
		return err
	}
	for i, r := range runs {
		before, hits := f.trips.count(), r.srv.hits.Load()
		r.mem[opGET] = r.soloBench(newGET)
		if n := r.srv.hits.Load() - hits; n > 0 {
			tripsPerRequest[i] = float64(f.trips.count()-before) / float64(n)
		}
	}
	if err := setBenchTime(cfg.benchTime.String()); err != nil {
		return err
	}

	inProcess := medianOf(runs[1].ratios[opGET])
	t := &table{
		title: "fleet-redis, overhead: sequential GETs that all succeed at once, loopback server",
		notes: []string{fmt.Sprintf("Timing as in the overhead table: %d round(s) of a %v testing.Benchmark per contender whose every iteration "+
			"sends one GET through the bare transport and one through the contender, alternating which goes first; ns/op is the mean, "+
			"p50 the median request, \"× bare\" the contender's p50 over the bare transport's in the same run, \"× in process\" that ratio "+
			"over the in-process row's; each the median over the rounds. allocs/op and Redis trips/request (the replica's round trips "+
			"to Redis): a separate run of %d requests of each alone; the allocations count the whole process, the in-process server's "+
			"share included. While all is well, the shared quota asks Redis once per %v and the shared limiter once per %v, "+
			"per scope: so the fewer requests a replica sends, the more of them wait for a round trip.",
			cfg.benchRounds, cfg.benchTime, memRuns, redisretry.DefaultQuotaRefresh, redisretry.DefaultAdaptiveRefresh)},
		cols: []string{"contender", "ns/op", "p50", "× bare", "× in process", "allocs/op", "Redis trips/request"},
	}
	var goals []goal
	for i, r := range runs {
		if r.err != nil {
			t.add(r.c.name, "error: "+r.err.Error(), "", "", "", "", "")
			goals = append(goals, goal{false, fmt.Sprintf("%s: the benchmark failed: %v", r.c.name, r.err)})
			continue
		}
		x := medianOf(r.ratios[opGET])
		t.add(r.c.name, whole(medianOf(r.ns[opGET])), whole(medianOf(r.p50[opGET])),
			ratio(x), ratio(x/inProcess), count(r.mem[opGET].AllocsPerOp()), fmt.Sprintf("%.4f", tripsPerRequest[i]))
		if !cs[i].goals {
			continue
		}
		goals = append(goals,
			goal{x <= 1.05, fmt.Sprintf("%s time within 5 %% of bare (median request): %.3f× (limit 1.050×); the in-process defaults %.3f×",
				r.c.name, x, inProcess)},
			goal{tripsPerRequest[i] <= redisMaxTripsPerRequest, fmt.Sprintf("%s no Redis round trip per request on the happy path: "+
				"%.4f round trips per request (limit %.2f)", r.c.name, tripsPerRequest[i], redisMaxTripsPerRequest)})
	}
	t.write(w)
	writeGoals(w, goals)
	return nil
}
