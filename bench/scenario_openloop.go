package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// openloopLoads are the open-loop tables' offered loads, as multiples of
// the capacity.
func openloopLoads() []float64 { return []float64{0.5, 1, 2} }

// openloopDeadline bounds each logical request of the open loop, as its
// caller's deadline does: a handler that calls an API for each request it
// serves gives up when its own caller would. Without one, the requests
// that a limiter queues at twice the capacity would pile up for the whole
// run, and in-flight goroutines with them. Two seconds leave a request
// room for its retries and a limiter's waits at the capacity (a closed
// loop's p99 there is well under a second) while bounding what is in
// flight to about the offered rate times 2 s.
const openloopDeadline = 2 * time.Second

// openloopInFlight caps the goroutines in flight at an offered rate: a
// quarter more than the requests that can be in flight when each ends by
// its deadline, so that the cap holds arrivals back only from a contender
// that overruns its deadline (runArrivals counts them).
func openloopInFlight(offered float64) int {
	return int(offered*openloopDeadline.Seconds()*1.25) + 16
}

// openloopRun is one contender's result in one open-loop run.
type openloopRun struct {
	arrivals int     // logical requests started
	offered  float64 // arrivals per second
	goodput  float64 // successful logical requests that ended within the run, per second
	base     float64 // min(offered, capacity), per second
	share429 float64 // of all server hits, those after the run's end included
	refused  int     // requests that ended before their first attempt
	delayed  int     // requests of one attempt that first waited for a send token
	failed   int
	blocked  int // arrivals held back by openloopInFlight
	p99      time.Duration
}

// share is the goodput over min(offered, capacity).
func (r openloopRun) share() float64 { return r.goodput / r.base }

// runOpenloop prints the open-loop table: Poisson arrivals at each load of
// openloopLoads times each capacity of shapesCapacities, each its own
// goroutine making one logical request under openloopDeadline, for
// cfg.openloopFor, every contender cfg.openloopRuns times. The runs are
// interleaved round by round; in a round both contenders of a cell get the
// same arrival times.
func runOpenloop(w io.Writer, cfg config, _ []contender) {
	caps, loads := shapesCapacities(), openloopLoads()
	cs := []contender{oursAdaptive(), awsAdaptive()}
	runs := make([][][][]openloopRun, len(caps)) // [capacity][load][contender][round]
	for ci := range caps {
		runs[ci] = make([][][]openloopRun, len(loads))
		for li := range loads {
			runs[ci][li] = make([][]openloopRun, len(cs))
		}
	}
	for round := range cfg.openloopRuns {
		for ci, cp := range caps {
			for li, load := range loads {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(ci*len(loads)+li)))
				arrivals := poissonArrivals(load*cp.rate, cfg.openloopFor, rng)
				for k, c := range cs {
					runs[ci][li][k] = append(runs[ci][li][k], openloopOnce(cfg.openloopFor, cp, c, arrivals))
				}
			}
		}
	}
	writeOpenloopTable(w, cfg, caps, loads, cs, runs)
	var goals []goal
	for ci, cp := range caps {
		ours := make([][]openloopRun, len(loads))
		for li := range loads {
			ours[li] = runs[ci][li][0]
		}
		goals = append(goals, openloopGoals(cs[0].name, cp, loads, ours)...)
	}
	writeGoals(w, goals)
	for ci, cp := range caps {
		for li, load := range loads {
			for k, c := range cs {
				if b := column(runs[ci][li][k], func(r openloopRun) float64 { return float64(r.blocked) }); slices.Max(b) > 0 {
					fmt.Fprintf(w, "- note: %s, %s × %s: arrivals held back by the cap on goroutines in flight, by run: %v\n",
						c.name, loadLabel(load), cp, b)
				}
			}
		}
	}
}

// poissonArrivals returns the arrival times, from the start, of a Poisson
// process of rate per second over d: gaps drawn from the exponential
// distribution of mean 1/rate.
func poissonArrivals(rate float64, d time.Duration, rng *rand.Rand) []time.Duration {
	var at []time.Duration
	t := 0.0
	for {
		t += rng.ExpFloat64() / rate
		if t >= d.Seconds() {
			return at
		}
		at = append(at, time.Duration(t*float64(time.Second)))
	}
}

// runArrivals starts logical request i at start + at[i], each in a
// goroutine of its own, and returns their outcomes by number once all have
// ended, and how many arrivals found inFlight others running and waited for
// one of them to end. One that falls behind its time starts at once.
func runArrivals(start time.Time, at []time.Duration, inFlight int, do func(ctx context.Context, i int) outcome) (outs []outcome, blocked int) {
	outs = make([]outcome, len(at))
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i, a := range at {
		if wait := time.Until(start.Add(a)); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case sem <- struct{}{}:
		default:
			blocked++
			sem <- struct{}{}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs[i] = do(context.Background(), i)
		}()
	}
	wg.Wait()
	return outs, blocked
}

// openloopOnce sends c's requests at the arrival times at, from now, to a
// fresh server of capacity cp, with a fresh transport; d is the run's
// length, over which the rates are reckoned.
func openloopOnce(d time.Duration, cp capacity, c contender, at []time.Duration) openloopRun {
	srv := newCapacityServer(cp)
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: traced(c).wrap(base)}
	traces := make([]requestTrace, len(at))

	start := time.Now()
	end := start.Add(d)
	// Every hit of the run's requests counts, those after its end too.
	never := start.Add(time.Hour)
	srv.count(start, never, never)
	r := openloopRun{arrivals: len(at), offered: float64(len(at)) / d.Seconds()}
	outs, blocked := runArrivals(start, at, openloopInFlight(r.offered), func(ctx context.Context, i int) outcome {
		ctx, cancel := context.WithTimeout(withTrace(ctx, &traces[i]), openloopDeadline)
		defer cancel()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r.blocked = blocked
	r.base = min(r.offered, cp.rate)
	r.failed = failures(outs)
	for i, o := range outs {
		if o.ok() && o.end.Before(end) {
			r.goodput++
		}
		if traces[i].refused() {
			r.refused++
		}
		if traces[i].delayed() {
			r.delayed++
		}
	}
	r.goodput /= d.Seconds()
	r.share429, _ = srv.share429()
	_, r.p99 = latencies(outs)
	return r
}

// loadLabel names an offered load, a multiple of the capacity.
func loadLabel(load float64) string { return fmt.Sprintf("%gx", load) }

// writeOpenloopTable prints the open-loop table: a row per capacity, load
// and contender, runs[ci][li][k] the runs of contender k at loads[li] of
// caps[ci].
func writeOpenloopTable(w io.Writer, cfg config, caps []capacity, loads []float64, cs []contender, runs [][][][]openloopRun) {
	t := &table{
		title: fmt.Sprintf("openloop: Poisson arrivals at %s the capacity, each its own goroutine making one logical request "+
			"with a %v deadline, against a server of %s, 429 beyond (AWS throttling code, no Retry-After); %v a run, %s",
			andList(loads, loadLabel), openloopDeadline, andList(caps, capacity.String), cfg.openloopFor, plural(cfg.openloopRuns, "run")),
		notes: []string{cellsNote(cfg.openloopRuns) + " \"refused\" and \"delayed\" likewise. " +
			"Runs interleaved round by round; in a round both contenders of a cell get the same arrival times. " +
			"offered: arrivals per second. goodput: successful logical requests that ended within the run, per second, " +
			"and as a share of the lower of the offered rate and the capacity. " +
			"429 share: of all server hits, those of requests still running at the run's end included. " +
			"refused: requests that ended before their first attempt. delayed: requests of one attempt whose first attempt " +
			"waited for a send token, by the transport's own account for ours (Attempts.Waited of ResponseAttempts or of the *RetryError), " +
			fmt.Sprintf("and for the SDK a GetAttemptToken of %v or more; ", heldAfter) +
			"a request of more than one attempt is not counted (its 429 is). " +
			"p99: of all logical requests, failed ones included.",
			waitsNote},
		cols: []string{"contender", "load", "offered/s", "goodput/s", "% of min(offered, capacity)", "429 share", "refused", "delayed", "failed", "p99"},
	}
	for ci, cp := range caps {
		for li, load := range loads {
			for k, c := range cs {
				rs := runs[ci][li][k]
				t.add(c.name, fmt.Sprintf("%s × %.0f/s", loadLabel(load), cp.rate),
					spread(column(rs, func(r openloopRun) float64 { return r.offered }), perSecond),
					spread(column(rs, func(r openloopRun) float64 { return r.goodput }), perSecond),
					spread(column(rs, openloopRun.share), percent),
					spread(column(rs, func(r openloopRun) float64 { return r.share429 }), percent),
					failedCell(column(rs, func(r openloopRun) float64 { return float64(r.refused) })),
					failedCell(column(rs, func(r openloopRun) float64 { return float64(r.delayed) })),
					failedCell(column(rs, func(r openloopRun) float64 { return float64(r.failed) })),
					spread(column(rs, func(r openloopRun) float64 { return r.p99.Seconds() }), msFromSeconds))
			}
		}
	}
	t.write(w)
}

// andList lists xs, each formatted by f: "a", "a and b", "a, b and c".
func andList[T any](xs []T, f func(T) string) string {
	s := ""
	for i, x := range xs {
		switch {
		case i == 0:
		case i == len(xs)-1:
			s += " and "
		default:
			s += ", "
		}
		s += f(x)
	}
	return s
}

// openloopGoals checks the open-loop goals of capacity cp for our
// contender name, whose runs at loads[li] are rs[li]: goodput at least
// shapesMinShare of min(offered, capacity) and 429s at most shapesMax429
// of the hits at every load, and no request refused or delayed at the
// loads of at most half the capacity, each in every run.
func openloopGoals(name string, cp capacity, loads []float64, rs [][]openloopRun) []goal {
	labels := make([]string, len(loads))
	worstShare := make([]float64, len(loads))
	worst429 := make([]float64, len(loads))
	var light []int // the loads of at most half the capacity
	for li, load := range loads {
		labels[li] = loadLabel(load)
		worstShare[li] = slices.Min(column(rs[li], openloopRun.share))
		worst429[li] = slices.Max(column(rs[li], func(r openloopRun) float64 { return r.share429 }))
		if load <= 0.5 {
			light = append(light, li)
		}
	}
	goals := []goal{
		worstGoal(fmt.Sprintf("%s, %s: goodput at least %s of min(offered, capacity) in every run, at every load",
			name, cp, percent(shapesMinShare)), "load", labels, worstShare, percent, func(x float64) bool { return x >= shapesMinShare }),
		worstGoal(fmt.Sprintf("%s, %s: 429s at most %s of the server hits in every run, at every load",
			name, cp, percent(shapesMax429)), "load", labels, worst429, percent, func(x float64) bool { return x <= shapesMax429 }),
	}
	for _, li := range light {
		refused := slices.Max(column(rs[li], func(r openloopRun) float64 { return float64(r.refused) }))
		delayed := slices.Max(column(rs[li], func(r openloopRun) float64 { return float64(r.delayed) }))
		goals = append(goals, goal{refused == 0 && delayed == 0, fmt.Sprintf(
			"%s, %s at %s: no request refused or delayed in any run: most in a run %.0f refused, %.0f delayed (of %.0f arrivals at most)",
			name, cp, labels[li], refused, delayed, slices.Max(column(rs[li], func(r openloopRun) float64 { return float64(r.arrivals) })))})
	}
	return goals
}
