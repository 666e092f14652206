package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// The hedge scenario's server answers each request after hedgeFast, or,
// with probability hedgeSlowShare, after hedgeSlow: a tail that hedging
// should cut. hedgeDelay is the fixed delay of the hedging rows, a little
// above the fast answers and far below the slow ones; hedgeMinDelay is the
// floor of the row whose delay is the observed 95th percentile.
const (
	hedgeWorkers   = 8
	hedgeFast      = time.Millisecond
	hedgeSlow      = 300 * time.Millisecond
	hedgeSlowShare = 0.05
	hedgeDelay     = 15 * time.Millisecond
	hedgeMinDelay  = 10 * time.Millisecond
)

// A hedgeContender is one way of sending the hedge scenario's requests.
type hedgeContender struct {
	name  string
	goals bool // one of our hedging rows: the goals are checked on it
	// wrap returns the contender's RoundTripper around base, with state of
	// its own, and a func that returns how many hedges it has sent so far;
	// nil for the rows that do not hedge.
	wrap func(base http.RoundTripper) (http.RoundTripper, func() int64)
}

// hedgeContenders returns the rows of the hedge table: the bare transport
// and our standard mode (no hedging), our standard mode with a fixed and
// with a quantile hedge delay, and failsafe-go's hedge policy with the same
// fixed delay.
func hedgeContenders() []hedgeContender {
	plain := func(c contender) hedgeContender {
		return hedgeContender{c.name, false, func(base http.RoundTripper) (http.RoundTripper, func() int64) {
			return c.wrap(base), nil
		}}
	}
	cs := contenders()
	return []hedgeContender{
		plain(cs[0]), // the bare transport
		plain(cs[1]), // retrytransport standard
		oursHedged(fmt.Sprintf("retrytransport hedge %v", hedgeDelay), &policy.Hedge{Delay: hedgeDelay}),
		oursHedged(fmt.Sprintf("retrytransport hedge p95, min %v", hedgeMinDelay),
			&policy.Hedge{Delay: hedgeDelay, Quantile: 0.95, MinDelay: hedgeMinDelay}),
		{fmt.Sprintf("failsafe-go hedge %v", hedgeDelay), false, newFailsafeHedge},
	}
}

// oursHedged is our standard mode, waits scaled, with hedging h.
func oursHedged(name string, h *policy.Hedge) hedgeContender {
	return hedgeContender{name, true, func(base http.RoundTripper) (http.RoundTripper, func() int64) {
		p := scaled(policy.Standard())
		p.Hedge = h
		t := retrytransport.New(base, retrytransport.WithPolicy(p))
		return t, func() int64 {
			var n uint64
			for _, s := range t.Snapshot() {
				n += s.Hedges
			}
			return int64(n)
		}
	}}
}

// newFailsafeHedge is failsafe-go's hedge policy alone (no retry policy:
// the server never fails) with the fixed delay hedgeDelay and its default
// of one hedge, counted by its OnHedge listener.
func newFailsafeHedge(base http.RoundTripper) (http.RoundTripper, func() int64) {
	var hedges atomic.Int64
	hp := hedgepolicy.NewBuilderWithDelay[*http.Response](hedgeDelay).
		OnHedge(func(failsafe.ExecutionEvent[*http.Response]) { hedges.Add(1) }).
		Build()
	return failsafehttp.NewRoundTripper(base, hp), hedges.Load
}

// hedgeRun is one contender's result in one run of the hedge scenario.
type hedgeRun struct {
	p50, p99, p999 time.Duration
	load           float64 // requests the server received per logical request
	hedges         int64   // -1 for the rows that do not hedge
	failed         int
	elapsed        time.Duration
}

// runHedge sends a fixed number of GETs from closed-loop workers to a
// server whose answers are fast but now and then slow, and reports the
// latency each contender's callers saw and the load it put on the server.
func runHedge(w io.Writer, cfg config, _ []contender) {
	hcs := hedgeContenders()
	runs := interleave(cfg.hedgeRuns, hcs, func(k int, hc hedgeContender) hedgeRun { return hedge(cfg, hc, uint64(k)) })
	t := &table{
		title: fmt.Sprintf("hedge: each answer takes %v, or %v with probability %.0f %% (%d closed-loop workers, %d logical GETs); %s",
			hedgeFast, hedgeSlow, 100*hedgeSlowShare, hedgeWorkers, cfg.hedgeRequests, plural(cfg.hedgeRuns, "run")),
		notes: []string{cellsNote(cfg.hedgeRuns) + " " +
			"The server draws each request's delay from a seeded generator, in the order requests arrive, the same seed for every contender " +
			"in a run. Latency percentiles are over every logical request. load: requests the server received per logical request (1.000: no " +
			"extra copy). hedges: copies sent beside a slow attempt, from the transport's Snapshot or failsafe-go's OnHedge listener. " +
			fmt.Sprintf("The p95 row uses the %v delay until the scope has seen 20 attempts, then the observed 95th percentile, never below %v. ",
				hedgeDelay, hedgeMinDelay) +
			"failsafe-go runs its hedge policy alone, with its defaults (one hedge, the others cancelled on the first result).", waitsNote},
		cols: []string{"contender", "p50", "p99", "p99.9", "load", "hedges", "failed", "time"},
	}
	for i, hc := range hcs {
		rs := runs[i]
		hedges := "–"
		if rs[0].hedges >= 0 {
			hedges = spread(column(rs, func(r hedgeRun) float64 { return float64(r.hedges) }), whole)
		}
		t.add(hc.name,
			spread(column(rs, func(r hedgeRun) float64 { return r.p50.Seconds() }), msFromSeconds),
			spread(column(rs, func(r hedgeRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			spread(column(rs, func(r hedgeRun) float64 { return r.p999.Seconds() }), msFromSeconds),
			spread(column(rs, func(r hedgeRun) float64 { return r.load }), ratio),
			hedges,
			failedCell(column(rs, func(r hedgeRun) float64 { return float64(r.failed) })),
			spread(column(rs, func(r hedgeRun) float64 { return r.elapsed.Seconds() }), func(x float64) string { return secs(time.Duration(x * 1e9)) }))
	}
	t.write(w)
	writeGoals(w, hedgeGoals(hcs, runs))
}

// hedgeGoals checks, for each of our hedging rows, in every run, that its
// p99 is at most a fifth of our standard mode's in the same run, and that
// it added at most 10 % to the server's load.
func hedgeGoals(hcs []hedgeContender, runs [][]hedgeRun) []goal {
	standard := contenders()[1].name
	base := slices.IndexFunc(hcs, func(hc hedgeContender) bool { return hc.name == standard })
	var goals []goal
	for i, hc := range hcs {
		if !hc.goals {
			continue
		}
		var cuts, extra []float64
		for k, r := range runs[i] {
			cuts = append(cuts, runs[base][k].p99.Seconds()/r.p99.Seconds())
			extra = append(extra, r.load-1)
		}
		times := func(x float64) string { return fmt.Sprintf("%.1f×", x) }
		goals = append(goals,
			goal{slices.Min(cuts) >= 5, fmt.Sprintf("%s cuts p99 at least 5× against %s in every run: %s (min / median / max)%s",
				hc.name, hcs[base].name, spread(cuts, times), everyRun(cuts, times))},
			goal{slices.Max(extra) <= 0.10, fmt.Sprintf("%s adds at most 10.0 %% to the server's load in every run: %s (min / median / max)%s",
				hc.name, spread(extra, percent), everyRun(extra, percent))})
	}
	return goals
}

// hedge runs one contender once against a fresh server seeded with seed.
func hedge(cfg config, hc hedgeContender, seed uint64) hedgeRun {
	srv := newServer(sometimesSlow(seed))
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	rt, hedges := hc.wrap(base)
	client := &http.Client{Transport: rt}

	start := time.Now()
	outs := runCount(hedgeWorkers, cfg.hedgeRequests, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r := hedgeRun{elapsed: time.Since(start), failed: failures(outs), hedges: -1}
	if hedges != nil {
		r.hedges = hedges()
	}
	d := make([]time.Duration, len(outs))
	for i, o := range outs {
		d[i] = o.end.Sub(o.start)
	}
	slices.Sort(d)
	r.p50, r.p99, r.p999 = quantile(d, 0.50), quantile(d, 0.99), quantile(d, 0.999)
	r.load = float64(srv.hits.Load()) / float64(len(outs))
	return r
}

// sometimesSlow returns a handler that answers 200 after hedgeSlow with
// probability hedgeSlowShare and after hedgeFast otherwise, each request
// drawn in turn from a generator seeded with seed. A request whose client
// has gone (a hedge's loser, cancelled) ends at once, unanswered.
func sometimesSlow(seed uint64) http.HandlerFunc {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0x6865646765)) // "hedge"
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		slow := rng.Float64() < hedgeSlowShare
		mu.Unlock()
		d := hedgeFast
		if slow {
			d = hedgeSlow
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			okHandler(w, r)
		case <-r.Context().Done():
		}
	}
}
