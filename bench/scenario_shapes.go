package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// shapesWorkers are the callers of the shapes tables: closed-loop workers
// of one transport, from a CLI's or a cron job's one request in flight to
// a busy service's 64.
func shapesWorkers() []int { return []int{1, 2, 4, 8, 16, 64} }

// shapesCapacities are the servers of the shapes and open-loop tables.
func shapesCapacities() []capacity { return []capacity{{100, 10}, {1000, 10}} }

// The goals of the shapes and open-loop tables for our adaptive mode, each
// in every run, and the start-up whose 429s the shapes tables also leave
// out.
const (
	shapesMinShare = 0.90 // of what is reachable: goodput over min(capacity, reachable)
	shapesMax429   = 0.05 // of the server hits
	shapesStartup  = time.Second
)

// shapesRun is one contender's result in one closed-loop run of a shapes
// cell.
type shapesRun struct {
	goodput  float64 // successful logical requests that ended within the run, per second
	target   float64 // the lower of the capacity and the round's reachable, per second
	share429 float64 // of all server hits
	late429  float64 // of the server hits after shapesStartup; NaN in a shorter run
	p99      time.Duration
	failed   int
}

// share is the goodput over the target.
func (r shapesRun) share() float64 { return r.goodput / r.target }

// shapesContenders returns the shapes tables' contenders: our adaptive
// mode, whose goals the tables check, the AWS SDK's adaptive mode and,
// with cfg.shapesStandard, our standard mode, the reference without a
// limiter (left out by default: it is the throttled table's known
// hammering, and 12 more runs a round).
func shapesContenders(cfg config) []contender {
	cs := []contender{oursAdaptive(), awsAdaptive()}
	if cfg.shapesStandard {
		all := contenders()
		cs = append(cs, all[slices.IndexFunc(all, func(c contender) bool { return c.name == "retrytransport standard" })])
	}
	return cs
}

// runShapes prints the shapes tables, one per capacity of
// shapesCapacities: every worker count of shapesWorkers against a server
// of that capacity, closed loop, each contender cfg.shapesRuns times.
//
// The runs are interleaved round by round, so that drift of this shared
// machine hits all alike. Each round first measures what each worker count
// reaches with our adaptive mode against a server that admits everything
// (cfg.shapesReachFor; its rate is steady within a second, and that round
// trip bounds the goodput more than the capacity does only if the machine
// is very busy), then runs every cell, contender after contender.
//
// A run lasts cfg.shapesFor: 5 s in the full run, not the 8 s, so
// that the 24 cells of a round (two contenders, 12 cells) and the six
// reachable runs take about two minutes and the five rounds about ten. The
// 429s after the first second are shown apart, so that the start-up of a
// run, a larger part of a shorter one, can be told from the steady state.
func runShapes(w io.Writer, cfg config, _ []contender) {
	ws, caps, cs := shapesWorkers(), shapesCapacities(), shapesContenders(cfg)
	reach := make([][]float64, len(ws))        // [workers][round]
	runs := make([][][][]shapesRun, len(caps)) // [capacity][workers][contender][round]
	for ci := range caps {
		runs[ci] = make([][][]shapesRun, len(ws))
		for wi := range ws {
			runs[ci][wi] = make([][]shapesRun, len(cs))
		}
	}
	for range cfg.shapesRuns {
		for wi, n := range ws {
			reach[wi] = append(reach[wi], reachable(cfg.shapesReachFor, n))
		}
		for ci, cp := range caps {
			for wi, n := range ws {
				target := min(cp.rate, reach[wi][len(reach[wi])-1])
				for k, c := range cs {
					runs[ci][wi][k] = append(runs[ci][wi][k], shapesOnce(cfg.shapesFor, cp, n, c, target))
				}
			}
		}
	}
	for ci, cp := range caps {
		writeShapesTable(w, cfg, cp, ws, cs, reach, runs[ci])
		ours := make([][]shapesRun, len(ws))
		for wi := range ws {
			ours[wi] = runs[ci][wi][0]
		}
		writeGoals(w, shapesGoals(cs[0].name, cp, ws, ours))
	}
}

// reachable runs our adaptive mode's workers closed loop against a server
// that admits everything for d, and returns their goodput per second.
func reachable(d time.Duration, workers int) float64 {
	srv := newServer(okHandler)
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: oursAdaptive().wrap(base)}
	outs := runFor(workers, time.Now().Add(d), func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	return float64(len(outs)-failures(outs)) / d.Seconds()
}

// shapesOnce runs c's workers closed loop for d against a fresh server of
// capacity cp, with a fresh transport.
func shapesOnce(d time.Duration, cp capacity, workers int, c contender, target float64) shapesRun {
	srv := newCapacityServer(cp)
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}

	start := time.Now()
	end := start.Add(d)
	srv.count(start, start.Add(shapesStartup), end)
	outs := runFor(workers, end, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r := shapesRun{failed: failures(outs), target: target}
	r.goodput = float64(len(outs)-r.failed) / d.Seconds()
	r.share429, r.late429 = srv.share429()
	_, r.p99 = latencies(outs)
	return r
}

// writeShapesTable prints the table of capacity cp: a row per worker count
// and contender, runs[wi][k] the runs of contender k with ws[wi] workers,
// reach[wi] the reachable of each round.
func writeShapesTable(w io.Writer, cfg config, cp capacity, ws []int, cs []contender, reach [][]float64, runs [][][]shapesRun) {
	t := &table{
		title: fmt.Sprintf("shapes, %s: closed-loop workers of one transport against a server of that capacity, "+
			"429 beyond (AWS throttling code, no Retry-After); %v a run, %s",
			cp, cfg.shapesFor, plural(cfg.shapesRuns, "run")),
		notes: []string{cellsNote(cfg.shapesRuns) + " Runs interleaved round by round; in each round, first the reachable " +
			fmt.Sprintf("(our adaptive mode's workers against a server that admits everything, %v), then every cell, contender after contender. ", cfg.shapesReachFor) +
			"target: the lower of the capacity and the round's reachable. " +
			"goodput: successful logical requests that ended within the run, per second, and as a share of the target " +
			fmt.Sprintf("(the server admits at most %.1f/s over a run, its burst included). ", cp.rate+float64(cp.burst)/cfg.shapesFor.Seconds()) +
			fmt.Sprintf("429 share: of all server hits, and of those after the first %v, the start-up left out. ", shapesStartup) +
			"p99: of the logical requests that ended within the run, failed ones included.",
			waitsNote},
		cols: []string{"contender", "workers", "reachable/s", "goodput/s", "% of target", "429 share", fmt.Sprintf("429s after %v", shapesStartup), "p99", "failed"},
	}
	for wi, n := range ws {
		for k, c := range cs {
			rs := runs[wi][k]
			t.add(c.name, fmt.Sprint(n), spread(reach[wi], whole),
				spread(column(rs, func(r shapesRun) float64 { return r.goodput }), perSecond),
				spread(column(rs, shapesRun.share), percent),
				spread(column(rs, func(r shapesRun) float64 { return r.share429 }), percent),
				spread(column(rs, func(r shapesRun) float64 { return r.late429 }), percent),
				spread(column(rs, func(r shapesRun) float64 { return r.p99.Seconds() }), msFromSeconds),
				failedCell(column(rs, func(r shapesRun) float64 { return float64(r.failed) })))
		}
	}
	t.write(w)
}

// shapesGoals checks the goals of one capacity's table for our contender
// name, whose runs with ws[wi] workers are rs[wi]: goodput at least
// shapesMinShare of the target and 429s at most shapesMax429 of the hits,
// in every run of every worker count. Each line gives the worst run of each
// worker count and names those that missed.
func shapesGoals(name string, cp capacity, ws []int, rs [][]shapesRun) []goal {
	worstShare := make([]float64, len(ws))
	worst429 := make([]float64, len(ws))
	for wi := range ws {
		worstShare[wi] = slices.Min(column(rs[wi], shapesRun.share))
		worst429[wi] = slices.Max(column(rs[wi], func(r shapesRun) float64 { return r.share429 }))
	}
	labels := make([]string, len(ws))
	for wi, n := range ws {
		labels[wi] = fmt.Sprint(n)
	}
	return []goal{
		worstGoal(fmt.Sprintf("%s, %s: goodput at least %s of the target in every run, at every worker count",
			name, cp, percent(shapesMinShare)), "workers", labels, worstShare, percent, func(x float64) bool { return x >= shapesMinShare }),
		worstGoal(fmt.Sprintf("%s, %s: 429s at most %s of the server hits in every run, at every worker count",
			name, cp, percent(shapesMax429)), "workers", labels, worst429, percent, func(x float64) bool { return x <= shapesMax429 }),
	}
}

// worstGoal is the goal what, met when ok holds for the worst run of
// every cell of a table: worst[i] is that of the cell labels[i], a value of
// what by names (workers, load), and f formats it.
func worstGoal(what, by string, labels []string, worst []float64, f func(float64) string, ok func(float64) bool) goal {
	values := make([]string, len(worst))
	met := make([]bool, len(worst))
	for i, x := range worst {
		values[i], met[i] = f(x), ok(x)
	}
	return cellsGoal(what, by, labels, values, met)
}

// cellsGoal is the goal what, met when every cell of a table met it: the
// cell labels[i] (a value of what by names) shows values[i] and met it if
// met[i]. The line names the cells that missed.
func cellsGoal(what, by string, labels, values []string, met []bool) goal {
	var cells, missed []string
	for i, l := range labels {
		cells = append(cells, l+": "+values[i])
		if !met[i] {
			missed = append(missed, l)
		}
	}
	text := what + ": worst run by " + by + " " + strings.Join(cells, ", ")
	if len(missed) > 0 {
		text += "; missed at " + by + " " + strings.Join(missed, ", ")
	}
	return goal{len(missed) == 0, text}
}
