package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// The budget outage's open-loop load: budgetRate requests a second, each
// in a goroutine of its own, at most budgetInFlight at once, far above the
// rate (50/s) below which the budget's floor of 10 retries a second is
// more than a fifth of the requests. Amplification is measured in bins of
// budgetBin and in windows of budgetWindow sliding by a bin.
const (
	budgetRate     = 500
	budgetInFlight = 256
	budgetBin      = 100 * time.Millisecond
	budgetWindow   = time.Second
	budgetLimit    = 1.2 // the goal: most attempts per request in any window
	// budgetEdge is the measurement's resolution: a window may hold one
	// attempt more than budgetLimit allows, a retry the budget granted, by
	// its own count, just before the window began, that reached the server
	// just after (the backoff and the round trip in between). By the time
	// of each grant, every window is within budgetLimit.
	budgetEdge = 1
)

// A budgetPolicy is one row of the budget outage: our transport with a
// policy whose retry quotas differ.
type budgetPolicy struct {
	name   string
	budget bool // it has a quota.Budget: the goal is checked on it
	policy func() policy.Policy
}

// budgetPolicies returns the rows of the budget outage: the AWS bucket
// alone, the bucket and a budget, and a budget without the bucket, all
// with the waits scaled as everywhere else.
func budgetPolicies() []budgetPolicy {
	return []budgetPolicy{
		{"standard: AWS bucket", false, func() policy.Policy { return scaled(policy.Standard()) }},
		{"bucket + Budget", true, func() policy.Policy { return scaled(policy.Policy{Budget: &quota.Budget{}}) }},
		{"Budget, no bucket", true, func() policy.Policy {
			return scaled(policy.Policy{Quota: quota.None, Budget: &quota.Budget{}})
		}},
	}
}

// budgetRun is one policy's result in the budget outage.
type budgetRun struct {
	requests, attempts int64
	bins               []amplified // by budgetBin, from the start of the run
	elapsed            time.Duration
}

// amplified counts the logical requests started and the attempts the
// server received in one stretch of time.
type amplified struct{ requests, attempts int64 }

// ratio is attempts per request; 0 when no request started.
func (a amplified) ratio() float64 {
	if a.requests == 0 {
		return 0
	}
	return float64(a.attempts) / float64(a.requests)
}

// windows returns every run of n consecutive bins, each summed, in order.
func windows(bins []amplified, n int) []amplified {
	var ws []amplified
	for i := 0; i+n <= len(bins); i++ {
		var w amplified
		for _, b := range bins[i : i+n] {
			w.requests += b.requests
			w.attempts += b.attempts
		}
		ws = append(ws, w)
	}
	return ws
}

// everyNth returns as[0], as[n], as[2n], ...
func everyNth(as []amplified, n int) []amplified {
	var out []amplified
	for i := 0; i < len(as); i += n {
		out = append(out, as[i])
	}
	return out
}

// maxRatio returns the greatest attempts per request of as and its index.
func maxRatio(as []amplified) (float64, int) {
	best, at := 0.0, -1
	for i, a := range as {
		if r := a.ratio(); at < 0 || r > best {
			best, at = r, i
		}
	}
	return best, at
}

// runBudgetOutage sends requests at a fixed rate, whatever the retries, to
// a server that answers every one 503, and reports how many attempts the
// server received per request at every moment of the run.
func runBudgetOutage(w io.Writer, cfg config, _ []contender) {
	bps := budgetPolicies()
	runs := make([]budgetRun, len(bps))
	for i, bp := range bps {
		runs[i] = budgetOutage(cfg, bp)
	}
	nw := int(budgetWindow / budgetBin)
	t := &table{
		title: fmt.Sprintf("budget-outage: every response is 503; open loop, %d requests/s for %v, each in its own goroutine",
			budgetRate, cfg.budgetFor),
		notes: []string{"Amplification: attempts the server received per logical request started. " +
			fmt.Sprintf("The run is cut into %v bins; a bin's attempts are those that reached the server in it (those after the run's end go in the last bin), ", budgetBin) +
			fmt.Sprintf("its requests those started in it. A window is %d consecutive bins, sliding by one bin. ", nw) +
			"The arrival rate does not depend on the retries: requests start on schedule, each in a goroutine of its own. " +
			"The Budget is quota.Budget{} (its defaults: 20 % of the requests of a 10 s window, a floor of 10 retries/s, counted in 1 s slices). " +
			"It counts a retry when it grants it, before the backoff (here under 2 ms) and the send, and the server counts the attempt when it arrives, " +
			"so a retry granted at the edge of a window can land in the next. " +
			"Peers are in the outage table; none has a budget.", waitsNote},
		cols: []string{"policy", "requests", "attempts/request", "first bin", "max bin", "max 1 s window", "retries", "time"},
	}
	var goals []goal
	var info []string
	for i, bp := range bps {
		r := runs[i]
		ws := windows(r.bins, nw)
		binMax, binAt := maxRatio(r.bins)
		winMax, winAt := maxRatio(ws)
		t.add(bp.name, fmt.Sprint(r.requests), ratio(float64(r.attempts)/float64(r.requests)),
			ratio(r.bins[0].ratio()), ratio(binMax), ratio(winMax), count(r.attempts-r.requests), secs(r.elapsed))
		at := func(k int) string { return secs(time.Duration(k) * budgetBin) }
		if bp.budget {
			worst := ws[winAt]
			goals = append(goals, goal{float64(worst.attempts) <= budgetLimit*float64(worst.requests)+budgetEdge,
				fmt.Sprintf("%s: amplification at most %.1f in every %v window of the run, to within %d attempt at its edge: worst %.3f (%d attempts / %d requests, window from %s)",
					bp.name, budgetLimit, budgetWindow, budgetEdge, winMax, worst.attempts, worst.requests, at(winAt))})
		}
		aligned, _ := maxRatio(everyNth(ws, nw))
		info = append(info, fmt.Sprintf("- for information, %s: worst %v bin %.3f (%d attempts / %d requests, at %s); "+
			"worst window aligned to the Budget's 1 s slices (from 0 s, 1 s, ...) %.3f; bins %s",
			bp.name, budgetBin, binMax, r.bins[binAt].attempts, r.bins[binAt].requests, at(binAt), aligned, binRatios(r.bins)))
	}
	t.write(w)
	writeGoals(w, goals)
	for _, line := range info {
		fmt.Fprintln(w, line)
	}
}

// binRatios lists the bins' amplifications, the first ones singly and the
// rest as a range, to keep the line short.
func binRatios(bins []amplified) string {
	const shown = 12
	s := ""
	for i, b := range bins[:min(shown, len(bins))] {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", b.ratio())
	}
	if len(bins) > shown {
		lo, hi := bins[shown].ratio(), bins[shown].ratio()
		for _, b := range bins[shown:] {
			lo, hi = min(lo, b.ratio()), max(hi, b.ratio())
		}
		s += fmt.Sprintf(", then %.2f–%.2f", lo, hi)
	}
	return s
}

// budgetOutage runs one policy through the outage once.
func budgetOutage(cfg config, bp budgetPolicy) budgetRun {
	nbins := binCount(cfg.budgetFor, budgetBin)
	attempts := make([]atomic.Int64, nbins)
	var start time.Time // set before the first request
	binOf := func(t time.Time) int { return min(max(int(t.Sub(start)/budgetBin), 0), nbins-1) }
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		attempts[binOf(time.Now())].Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: retrytransport.New(base, retrytransport.WithPolicy(bp.policy()))}

	start = time.Now()
	outs := runOpenLoop(start, budgetRate, cfg.budgetFor, budgetInFlight, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return send(ctx, client, req)
	})
	r := budgetRun{elapsed: time.Since(start), requests: int64(len(outs)), attempts: srv.hits.Load(), bins: make([]amplified, nbins)}
	for _, o := range outs {
		r.bins[binOf(o.start)].requests++
	}
	for i := range attempts {
		r.bins[i].attempts = attempts[i].Load()
	}
	return r
}

// runOpenLoop starts logical request i at start + i/rate, each in a
// goroutine of its own, until d has passed, and returns their outcomes by
// number once all have ended. A request whose time has come while
// inFlight others are still running waits for one of them to end; one
// that falls behind its time starts at once.
func runOpenLoop(start time.Time, rate float64, d time.Duration, inFlight int, do func(ctx context.Context, i int) outcome) []outcome {
	n := int(rate * d.Seconds())
	out := make([]outcome, n)
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = do(context.Background(), i)
		}()
	}
	wg.Wait()
	return out
}
