package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
)

// The latency tables' server and callers: a server that serves
// latencySlots requests at once for latencyService each and queues the
// rest (slotServer), offered Poisson arrivals by callers who give up after
// latencyDeadline.
const (
	latencySlots    = 8
	latencyService  = 10 * time.Millisecond
	latencyCapacity = float64(latencySlots * time.Second / latencyService) // requests per second
	latencyDeadline = time.Second
	// latencyStartUp is the start of every run, which the table shows
	// apart: the contenders learn their limits in it (ours within 300 ms
	// or so), and every contender opens its connections.
	latencyStartUp = 500 * time.Millisecond
)

// The latency goals for ours with concurrency.Adaptive, in every run:
// above the capacity, the goodput, the p99 of the successes and the wasted
// work; at or below it, no refusal and a p99 within latencyMaxSlower of
// bare's median.
const (
	latencyMinShare  = 0.97 // of the capacity
	latencyMaxP99    = 40 * time.Millisecond
	latencyMaxWasted = 0.01 // of the server's services
	latencyMaxSlower = 0.05 // over bare's median p99
)

// latencyLoads are the latency table's offered loads, as multiples of the
// capacity.
func latencyLoads() []float64 { return []float64{0.5, 1.2, 2, 4} }

// latencyContenders returns the latency table's contenders: bare, our
// standard mode alone and with each concurrency limit, and failsafe-go's
// adaptive limiter and bulkhead with their defaults, each alone in
// failsafehttp's RoundTripper. Ours with concurrency.Adaptive is the one
// the goals are checked for.
func latencyContenders() []contender {
	ours := func(name string, limit func() concurrency.Limiter) contender {
		return contender{name, kindOurs, func(base http.RoundTripper) http.RoundTripper {
			p := scaled(policy.Standard())
			if limit != nil {
				p.Concurrency = limit()
			}
			return retrytransport.New(base, retrytransport.WithPolicy(p))
		}}
	}
	return []contender{
		contenders()[0], // bare
		ours("retrytransport standard", nil),
		ours(latencyGoalsFor, func() concurrency.Limiter { return &concurrency.Adaptive{} }),
		ours("retrytransport, Concurrency: Fixed{Max: 8}", func() concurrency.Limiter { return &concurrency.Fixed{Max: latencySlots} }),
		{"failsafe-go adaptivelimiter", kindPeer, func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, adaptivelimiter.NewWithDefaults[*http.Response]())
		}},
		{"failsafe-go bulkhead(8)", kindPeer, func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, bulkhead.New[*http.Response](latencySlots))
		}},
	}
}

// latencyGoalsFor names the contender whose goals the latency table
// checks.
const latencyGoalsFor = "retrytransport, Concurrency: Adaptive{}"

// latencyRun is one contender's result in one latency run.
//
// Every figure but startUp is of the run's measured part, after
// latencyStartUp: the successes and services that ended in it, the
// arrivals in it.
type latencyRun struct {
	arrivals int     // logical requests started
	offered  float64 // arrivals per second
	goodput  float64 // successful logical requests, per second
	base     float64 // min(offered, capacity), per second
	startUp  float64 // goodput in the start-up over min(offered, capacity)
	p99      time.Duration
	served   float64 // the server's services, per second
	wasted   float64 // of them, for clients that had gone; NaN if none
	refused  float64 // of the arrivals, those that never reached the base transport
	timedOut float64 // of the arrivals, those that reached it and failed within the run
	peak     int64   // the most requests the server served at once, start-up included
	blocked  int     // arrivals held back by latencyInFlight, start-up included
}

// share is the goodput over min(offered, capacity).
func (r latencyRun) share() float64 { return r.goodput / r.base }

// latencyInFlight caps the goroutines in flight at an offered rate, as
// openloopInFlight does for the 1 s deadline.
func latencyInFlight(offered float64) int {
	return int(offered*latencyDeadline.Seconds()*1.25) + 16
}

// runLatency prints the latency table: Poisson arrivals at each load of
// latencyLoads times the capacity, each its own goroutine making one
// logical request under latencyDeadline, for latencyStartUp and then
// cfg.latencyFor measured, every contender cfg.latencyRuns times,
// interleaved round by round; in a round every contender of a load gets
// the same arrival times.
func runLatency(w io.Writer, cfg config, _ []contender) {
	defer writeLoadNote(w, loadAverage())
	loads, cs := latencyLoads(), latencyContenders()
	runs := make([][][]latencyRun, len(loads)) // [load][contender][round]
	for li := range loads {
		runs[li] = make([][]latencyRun, len(cs))
	}
	for round := range cfg.latencyRuns {
		for li, load := range loads {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(1000+li)))
			arrivals := poissonArrivals(load*latencyCapacity, latencyStartUp+cfg.latencyFor, rng)
			for k, c := range cs {
				runs[li][k] = append(runs[li][k], latencyOnce(cfg.latencyFor, c, arrivals))
			}
		}
	}
	writeLatencyTable(w, cfg, loads, cs, runs)
	ours := slices.IndexFunc(cs, func(c contender) bool { return c.name == latencyGoalsFor })
	oursRuns := make([][]latencyRun, len(loads))
	bareRuns := make([][]latencyRun, len(loads))
	for li := range loads {
		oursRuns[li], bareRuns[li] = runs[li][ours], runs[li][0]
	}
	writeGoals(w, latencyGoals(latencyGoalsFor, loads, oursRuns, bareRuns))
	for li, load := range loads {
		for k, c := range cs {
			if b := column(runs[li][k], func(r latencyRun) float64 { return float64(r.blocked) }); slices.Max(b) > 0 {
				fmt.Fprintf(w, "- note: %s at %s: arrivals held back by the cap on goroutines in flight, by run: %v\n",
					c.name, loadLabel(load), b)
			}
		}
	}
}

// latencyOnce sends c's requests at the arrival times at, from now, to a
// fresh slot server, with a fresh transport and a heap just collected,
// for latencyStartUp and then d measured. The requests still in flight at
// the end are cancelled: they count neither as successes nor as failures.
func latencyOnce(d time.Duration, c contender, at []time.Duration) latencyRun {
	runtime.GC() // the previous run's garbage is not this one's to collect
	srv := newSlotServer(latencySlots, latencyService)
	defer srv.close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(attemptTap{base})}
	traces := make([]requestTrace, len(at))

	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	from, end := start.Add(latencyStartUp), start.Add(latencyStartUp+d)
	srv.count(from, end)
	stop := time.AfterFunc(latencyStartUp+d, cancel)
	defer stop.Stop()
	var r latencyRun
	outs, blocked := runArrivals(start, at, latencyInFlight(float64(len(at))/(latencyStartUp+d).Seconds()), func(_ context.Context, i int) outcome {
		ctx, cancel := context.WithTimeout(withTrace(runCtx, &traces[i]), latencyDeadline)
		defer cancel()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r.blocked = blocked
	var durations []time.Duration
	var startUp, refused, timedOut int
	for i, o := range outs {
		measured := at[i] >= latencyStartUp
		if measured {
			r.arrivals++
		}
		switch {
		case traces[i].refused():
			if measured {
				refused++
			}
		case o.end.After(end):
		case o.ok() && o.end.Before(from):
			startUp++
		case o.ok():
			durations = append(durations, o.end.Sub(o.start))
		case measured:
			timedOut++
		}
	}
	r.offered = float64(r.arrivals) / d.Seconds()
	r.base = min(r.offered, latencyCapacity)
	r.goodput = float64(len(durations)) / d.Seconds()
	r.startUp = float64(startUp) / latencyStartUp.Seconds() / r.base
	slices.Sort(durations)
	r.p99 = quantile(durations, 0.99)
	served, wasted, peak := srv.results()
	r.served, r.wasted, r.peak = float64(served)/d.Seconds(), ratioOf(wasted, served), peak
	r.refused = ratioOf(int64(refused), int64(r.arrivals))
	r.timedOut = ratioOf(int64(timedOut), int64(r.arrivals))
	return r
}

// writeLatencyTable prints the latency table: a row per load and
// contender, runs[li][k] the runs of contender k at loads[li].
func writeLatencyTable(w io.Writer, cfg config, loads []float64, cs []contender, runs [][][]latencyRun) {
	t := &table{
		title: fmt.Sprintf("latency: a server of %d slots, %v a request, %.0f req/s, that queues the rest (FIFO) and never says no; "+
			"Poisson arrivals at %s the capacity, each its own goroutine making one logical request with a %v deadline; "+
			"a run is a %v start-up, then %v measured; %s",
			latencySlots, latencyService, latencyCapacity, andList(loads, loadLabel), latencyDeadline,
			latencyStartUp, cfg.latencyFor, plural(cfg.latencyRuns, "run")),
		notes: []string{cellsNote(cfg.latencyRuns) + " Runs interleaved round by round; in a round every contender of a load gets the same arrival times, " +
			"and every run starts with a fresh server, a fresh transport and a collected heap. " +
			"All but start-up are of the measured part: the arrivals in it, the successes and the server's services that ended in it. " +
			"goodput: successful logical requests per second, and as a share of the lower of the offered rate and the capacity; " +
			"start-up: the same share in the start-up, where the limiters learn. p99: of the successes. " +
			"served: the server's services per second (its capacity when it is never idle). " +
			"wasted: of those services, the ones whose client had gone when it ended: the server serves every request it queued, " +
			"and sees that the client has gone by the request's context, which it cancels when the client closes the connection. " +
			"refused: of the arrivals, the requests the contender never sent; timed out: those sent that failed within the run " +
			"(requests still in flight at the end are cancelled and counted in neither).",
			fmt.Sprintf("The issue's runs were 8 s; these are %v (-latency-for sets it). Without a limit the server's queue grows by the excess rate, "+
				"so its wait passes the 1 s deadline 2 s into a run at 2x and 1.3 s at 4x, but only 5 s in at 1.2x, where a short run shows the "+
				"growing p99 and not yet the waste. At 4x, bare and standard mode hold thousands of connections, opening hundreds a second, "+
				"in the process that also runs the server: on 2 cores their own timers fire late, and a success's time can pass the deadline.", latencyStartUp+cfg.latencyFor),
			"Ours are standard mode with Policy.Concurrency set (none, concurrency.Adaptive{}, concurrency.Fixed{Max: 8}); " +
				"failsafe-go's are adaptivelimiter.NewWithDefaults() and bulkhead.New(8), each alone in failsafehttp.NewRoundTripper, with no option set. " +
				"No limiter here waits for a place: each refuses at once when full. " + waitsNote},
		cols: []string{"contender", "load", "offered/s", "goodput/s", "% of min(offered, capacity)", "start-up", "p99 of successes",
			"served/s", "wasted", "refused", "timed out"},
	}
	for li, load := range loads {
		for k, c := range cs {
			rs := runs[li][k]
			t.add(c.name, fmt.Sprintf("%s × %.0f/s", loadLabel(load), latencyCapacity),
				spread(column(rs, func(r latencyRun) float64 { return r.offered }), perSecond),
				spread(column(rs, func(r latencyRun) float64 { return r.goodput }), perSecond),
				spread(column(rs, latencyRun.share), percent),
				spread(column(rs, func(r latencyRun) float64 { return r.startUp }), percent),
				spread(column(rs, func(r latencyRun) float64 { return r.p99.Seconds() }), msFromSeconds),
				spread(column(rs, func(r latencyRun) float64 { return r.served }), perSecond),
				spread(column(rs, func(r latencyRun) float64 { return r.wasted }), percent),
				spread(column(rs, func(r latencyRun) float64 { return r.refused }), percent),
				spread(column(rs, func(r latencyRun) float64 { return r.timedOut }), percent))
		}
	}
	t.write(w)
}

// latencyGoals checks the latency goals for our contender name, whose runs
// at loads[li] are ours[li], against bare's runs bare[li]: above the
// capacity, goodput at least latencyMinShare of it, a p99 of at most
// latencyMaxP99 and at most latencyMaxWasted of the server's work wasted;
// at or below it, nothing refused and a p99 at most latencyMaxSlower above
// bare's median; each in every run.
func latencyGoals(name string, loads []float64, ours, bare [][]latencyRun) []goal {
	var over, under []int
	for li, load := range loads {
		if load > 1 {
			over = append(over, li)
		} else {
			under = append(under, li)
		}
	}
	labels := func(lis []int) []string {
		ls := make([]string, len(lis))
		for i, li := range lis {
			ls[i] = loadLabel(loads[li])
		}
		return ls
	}
	worst := func(lis []int, f func(latencyRun) float64, pick func(...float64) float64) []float64 {
		xs := make([]float64, len(lis))
		for i, li := range lis {
			xs[i] = pick(column(ours[li], f)...)
		}
		return xs
	}
	lowest := func(xs ...float64) float64 { return slices.Min(xs) }
	highest := func(xs ...float64) float64 { return slices.Max(xs) }
	p99 := func(r latencyRun) float64 { return r.p99.Seconds() }
	var goals []goal
	if len(over) > 0 {
		goals = append(goals,
			worstGoal(fmt.Sprintf("%s: goodput at least %s of the capacity in every run, above it", name, percent(latencyMinShare)),
				"load", labels(over), worst(over, latencyRun.share, lowest), percent, func(x float64) bool { return x >= latencyMinShare }),
			worstGoal(fmt.Sprintf("%s: p99 of the successes at most %s in every run, above the capacity", name, ms(latencyMaxP99)),
				"load", labels(over), worst(over, p99, highest), msFromSeconds, func(x float64) bool { return x <= latencyMaxP99.Seconds() }),
			worstGoal(fmt.Sprintf("%s: at most %s of the server's work wasted in every run, above the capacity", name, percent(latencyMaxWasted)),
				"load", labels(over), worst(over, func(r latencyRun) float64 { return r.wasted }, highest), percent,
				func(x float64) bool { return x <= latencyMaxWasted }))
	}
	for _, li := range under {
		refused := slices.Max(column(ours[li], func(r latencyRun) float64 { return r.refused }))
		goals = append(goals, goal{refused == 0, fmt.Sprintf("%s at %s: nothing refused in any run: most in a run %s",
			name, loadLabel(loads[li]), percent(refused))})
		worstP99, bareP99 := slices.Max(column(ours[li], p99)), medianOf(column(bare[li], p99))
		limit := bareP99 * (1 + latencyMaxSlower)
		goals = append(goals, goal{worstP99 <= limit, fmt.Sprintf(
			"%s at %s: p99 of the successes within %s of bare's median in every run: worst %s, bare's median %s, so at most %s%s",
			name, loadLabel(loads[li]), percent(latencyMaxSlower), msFromSeconds(worstP99), msFromSeconds(bareP99), msFromSeconds(limit),
			everyRun(column(ours[li], p99), msFromSeconds))})
	}
	return goals
}
