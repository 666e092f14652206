package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

const brownoutWorkers = 8

// brownoutRun is one contender's result in the brownout.
type brownoutRun struct {
	c            contender
	requests     int
	failed       int           // all failed logical requests
	failedAfter  int           // failed among those started after the recovery
	firstSuccess time.Duration // from the recovery to the first success that ended after it
	lastFailure  time.Duration // from the recovery to the end of the last failure; <= 0 if none after it
	conns        int64
}

// runBrownout runs closed-loop workers against a server that answers 503
// for a while and then recovers, and reports how the client came back.
func runBrownout(w io.Writer, cfg config, cs []contender) {
	var runs []brownoutRun
	for _, c := range cs {
		runs = append(runs, brownout(cfg, c))
	}
	t := &table{
		title: fmt.Sprintf("brownout: every response is 503 for %v, then healthy for %v (%d closed-loop workers)",
			cfg.brownoutOutage, cfg.brownoutHealthy, brownoutWorkers),
		notes: []string{"\"after recovery\" counts logical requests started once the server was healthy again. " +
			"\"last failure\" is when the last failed logical request ended, from the recovery (0 if before it).", waitsNote},
		cols: []string{"contender", "logical requests", "failed", "failed after recovery", "first success", "last failure", "conns"},
	}
	for _, r := range runs {
		first := "none"
		if r.firstSuccess >= 0 {
			first = ms(r.firstSuccess)
		}
		t.add(r.c.name, fmt.Sprint(r.requests), fmt.Sprint(r.failed), fmt.Sprint(r.failedAfter),
			first, ms(max(r.lastFailure, 0)), count(r.conns))
	}
	t.write(w)
	var goals []goal
	for _, r := range runs {
		if r.c.kind != kindOurs {
			continue
		}
		goals = append(goals,
			goal{r.failedAfter == 0, fmt.Sprintf("%s no failed logical request after recovery: %d", r.c.name, r.failedAfter)},
			connGoal(r.c.name, r.conns, runs[0].conns, brownoutWorkers))
	}
	writeGoals(w, goals)
}

func brownout(cfg config, c contender) brownoutRun {
	var healthyAt atomic.Int64 // UnixNano; set before the first request
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().UnixNano() < healthyAt.Load() {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		okHandler(w, r)
	})
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}

	start := time.Now()
	recovery := start.Add(cfg.brownoutOutage)
	healthyAt.Store(recovery.UnixNano())
	outs := runFor(brownoutWorkers, recovery.Add(cfg.brownoutHealthy), func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})

	r := brownoutRun{c: c, requests: len(outs), firstSuccess: -1, lastFailure: -time.Hour, conns: srv.conns.Load()}
	for _, o := range outs {
		if o.ok() {
			if d := o.end.Sub(recovery); d >= 0 && (r.firstSuccess < 0 || d < r.firstSuccess) {
				r.firstSuccess = d
			}
			continue
		}
		r.failed++
		if !o.start.Before(recovery) {
			r.failedAfter++
		}
		r.lastFailure = max(r.lastFailure, o.end.Sub(recovery))
	}
	return r
}
