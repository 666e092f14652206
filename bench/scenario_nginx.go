package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// nginxBin is the width of the bins in which a run's goodput and 429s are
// printed for runs that miss a goal (or every run, with -nginx-bins).
const nginxBin = 500 * time.Millisecond

// The nginx scenario's goals for our adaptive mode, each in every run.
const (
	nginxMinShare    = 0.90 // of the rate limit_req admits
	nginxMax429Share = 0.05 // of the attempts
)

// nginxRun is one contender's result in one run against nginx.
type nginxRun struct {
	rateShare float64 // goodput over the rate limit_req admits over the run
	share429  float64 // attempts answered 429 over all attempts, client side
	failed    int     // logical requests that ended within the run and failed
	successes []int64 // successful logical requests that ended in each nginxBin
	throttles []int64 // attempts answered 429 in each nginxBin
}

// nginxAdmitted is the rate limit_req admits over a run of length d from
// idle, in requests per second: the rate plus the burst spread over the
// run (strictly one request more, the zone entry's first).
func nginxAdmitted(d time.Duration) float64 { return nginxRate + nginxBurst/d.Seconds() }

// runNginx is the single-client Retry-After table against a real nginx:
// our adaptive mode and the SDK's, cfg.nginxRuns runs each, interleaved
// contender by contender. Without nginx it prints one line saying so and
// returns nil: unlike redis-server for the fleet-redis tables, nginx is
// not needed for the rest of the bench to mean anything.
func runNginx(w io.Writer, cfg config, _ []contender) error {
	path, err := findNginx()
	if err != nil {
		fmt.Fprintf(w, "\nnginx limit_req: not run, %v.\n", err)
		return nil
	}
	pair := []contender{oursAdaptive(), awsAdaptive()}
	runs, err := interleaveErr(cfg.nginxRuns, pair, func(_ int, c contender) (nginxRun, error) {
		return nginxOnce(path, cfg.throttleFor, c)
	})
	if err != nil {
		return err
	}
	writeNginxTable(w, cfg, nginxVersion(path), pair, runs)
	return nil
}

// nginxOnce runs c's 16 closed-loop workers against a fresh nginx for d.
// A fresh nginx per run, rather than one nginx and a pause between runs,
// makes sure every run starts with limit_req's zone empty (its burst
// available) whatever the previous contender did, and that nothing of the
// previous run reaches this run's server; it costs a few milliseconds
// before the run starts.
func nginxOnce(path string, d time.Duration, c contender) (nginxRun, error) {
	srv, err := startNginx(path)
	if err != nil {
		return nginxRun{}, err
	}
	base := newBase()
	start := time.Now()
	end := start.Add(d)
	counter := &attemptCounter{base: base, start: start, end: end, throttles: make([]atomic.Int64, binCount(d, nginxBin))}
	client := &http.Client{Transport: c.wrap(counter)}
	outs := runFor(throttleWorkers, end, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.url+"/", nil)
		return send(ctx, client, req)
	})
	base.CloseIdleConnections()
	if err := srv.Close(); err != nil {
		return nginxRun{}, err
	}

	r := nginxRun{failed: failures(outs), successes: make([]int64, binCount(d, nginxBin))}
	for _, o := range outs {
		if o.ok() { // one that ended at the very end goes in the last bin
			r.successes[min(int(o.end.Sub(start)/nginxBin), len(r.successes)-1)]++
		}
	}
	r.rateShare = float64(len(outs)-r.failed) / d.Seconds() / nginxAdmitted(d)
	var throttles int64
	for i := range counter.throttles {
		n := counter.throttles[i].Load()
		r.throttles = append(r.throttles, n)
		throttles += n
	}
	if a := counter.attempts.Load(); a > 0 {
		r.share429 = float64(throttles) / float64(a)
	}
	return r, nil
}

// attemptCounter is a RoundTripper under a contender that counts the
// attempts which get a response from nginx within a run, and the 429s
// among them by nginxBin: nginx's access log is off, so the client side
// counts every attempt that reached it.
type attemptCounter struct {
	base       http.RoundTripper
	start, end time.Time
	attempts   atomic.Int64
	throttles  []atomic.Int64 // per nginxBin since start; covers [start, end)
}

// RoundTrip sends req through the base transport and counts its response.
func (c *attemptCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if now := time.Now(); !now.Before(c.start) && now.Before(c.end) {
		c.attempts.Add(1)
		if resp.StatusCode == http.StatusTooManyRequests {
			c.throttles[now.Sub(c.start)/nginxBin].Add(1)
		}
	}
	return resp, nil
}

// writeNginxTable prints the table, our adaptive mode's goals, and the
// bins of each of its runs that missed one (of every run of both
// contenders with cfg.nginxBins).
func writeNginxTable(w io.Writer, cfg config, version string, pair []contender, runs [][]nginxRun) {
	d := cfg.throttleFor
	t := &table{
		title: fmt.Sprintf("nginx limit_req: one transport, %d closed-loop workers against %s "+
			"(limit_req %d r/s, burst %d, nodelay; 429 with Retry-After: 1 beyond), %v each, %s",
			throttleWorkers, version, nginxRate, nginxBurst, d, plural(cfg.nginxRuns, "run")),
		notes: []string{"The single-client Retry-After table against a real nginx instead of the bench's own server; " +
			"runs interleaved contender by contender, each against an nginx started for it. " +
			fmt.Sprintf("%% of the rate: successful logical requests that ended within the run, per second, over the %.1f/s "+
				"limit_req admits from idle (%d/s plus the burst of %d over the run). "+
				"429 share: of the attempts that got a response within the run, counted under the contender. ",
				nginxAdmitted(d), nginxRate, nginxBurst) +
			"The 429s carry an AWS throttling code (X-Amzn-ErrorType: ThrottlingException), without which the SDK's retryers would not retry them.",
			waitsNote},
		cols: []string{"contender", "% of the rate, every run", "min", "median", "max", "429 share", "failed"},
	}
	var goals []goal
	for i, c := range pair {
		shares := column(runs[i], func(r nginxRun) float64 { return r.rateShare })
		s429 := column(runs[i], func(r nginxRun) float64 { return r.share429 })
		lo, med, hi := minMedMax(shares)
		var every []string
		for _, s := range shares {
			every = append(every, percent(s))
		}
		t.add(c.name, strings.Join(every, ", "), percent(lo), percent(med), percent(hi),
			spread(s429, percent), failedCell(column(runs[i], func(r nginxRun) float64 { return float64(r.failed) })))
		if c.kind == kindOurs {
			goals = append(goals,
				goal{lo >= nginxMinShare, fmt.Sprintf("%s at least %s of the rate in every run: worst %s%s",
					c.name, percent(nginxMinShare), percent(lo), everyRun(shares, percent))},
				goal{slices.Max(s429) <= nginxMax429Share, fmt.Sprintf("%s at most %s of attempts answered 429 in every run: worst %s%s",
					c.name, percent(nginxMax429Share), percent(slices.Max(s429)), everyRun(s429, percent))})
		}
	}
	t.write(w)
	writeGoals(w, goals)
	for i, c := range pair {
		for k, r := range runs[i] {
			missed := c.kind == kindOurs && (r.rateShare < nginxMinShare || r.share429 > nginxMax429Share)
			if missed || cfg.nginxBins {
				fmt.Fprintln(w, nginxBinsLine(c.name, k+1, r))
			}
		}
	}
}

// nginxBinsLine describes run number n of a contender bin by bin: its
// goodput per second and the 429s nginx sent it in each nginxBin.
func nginxBinsLine(name string, n int, r nginxRun) string {
	goodput := make([]string, len(r.successes))
	for i, s := range r.successes {
		goodput[i] = fmt.Sprintf("%.0f", float64(s)/nginxBin.Seconds())
	}
	throttles := make([]string, len(r.throttles))
	for i, s := range r.throttles {
		throttles[i] = fmt.Sprint(s)
	}
	return fmt.Sprintf("- bins of %s, run %d (%s of the rate, %s 429s), per %d ms: goodput/s %s; 429s %s",
		name, n, percent(r.rateShare), percent(r.share429), nginxBin.Milliseconds(), strings.Join(goodput, " "), strings.Join(throttles, " "))
}
