package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
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

// throttledRun is one contender's result in one throttled run.
type throttledRun struct {
	goodput    float64 // successful logical requests per second
	share429   float64 // 429s over all server hits
	hitsPerSec float64
	requests   int // logical requests that ended within the run
	failed     int
	p50, p99   time.Duration
	conns      int64
}

// runThrottled runs closed-loop workers against a server of limited
// capacity, with or without "Retry-After: 1" on its 429s, every contender
// cfg.throttledRuns times: one run of one transport varies from run to run
// (our adaptive mode's goodput with Retry-After: 1 is bimodal), so the
// table shows the spread, never one lucky or unlucky run. The 429s also
// carry an AWS-style throttling code (X-Amzn-ErrorType and a JSON
// __type), as an AWS service would send it: without one the SDK's retryers
// neither retry a 429 nor see it as a throttle. The others retry a 429 by
// its status alone, so the code changes nothing for them.
func runThrottled(w io.Writer, cfg config, cs []contender, retryAfter bool) {
	runs := throttledRounds(cfg, cs, cfg.throttledRuns, retryAfter)
	writeThrottledTable(w, cfg, cs, runs, retryAfter)
	goals, info := throttledGoals(cs, runs)
	writeGoals(w, goals)
	for _, line := range info {
		fmt.Fprintln(w, line)
	}
}

// throttledRounds runs every contender of cs rounds times against the
// throttled server and returns each one's runs in run order. The runs are
// interleaved round by round, so that drift of this noisy machine hits all
// alike.
func throttledRounds(cfg config, cs []contender, rounds int, retryAfter bool) [][]throttledRun {
	return interleave(rounds, cs, func(_ int, c contender) throttledRun { return throttled(cfg, c, retryAfter) })
}

// writeThrottledTable prints one throttled table, a row per contender of
// cs whose runs are runs[i].
func writeThrottledTable(w io.Writer, cfg config, cs []contender, runs [][]throttledRun, retryAfter bool) {
	title := "throttled"
	if retryAfter {
		title += ", with Retry-After: 1 on every 429"
	}
	t := &table{
		title: fmt.Sprintf("%s: server capacity %d req/s (token bucket, burst %d), 429 beyond; %d closed-loop workers for %v, %s",
			title, throttleRate, throttleBurst, throttleWorkers, cfg.throttleFor, plural(cfg.throttledRuns, "run")),
		notes: []string{cellsNote(cfg.throttledRuns) + " Runs interleaved contender by contender. " +
			fmt.Sprintf("goodput: successful logical requests per second; the server admits at most %.1f/s over a run "+
				"(a stalled process loses the tokens that overflow the burst). 429 share: of all server hits. ",
				throttleRate+throttleBurst/cfg.throttleFor.Seconds()) +
			"Latency percentiles are over all logical requests that ended within the run, failed ones included. " +
			"The 429s carry an AWS throttling code (X-Amzn-ErrorType: ThrottlingException), without which the SDK's retryers would not retry them.",
			waitsNote},
		cols: []string{"contender", "goodput/s", "429 share", "server hits/s", "logical requests", "failed", "p50", "p99", "conns"},
	}
	for i, c := range cs {
		t.add(append([]string{c.name}, throttledCells(runs[i])...)...)
	}
	t.write(w)
}

// throttledCells formats one contender's runs as the throttled table's
// cells after its name: min / median / max by spread, "failed" by
// failedCell.
func throttledCells(rs []throttledRun) []string {
	return []string{
		spread(column(rs, runGoodput), perSecond),
		spread(column(rs, runShare429), percent),
		spread(column(rs, func(r throttledRun) float64 { return r.hitsPerSec }), whole),
		spread(column(rs, func(r throttledRun) float64 { return float64(r.requests) }), whole),
		failedCell(column(rs, func(r throttledRun) float64 { return float64(r.failed) })),
		spread(column(rs, func(r throttledRun) float64 { return r.p50.Seconds() }), msFromSeconds),
		spread(column(rs, func(r throttledRun) float64 { return r.p99.Seconds() }), msFromSeconds),
		spread(column(rs, runConns), whole),
	}
}

// runGoodput is r's goodput, for column.
func runGoodput(r throttledRun) float64 { return r.goodput }

// runShare429 is r's 429 share, for column.
func runShare429(r throttledRun) float64 { return r.share429 }

// runConns is r's connections, for column.
func runConns(r throttledRun) float64 { return float64(r.conns) }

// throttledGoals checks, for each of our contenders of cs, the issue's
// goal "goodput at least that of the best peer with the lowest 429
// share": the peer that throttles least (lowest median 429 share) sets
// both the goodput to reach and the 429 share not to exceed. Its typical
// run, its median, is the bar, and ours must clear it in every run: our
// lowest goodput against its median goodput, our highest 429 share against
// its median 429 share. So one lucky run of ours cannot meet the goal,
// while one unlucky run of the peer's (the SDK's cold start varies) can
// neither lower the bar nor, its best run, raise it above what the peer
// usually does. Then the connection budget, on our most connections in a
// run against the bare transport's fewest. The highest median goodput of
// any peer is printed too, as information: it belongs to a peer that
// hammers the server (nearly every attempt a 429) and fails most of its
// logical requests.
func throttledGoals(cs []contender, runs [][]throttledRun) (goals []goal, info []string) {
	lowest := pickThrottled(cs, runs, kindPeer, runShare429, func(a, b float64) bool { return a < b })
	best := pickThrottled(cs, runs, kindPeer, runGoodput, func(a, b float64) bool { return a > b })
	bare := slices.IndexFunc(cs, func(c contender) bool { return c.kind == kindBare })
	if lowest < 0 || bare < 0 {
		return nil, nil // nothing to compare with
	}
	bareConns := int64(slices.Min(column(runs[bare], runConns)))
	for i, c := range cs {
		if c.kind != kindOurs {
			continue
		}
		goals = append(goals, peerGoals(c.name, runs[i], cs[lowest].name, runs[lowest])...)
		goals = append(goals, connGoal(c.name, int64(slices.Max(column(runs[i], runConns))), bareConns, throttleWorkers))
		info = append(info, bestPeerInfo(c.name, runs[i], cs[best].name, runs[best]))
	}
	return goals, info
}

// pickThrottled returns the index of the contender of kind k in cs whose
// median of f over its runs is better than every other's, the first of
// equals; -1 if cs has none of kind k.
func pickThrottled(cs []contender, runs [][]throttledRun, k kind, f func(throttledRun) float64, better func(a, b float64) bool) int {
	pick := -1
	for i, c := range cs {
		if c.kind == k && (pick < 0 || better(medianOf(column(runs[i], f)), medianOf(column(runs[pick], f)))) {
			pick = i
		}
	}
	return pick
}

// peerGoals checks our runs rs against the median of the peer's runs
// prs: our lowest goodput and our highest 429 share, each line listing
// our every run.
func peerGoals(name string, rs []throttledRun, peer string, prs []throttledRun) []goal {
	goodputs, shares := column(rs, runGoodput), column(rs, runShare429)
	lo, hi := slices.Min(goodputs), slices.Max(shares)
	peerGoodput, peerShare := medianOf(column(prs, runGoodput)), medianOf(column(prs, runShare429))
	return []goal{
		{lo >= peerGoodput, fmt.Sprintf("%s goodput in every run at least the median of the peer with the lowest 429 share: worst %.1f/s%s vs %.1f/s (%s), ratio %.3f",
			name, lo, everyRun(goodputs, perSecond), peerGoodput, peer, lo/peerGoodput)},
		{hi <= peerShare, fmt.Sprintf("%s 429 share in every run no higher than the lowest peer's median: worst %s%s vs %s (%s)",
			name, percent(hi), everyRun(shares, percent), percent(peerShare), peer)},
	}
}

// bestPeerInfo compares our median goodput with that of the peer with the
// highest median, whose 429 share (median) and failed logical requests
// (over all its runs) say how it got there.
func bestPeerInfo(name string, rs []throttledRun, peer string, prs []throttledRun) string {
	ours, theirs := medianOf(column(rs, runGoodput)), medianOf(column(prs, runGoodput))
	var failed, requests int
	for _, r := range prs {
		failed += r.failed
		requests += r.requests
	}
	return fmt.Sprintf("- for information, %s median goodput vs the highest median of any peer: %.1f/s vs %.1f/s (%s, %s 429s, %d of %d logical requests failed over %s), ratio %.3f",
		name, ours, theirs, peer, percent(medianOf(column(prs, runShare429))), failed, requests, plural(len(prs), "run"), ours/theirs)
}

// throttledServer admits throttleRate requests per second (burst
// throttleBurst) and answers 429 to the rest, counting hits and throttles
// until the end of the run.
type throttledServer struct {
	*server
	deadline        atomic.Int64 // UnixNano; hits after it are not counted
	hits, throttles atomic.Int64
}

// newThrottledServer starts a throttled server whose 429s carry
// Retry-After: 1 if retryAfter is set. It counts hits only before the
// instant given to countUntil, none until then.
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

// throttled runs contender c once against a fresh throttled server: the
// throttleWorkers closed-loop workers send GETs for cfg.throttleFor, each
// run with a fresh transport and library state.
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
	r := throttledRun{requests: len(outs), failed: failures(outs), conns: srv.conns.Load()}
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
