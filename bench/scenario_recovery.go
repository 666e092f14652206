package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// The recovery goals for our adaptive mode, in every run, and how the
// return to the pre-throttle rate is measured: the client's rate over a
// window of recoveryWindow, sliding from one response to the next, must
// reach recoveryShare of that rate.
const (
	recoveryWindow = 100 * time.Millisecond
	recoveryShare  = 0.90
	recoveryMax    = time.Second // from the first admitted response
	// recoveryPatience bounds the wait for the first admitted response
	// after the throttles, for a contender that would never get there.
	recoveryPatience = time.Minute
)

// recoveryRun is one contender's result in one recovery run.
type recoveryRun struct {
	elapsed time.Duration // of the logical request that met the first throttle
	status  int           // its outcome: the last response's status, 0 for an error
	met     int           // the throttles it met
	r0      float64       // the pre-throttle rate, per second
	// recovery is the seconds from the first admitted response after the
	// throttles until the rate is back (recoveryTime); +Inf if not within
	// the run.
	recovery float64
}

// recoveryContenders returns the recovery tables' contenders, with their
// libraries' own waits, in real time (see runRecovery): our adaptive mode,
// whose goals the tables check, our standard mode, which sets the bar for
// the throttled request, and the AWS SDK's adaptive mode.
func recoveryContenders() []contender {
	return []contender{
		{oursAdaptive().name, kindOurs, func(base http.RoundTripper) http.RoundTripper {
			return retrytransport.New(base, retrytransport.WithPolicy(policy.Adaptive()))
		}},
		{"retrytransport standard", kindOurs, func(base http.RoundTripper) http.RoundTripper {
			return retrytransport.New(base, retrytransport.WithPolicy(policy.Standard()))
		}},
		{awsAdaptive().name, kindPeer, func(base http.RoundTripper) http.RoundTripper {
			return &awsTransport{base: base, retryer: retry.NewAdaptiveMode()}
		}},
	}
}

// runRecovery prints the two recovery tables: one sequential worker whose
// server answers k requests in a row 429 (k of cfg.recoveryKs) and then
// admits everything, the throttles coming after cfg.recoveryBefore of
// admitted requests (a warm client) or first of all (a fresh client);
// every contender cfg.recoveryRuns times, interleaved round by round.
//
// Unlike the other tables, the waits are the libraries' own, in real time
// (standard mode's backoff under 1 s, then under 2 s; the SDK's under 2 s,
// then under 4 s): the adaptive limiter's waits follow the rates it
// measures, in real time, and the goal compares the throttled request's
// time with standard mode's.
func runRecovery(w io.Writer, cfg config, _ []contender) {
	cs := recoveryContenders()
	ks := cfg.recoveryKs
	warm := make([][][]recoveryRun, len(ks)) // [k][contender][round]
	fresh := make([][][]recoveryRun, len(ks))
	for ki := range ks {
		warm[ki] = make([][]recoveryRun, len(cs))
		fresh[ki] = make([][]recoveryRun, len(cs))
	}
	for range cfg.recoveryRuns {
		for ki, k := range ks {
			for i, c := range cs {
				warm[ki][i] = append(warm[ki][i], recoveryOnce(cfg, c, k, false, 0))
			}
		}
		// A fresh client has no rate of its own before the throttles: the
		// same worker's rate against a server that admits everything,
		// measured just before, stands for it. One measure for the whole
		// round would not do: from one fresh transport to the next, the
		// rate on this shared machine varies by a fifth, enough for a
		// client at full speed never to reach 90 % of a lucky one's.
		for ki, k := range ks {
			for i, c := range cs {
				fresh[ki][i] = append(fresh[ki][i], recoveryOnce(cfg, c, k, true, admittedRate(cfg, c)))
			}
		}
	}
	for _, v := range []struct {
		name string
		runs [][][]recoveryRun
		text string
	}{
		{"warm client", warm, fmt.Sprintf("%v against a server that admits everything, then", cfg.recoveryBefore)},
		{"fresh client", fresh, "its first requests:"},
	} {
		writeRecoveryTable(w, cfg, v.name, v.text, cs, v.runs)
		writeGoals(w, recoveryGoals(cs[0].name+", "+v.name, ks, v.runs))
	}
}

// sequential sends GETs to url through client one after another, each
// with a trace (withTrace), until next, given each outcome and the 429s
// its attempts met, returns false.
func sequential(client *http.Client, url string, next func(o outcome, throttles int) bool) {
	for {
		tr := &requestTrace{}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		o := send(withTrace(context.Background(), tr), client, req)
		if !next(o, int(tr.throttles.Load())) {
			return
		}
	}
}

// admittedRate is c's pre-throttle rate with a fresh transport against a
// server that admits everything (admittedPhase).
func admittedRate(cfg config, c contender) float64 {
	srv := newServer(okHandler)
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	return admittedPhase(cfg, &http.Client{Transport: c.wrap(attemptTap{base})}, srv.URL)
}

// admittedPhase sends through client to url, a server that admits
// everything, for cfg.recoveryBefore and returns the pre-throttle rate:
// the successes per second over the last half of that time.
func admittedPhase(cfg config, client *http.Client, url string) float64 {
	start := time.Now()
	var ends []time.Time
	sequential(client, url, func(o outcome, _ int) bool {
		if o.ok() {
			ends = append(ends, o.end)
		}
		return time.Since(start) < cfg.recoveryBefore
	})
	return rateIn(ends, start.Add(cfg.recoveryBefore/2), start.Add(cfg.recoveryBefore))
}

// recoveryOnce runs c once with a fresh transport against a fresh
// throttleFirstServer: a warm client first sends for cfg.recoveryBefore
// and takes its own pre-throttle rate from that (admittedPhase); a fresh
// client is given freshR0. Then the server answers the next k requests
// 429, and the worker goes on until cfg.recoveryAfter past the first
// admitted response.
func recoveryOnce(cfg config, c contender, k int, fresh bool, freshR0 float64) recoveryRun {
	srv := newThrottleFirstServer()
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(attemptTap{base})}

	r := recoveryRun{r0: freshR0}
	if !fresh {
		r.r0 = admittedPhase(cfg, client, srv.URL)
	}
	srv.throttleNext(k)
	armed := time.Now()
	metAny := false
	var admitted []time.Time // ends of the successes since the throttles
	sequential(client, srv.URL, func(o outcome, throttles int) bool {
		if !metAny && throttles > 0 {
			metAny = true
			r.elapsed, r.status, r.met = o.end.Sub(o.start), o.status, throttles
		}
		if o.ok() {
			admitted = append(admitted, o.end)
		}
		if len(admitted) == 0 {
			return time.Since(armed) < recoveryPatience
		}
		return o.end.Sub(admitted[0]) < cfg.recoveryAfter
	})
	r.recovery = math.Inf(1)
	if len(admitted) > 0 {
		r.recovery = recoveryTime(admitted, admitted[0].Add(cfg.recoveryAfter), recoveryWindow, recoveryShare*r.r0)
	}
	return r
}

// rateIn is the number of ends in [from, to) per second.
func rateIn(ends []time.Time, from, to time.Time) float64 {
	n := 0
	for _, e := range ends {
		if !e.Before(from) && e.Before(to) {
			n++
		}
	}
	return float64(n) / to.Sub(from).Seconds()
}

// recoveryTime finds when a client's rate came back: ends are its
// successes in order, the first the first admitted response; a window of
// length window starts at each of them in turn, and the first window that
// ends by until and holds at least rate per second of them brings the rate
// back. It returns the seconds from the first end to that window's start,
// so a client at full speed at once gets 0; +Inf if no window does.
func recoveryTime(ends []time.Time, until time.Time, window time.Duration, rate float64) float64 {
	need := rate * window.Seconds()
	for i, s := range ends {
		if s.Add(window).After(until) {
			break
		}
		// The ends in [s, s+window).
		n := sort.Search(len(ends)-i, func(j int) bool { return !ends[i+j].Before(s.Add(window)) })
		if float64(n) >= need {
			return s.Sub(ends[0]).Seconds()
		}
	}
	return math.Inf(1)
}

// writeRecoveryTable prints one recovery table, a row per k and
// contender: runs[ki][i] are contender i's runs with cfg.recoveryKs[ki]
// throttles.
func writeRecoveryTable(w io.Writer, cfg config, variant, before string, cs []contender, runs [][][]recoveryRun) {
	t := &table{
		title: fmt.Sprintf("recovery, %s: one sequential worker; %s k requests in a row answered 429 "+
			"(AWS throttling code, no Retry-After), then everything admitted for %v after the first admitted response; %s",
			variant, before, cfg.recoveryAfter, plural(cfg.recoveryRuns, "run")),
		notes: []string{cellsNote(cfg.recoveryRuns) + " Runs interleaved round by round. " +
			"throttled request: the time of the logical request that met the first 429, its outcome " +
			"(run by run: 200, 429 when it gave up with the 429, error) and the 429s it met. " +
			"R0: the worker's rate before the throttles, successes per second over the last half of " +
			fmt.Sprintf("its first %v (for a fresh client, the same worker's with another fresh transport against a server that admits everything, just before). ", cfg.recoveryBefore) +
			fmt.Sprintf("recovery: from the first admitted response until the rate over a %v window, sliding from response to response, ", recoveryWindow) +
			fmt.Sprintf("first reaches %s of R0 (0 if at once; never if not within the %v).", percent(recoveryShare), cfg.recoveryAfter),
			"Waits are the libraries' own, real time: standard mode's backoff under 1 s, then under 2 s; the SDK's under 2 s, then under 4 s."},
		cols: []string{"contender", "k", "throttled request", "its outcome", "429s met", "R0/s", "recovery"},
	}
	for ki, k := range cfg.recoveryKs {
		for i, c := range cs {
			rs := runs[ki][i]
			t.add(c.name, fmt.Sprint(k),
				spread(column(rs, func(r recoveryRun) float64 { return r.elapsed.Seconds() }), secsFromSeconds),
				outcomesCell(rs),
				spread(column(rs, func(r recoveryRun) float64 { return float64(r.met) }), whole),
				spread(column(rs, func(r recoveryRun) float64 { return r.r0 }), whole),
				spread(column(rs, func(r recoveryRun) float64 { return r.recovery }), settleCell))
		}
	}
	t.write(w)
}

func secsFromSeconds(s float64) string { return secs(time.Duration(s * float64(time.Second))) }

// outcomesCell counts the throttled requests' outcomes: "200", or
// "200 ×3, 429 ×2" when they differ.
func outcomesCell(rs []recoveryRun) string {
	counts := map[string]int{}
	var names []string
	for _, r := range rs {
		name := "error"
		if r.status != 0 {
			name = fmt.Sprint(r.status)
		}
		if counts[name] == 0 {
			names = append(names, name)
		}
		counts[name]++
	}
	if len(names) == 1 {
		return names[0]
	}
	slices.Sort(names)
	cells := make([]string, len(names))
	for i, n := range names {
		cells[i] = fmt.Sprintf("%s ×%d", n, counts[n])
	}
	return strings.Join(cells, ", ")
}

// recoveryGoals checks the recovery goals of one table for our adaptive
// mode (contender 0) against our standard mode (contender 1): with each
// k of ks, the throttled request ends no later than standard mode's
// median and the rate is back within recoveryMax, in every run. name says
// whose and which table.
func recoveryGoals(name string, ks []int, runs [][][]recoveryRun) []goal {
	labels := make([]string, len(ks))
	elapsed := make([]string, len(ks))
	inTime := make([]bool, len(ks))
	worstRecovery := make([]float64, len(ks))
	for ki, k := range ks {
		labels[ki] = fmt.Sprint(k)
		ours := slices.Max(column(runs[ki][0], func(r recoveryRun) float64 { return r.elapsed.Seconds() }))
		bar := medianOf(column(runs[ki][1], func(r recoveryRun) float64 { return r.elapsed.Seconds() }))
		elapsed[ki] = secsFromSeconds(ours) + " vs " + secsFromSeconds(bar)
		inTime[ki] = ours <= bar
		worstRecovery[ki] = slices.Max(column(runs[ki][0], func(r recoveryRun) float64 { return r.recovery }))
	}
	return []goal{
		cellsGoal(name+": the throttled request ends no later than standard mode's median in every run, with every k",
			"k", labels, elapsed, inTime),
		worstGoal(fmt.Sprintf("%s: back to %s of R0 within %v of the first admitted response in every run, with every k",
			name, percent(recoveryShare), recoveryMax), "k", labels, worstRecovery, settleCell,
			func(x float64) bool { return x <= recoveryMax.Seconds() }),
	}
}
