package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

const failoverWorkers = 8

// failoverMethods is the failover scenario's mix of requests, taken in
// turn: three reads for each PUT and each POST.
var failoverMethods = [...]string{http.MethodGet, http.MethodPut, http.MethodGet, http.MethodPost, http.MethodGet}

// failoverModes are the rows of the failover table, the scenario's goal
// first.
var failoverModes = [...]policy.LocationMode{policy.PrimaryThenSecondary, policy.SecondaryOnly, policy.SecondaryThenPrimary}

// endpointHits counts what one endpoint's server received: reads (GET and
// HEAD) and everything else.
type endpointHits struct{ reads, writes atomic.Int64 }

// handler counts r and answers it with status.
func (h *endpointHits) handler(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.reads.Add(1)
		} else {
			h.writes.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
	}
}

// failoverRun is one mode's result.
type failoverRun struct {
	mode                       policy.LocationMode
	reads, readsOK             int
	readAttempts, maxReadTries int // attempts of all reads, and of the read that took most
	writes, writesOK           int
	primary, secondary         [2]int64 // reads and writes each server received
	elapsed                    time.Duration
}

// runFailover sends a mix of reads and writes through a policy with a
// secondary endpoint while the primary answers every request 503, and
// reports where the attempts went: reads should succeed at the secondary
// on their second attempt at most, and writes never leave the primary.
func runFailover(w io.Writer, cfg config, _ []contender) {
	var runs []failoverRun
	for _, m := range failoverModes {
		runs = append(runs, failover(cfg, m))
	}
	t := &table{
		title: fmt.Sprintf("failover: the primary answers every request 503, the secondary 200 (%d workers, %d logical requests, GET:PUT:POST 3:1:1)",
			failoverWorkers, cfg.failoverRequests),
		notes: []string{fmt.Sprintf("Each row is retrytransport standard with Failover: the secondary's host as its endpoint, and the Mode named; "+
			"Methods is nil (GET and HEAD). PUTs and POSTs carry a body. attempts/read: from retrytransport.ResponseAttempts, "+
			"mean and most. Server counts are reads / writes received. %d reads are more than one 500-token bucket pays retries for (100). "+
			"No peer library fails over to another host, so there are no peer rows.", runs[0].reads), waitsNote},
		cols: []string{"mode", "reads", "reads 200", "attempts/read", "most", "writes", "writes 200", "primary", "secondary", "time"},
	}
	var goals []goal
	for _, r := range runs {
		t.add(r.mode.String(), fmt.Sprint(r.reads), fmt.Sprint(r.readsOK),
			twoPlaces(float64(r.readAttempts)/float64(r.reads)), fmt.Sprint(r.maxReadTries),
			fmt.Sprint(r.writes), fmt.Sprint(r.writesOK),
			fmt.Sprintf("%d / %d", r.primary[0], r.primary[1]), fmt.Sprintf("%d / %d", r.secondary[0], r.secondary[1]),
			secs(r.elapsed))
		goals = append(goals,
			goal{r.readsOK == r.reads && r.maxReadTries <= 2, fmt.Sprintf("%v: every read 200 with at most 2 attempts: %d of %d, most %s",
				r.mode, r.readsOK, r.reads, plural(r.maxReadTries, "attempt"))},
			goal{r.secondary[1] == 0, fmt.Sprintf("%v: no write sent to the secondary: %d", r.mode, r.secondary[1])})
	}
	t.write(w)
	writeGoals(w, goals)
}

// failover runs the mix once through a policy in mode m.
func failover(cfg config, m policy.LocationMode) failoverRun {
	var primary, secondary endpointHits
	psrv := newServer(primary.handler(http.StatusServiceUnavailable))
	defer psrv.Close()
	ssrv := newServer(secondary.handler(http.StatusOK))
	defer ssrv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	p := scaled(policy.Standard())
	p.Failover = &policy.Failover{Endpoints: []string{ssrv.Listener.Addr().String()}, Mode: m}
	client := &http.Client{Transport: retrytransport.New(base, retrytransport.WithPolicy(p))}

	n := cfg.failoverRequests
	tries := make([]int, n) // attempts of each logical request; 0 if it failed without a response
	start := time.Now()
	outs := runCount(failoverWorkers, n, func(ctx context.Context, i int) outcome {
		method := failoverMethods[i%len(failoverMethods)]
		var body io.Reader
		if method != http.MethodGet {
			body = strings.NewReader(`{"n":` + fmt.Sprint(i) + `}`)
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, psrv.URL, body)
		o := outcome{start: time.Now()}
		resp, err := client.Do(req)
		if err != nil {
			o.err = err
		} else {
			tries[i] = retrytransport.ResponseAttempts(resp).Count
			_, o.err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			o.status = resp.StatusCode
		}
		o.end = time.Now()
		return o
	})
	r := failoverRun{mode: m, elapsed: time.Since(start),
		primary:   [2]int64{primary.reads.Load(), primary.writes.Load()},
		secondary: [2]int64{secondary.reads.Load(), secondary.writes.Load()}}
	for i, o := range outs {
		if failoverMethods[i%len(failoverMethods)] != http.MethodGet {
			r.writes++
			if o.ok() {
				r.writesOK++
			}
			continue
		}
		r.reads++
		r.readAttempts += tries[i]
		r.maxReadTries = max(r.maxReadTries, tries[i])
		if o.ok() {
			r.readsOK++
		}
	}
	return r
}
