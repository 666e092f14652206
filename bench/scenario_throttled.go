package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The throttled server's capacity: a token bucket of throttleRate requests
// per second with a burst of throttleBurst; a request finding it empty gets
// a 429.
const (
	throttleRate    = 200
	throttleBurst   = 20
	throttleWorkers = 16
)

// throttledRun is one contender's result in a throttled run.
type throttledRun struct {
	c          contender
	goodput    float64 // successful logical requests per second
	share429   float64 // 429s over all server hits
	hitsPerSec float64
	requests   int // logical requests that ended within the run
	failed     int
	p50, p99   time.Duration
	conns      int64
}

// runThrottled runs closed-loop workers against a server of limited
// capacity, with or without "Retry-After: 1" on its 429s. The 429s also
// carry an AWS-style throttling code (X-Amzn-ErrorType and a JSON
// __type), as an AWS service would send it: without one the SDK's retryers
// neither retry a 429 nor see it as a throttle. The others retry a 429 by
// its status alone, so the code changes nothing for them.
func runThrottled(w io.Writer, cfg config, cs []contender, retryAfter bool) {
	var runs []throttledRun
	for _, c := range cs {
		runs = append(runs, throttled(cfg, c, retryAfter))
	}
	title := "throttled"
	if retryAfter {
		title += ", with Retry-After: 1 on every 429"
	}
	t := &table{
		title: fmt.Sprintf("%s: server capacity %d req/s (token bucket, burst %d), 429 beyond; %d closed-loop workers for %v",
			title, throttleRate, throttleBurst, throttleWorkers, cfg.throttleFor),
		notes: []string{fmt.Sprintf("goodput: successful logical requests per second; the server admits at most %.1f/s over the run "+
			"(a stalled process loses the tokens that overflow the burst). 429 share: of all server hits. ",
			throttleRate+throttleBurst/cfg.throttleFor.Seconds()) +
			"Latency percentiles are over all logical requests that ended within the run, failed ones included. " +
			"The 429s carry an AWS throttling code (X-Amzn-ErrorType: ThrottlingException), without which the SDK's retryers would not retry them.",
			waitsNote},
		cols: []string{"contender", "goodput/s", "429 share", "server hits/s", "logical requests", "failed", "p50", "p99", "conns"},
	}
	for _, r := range runs {
		t.add(r.c.name, fmt.Sprintf("%.1f", r.goodput), percent(r.share429), fmt.Sprintf("%.0f", r.hitsPerSec),
			fmt.Sprint(r.requests), fmt.Sprint(r.failed), ms(r.p50), ms(r.p99), count(r.conns))
	}
	t.write(w)
	goals, info := throttledGoals(runs)
	writeGoals(w, goals)
	for _, line := range info {
		fmt.Fprintln(w, line)
	}
}

// throttledGoals checks, for each of our contenders, the goal
// "goodput at least that of the best peer with the lowest 429 share": the
// peer that throttles least sets both the goodput to reach and the 429
// share not to exceed. The highest goodput of any peer is printed too, as
// information: it belongs to a peer that hammers the server (nearly every
// attempt a 429) and fails most of its logical requests. Then the
// connection budget.
func throttledGoals(runs []throttledRun) (goals []goal, info []string) {
	var best, lowest *throttledRun
	for i := range runs {
		r := &runs[i]
		if r.c.kind != kindPeer {
			continue
		}
		if best == nil || r.goodput > best.goodput {
			best = r
		}
		if lowest == nil || r.share429 < lowest.share429 {
			lowest = r
		}
	}
	for _, r := range runs {
		if r.c.kind != kindOurs {
			continue
		}
		goals = append(goals,
			goal{r.goodput >= lowest.goodput, fmt.Sprintf("%s goodput at least that of the peer with the lowest 429 share: %.1f/s vs %.1f/s (%s), ratio %.3f",
				r.c.name, r.goodput, lowest.goodput, lowest.c.name, r.goodput/lowest.goodput)},
			goal{r.share429 <= lowest.share429, fmt.Sprintf("%s 429 share no higher than the lowest peer's: %s vs %s (%s)",
				r.c.name, percent(r.share429), percent(lowest.share429), lowest.c.name)},
			connGoal(r.c.name, r.conns, runs[0].conns, throttleWorkers))
		info = append(info, fmt.Sprintf("- for information, %s goodput vs the highest of any peer: %.1f/s vs %.1f/s (%s, %s 429s, %d of %d logical requests failed), ratio %.3f",
			r.c.name, r.goodput, best.goodput, best.c.name, percent(best.share429), best.failed, best.requests, r.goodput/best.goodput))
	}
	return goals, info
}

// throttledServer admits throttleRate requests per second (burst
// throttleBurst) and answers 429 to the rest, counting hits and throttles
// until the end of the run.
type throttledServer struct {
	*server
	deadline        atomic.Int64 // UnixNano; hits after it are not counted
	hits, throttles atomic.Int64
}

func newThrottledServer(retryAfter bool) *throttledServer {
	limiter := rate.NewLimiter(throttleRate, throttleBurst)
	s := &throttledServer{}
	s.server = newServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		counted := time.Now().UnixNano() < s.deadline.Load()
		if counted {
			s.hits.Add(1)
		}
		if limiter.Allow() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		if counted {
			s.throttles.Add(1)
		}
		writeThrottled(w, retryAfter)
	})
	return s
}

// countUntil makes the server count hits and throttles until end.
func (s *throttledServer) countUntil(end time.Time) { s.deadline.Store(end.UnixNano()) }

// share429 is the share of counted hits answered 429.
func (s *throttledServer) share429() float64 {
	if h := s.hits.Load(); h > 0 {
		return float64(s.throttles.Load()) / float64(h)
	}
	return 0
}

func throttled(cfg config, c contender, retryAfter bool) throttledRun {
	srv := newThrottledServer(retryAfter)
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}

	end := time.Now().Add(cfg.throttleFor)
	srv.countUntil(end)
	outs := runFor(throttleWorkers, end, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r := throttledRun{c: c, requests: len(outs), failed: failures(outs), conns: srv.conns.Load()}
	seconds := cfg.throttleFor.Seconds()
	r.goodput = float64(len(outs)-r.failed) / seconds
	r.hitsPerSec = float64(srv.hits.Load()) / seconds
	r.share429 = srv.share429()
	r.p50, r.p99 = latencies(outs)
	return r
}

// writeThrottled answers 429 as an AWS service throttles: with
// X-Amzn-ErrorType and a JSON __type of ThrottlingException, and with
// Retry-After: 1 if retryAfter is set.
func writeThrottled(w http.ResponseWriter, retryAfter bool) {
	h := w.Header()
	if retryAfter {
		h.Set("Retry-After", "1")
	}
	h.Set("X-Amzn-ErrorType", "ThrottlingException")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
}
