package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

const outageWorkers = 8

// outageRun is one contender's result in the outage scenario.
type outageRun struct {
	c               contender
	perReq, perTail float64 // server hits per logical request: all, last outageTail
	failed          int
	conns           int64
	elapsed         time.Duration
}

// runOutage sends a fixed number of GETs to a server that answers every
// request 503, and reports how many attempts each logical request cost the
// server: a retry quota should stop the amplification once it is spent.
func runOutage(w io.Writer, cfg config, cs []contender) {
	var runs []outageRun
	for _, c := range cs {
		runs = append(runs, outage(cfg, c))
	}
	t := &table{
		title: fmt.Sprintf("outage: every response is 503 (%d workers, %d logical GETs)", outageWorkers, cfg.outageRequests),
		notes: []string{"\"hits/request\" is server hits per logical request: 1.000 means no retries.", waitsNote},
		cols:  []string{"contender", "hits/request", fmt.Sprintf("hits/request, last %d", cfg.outageTail), "failed", "conns", "time"},
	}
	for _, r := range runs {
		t.add(r.c.name, ratio(r.perReq), ratio(r.perTail), fmt.Sprint(r.failed), count(r.conns), secs(r.elapsed))
	}
	t.write(w)
	var goals []goal
	for _, r := range runs {
		if r.c.kind != kindOurs {
			continue
		}
		goals = append(goals,
			goal{r.perTail <= 1.05, fmt.Sprintf("%s amplification over the last %d requests at most 1.05: %.3f",
				r.c.name, cfg.outageTail, r.perTail)},
			connGoal(r.c.name, r.conns, runs[0].conns, outageWorkers))
	}
	writeGoals(w, goals)
}

func outage(cfg config, c contender) outageRun {
	n := cfg.outageRequests
	hits := make([]atomic.Int32, n) // by logical request number
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		if i, err := strconv.Atoi(r.Header.Get("X-Request-Id")); err == nil && i >= 0 && i < n {
			hits[i].Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}

	start := time.Now()
	outs := runCount(outageWorkers, n, func(ctx context.Context, i int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Request-Id", strconv.Itoa(i))
		return send(ctx, client, req)
	})
	r := outageRun{c: c, failed: failures(outs), conns: srv.conns.Load(), elapsed: time.Since(start)}
	var all, tail int64
	for i := range hits {
		h := int64(hits[i].Load())
		all += h
		if i >= n-cfg.outageTail {
			tail += h
		}
	}
	r.perReq = float64(all) / float64(n)
	r.perTail = float64(tail) / float64(cfg.outageTail)
	return r
}
