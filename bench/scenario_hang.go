package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// The hang tables' callers: closed-loop workers whose every request has
// hangTimeout to get its answer; the server answers in hangLatency when it
// does not hang. A caller whose request failed does hangPause of its own
// work before the next one, as the breaker package's simulation has it,
// so that one refused at once does not spin.
const (
	hangWorkers = 8
	hangTimeout = 500 * time.Millisecond
	hangLatency = 5 * time.Millisecond
	hangPause   = 5 * time.Millisecond
)

// The hang goals for ours with a breaker.Circuit, in every run.
const (
	hangMaxP99  = 10 * time.Millisecond // callers' p99 from hangSettled into the hang
	hangMaxHung = 10                    // requests that reach the hung server
	// hangSettled is how long into the hang, and after the recovery, the
	// breaker has to act before the goals count: it takes an attempt
	// timeout for the first failures to show.
	hangSettled = time.Second
)

// hangGoalsFor names the contender whose goals the hang table checks.
const hangGoalsFor = "retrytransport, Breaker: &breaker.Circuit{}"

// hangContender is a contender of the hang table: how a user of it bounds
// each request to hangTimeout, and whether it has a circuit breaker.
type hangContender struct {
	name string
	// newClient returns a client sending through base, and the
	// breaker.Circuit in it if it is ours with one.
	newClient func(base http.RoundTripper) (*http.Client, *breaker.Circuit)
}

// hangPolicy is our policy in the hang tables: standard mode with
// AttemptTimeout, which a user sets to bound each attempt and which the
// breaker counts as a Timeout (the caller's own deadline is a
// cancellation, which says nothing about the server), and one attempt, so
// that a request takes hangTimeout at most, as the did.
func hangPolicy() policy.Policy {
	p := policy.Standard()
	p.MaxAttempts = 1
	p.AttemptTimeout = hangTimeout
	return p
}

// hangContenders returns the hang table's contenders: bare with an
// http.Client.Timeout, ours without and with a breaker.Circuit (its
// defaults), and failsafe-go's circuit breaker with its defaults around
// its timeout policy, in failsafehttp's RoundTripper.
func hangContenders() []hangContender {
	ours := func(name string, circuit bool) hangContender {
		return hangContender{name, func(base http.RoundTripper) (*http.Client, *breaker.Circuit) {
			p := hangPolicy()
			var c *breaker.Circuit
			if circuit {
				c = &breaker.Circuit{}
				p.Breaker = c
			}
			return &http.Client{Transport: retrytransport.New(base, retrytransport.WithPolicy(p))}, c
		}}
	}
	return []hangContender{
		{contenders()[0].name, func(base http.RoundTripper) (*http.Client, *breaker.Circuit) {
			return &http.Client{Transport: base, Timeout: hangTimeout}, nil
		}},
		ours("retrytransport standard", false),
		ours(hangGoalsFor, true),
		{"failsafe-go circuitbreaker", func(base http.RoundTripper) (*http.Client, *breaker.Circuit) {
			rt := failsafehttp.NewRoundTripper(base, circuitbreaker.NewWithDefaults[*http.Response](), timeout.New[*http.Response](hangTimeout))
			return &http.Client{Transport: rt}, nil
		}},
	}
}

// hangPhases is when a run's server hangs and recovers, and when the run
// ends.
type hangPhases struct {
	start, hangAt, recoverAt, end time.Time
}

// newHangPhases returns the phases of a run starting now.
func newHangPhases(cfg config) hangPhases {
	p := hangPhases{start: time.Now()}
	p.hangAt = p.start.Add(cfg.hangBefore)
	p.recoverAt = p.hangAt.Add(cfg.hangFor)
	p.end = p.recoverAt.Add(cfg.hangAfter)
	return p
}

// hangRun is one contender's result in one hang run.
type hangRun struct {
	requests     int
	p99          time.Duration // of the requests started from hangSettled into the hang until the recovery
	hung         int           // requests that reached the server while it hung
	firstSuccess time.Duration // from the recovery to the end of the first success after it; -1 if none
	failedLate   int           // failed among the requests started from hangSettled after the recovery
	failed       int
	// probeInterval is our circuit's open time at the recovery, before
	// jitter (State.OpenFor), or breaker.DefaultOpenFor if it was closed;
	// zero without our circuit.
	probeInterval time.Duration
}

// runHang prints the hang table and the brownout table with our breaker.
func runHang(w io.Writer, cfg config, _ []contender) {
	defer writeLoadNote(w, loadAverage())
	cs := hangContenders()
	runs := interleave(cfg.hangRuns, cs, func(_ int, c hangContender) hangRun { return hangOnce(cfg, c) })
	writeHangTable(w, cfg, cs, runs)
	writeGoals(w, hangGoals(hangGoalsFor, runs[slices.IndexFunc(cs, func(c hangContender) bool { return c.name == hangGoalsFor })]))
	runBrownoutBreaker(w, cfg)
}

// scopeOf returns our transport's default scope of requests to rawURL:
// its host and port, lower-cased.
func scopeOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic("bench: the loopback server's URL does not parse: " + err.Error()) // a harness bug
	}
	return strings.ToLower(u.Host)
}

// hangOnce runs c once with a fresh client against a fresh hanging
// server.
func hangOnce(cfg config, c hangContender) hangRun {
	srv := newHangServer(hangLatency)
	defer srv.close()
	base := newBase()
	defer base.CloseIdleConnections()
	client, circuit := c.newClient(base)

	ph := newHangPhases(cfg)
	srv.hang(ph.hangAt, ph.recoverAt)
	var openFor atomic.Int64
	if circuit != nil {
		scope := scopeOf(srv.URL)
		at := time.AfterFunc(time.Until(ph.recoverAt), func() {
			d := breaker.DefaultOpenFor
			if st := circuit.State(scope); st.Phase != breaker.Closed {
				d = st.OpenFor
			}
			openFor.Store(int64(d))
		})
		defer at.Stop()
	}
	outs := runFor(hangWorkers, ph.end, func(ctx context.Context, _ int) outcome {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		o := send(ctx, client, req)
		if !o.ok() {
			pause(ctx, hangPause)
		}
		return o
	})
	r := hangOutcomes(outs, ph)
	r.hung = len(srv.hungRequests())
	r.probeInterval = time.Duration(openFor.Load())
	return r
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// hangOutcomes measures the callers' side of a hang run: all but hung and
// probeInterval.
func hangOutcomes(outs []outcome, ph hangPhases) hangRun {
	r := hangRun{requests: len(outs), firstSuccess: -1}
	settled, late := ph.hangAt.Add(hangSettled), ph.recoverAt.Add(hangSettled)
	var during []time.Duration
	for _, o := range outs {
		if !o.start.Before(settled) && o.start.Before(ph.recoverAt) {
			during = append(during, o.end.Sub(o.start))
		}
		if o.ok() {
			if d := o.end.Sub(ph.recoverAt); d >= 0 && (r.firstSuccess < 0 || d < r.firstSuccess) {
				r.firstSuccess = d
			}
			continue
		}
		r.failed++
		if !o.start.Before(late) {
			r.failedLate++
		}
	}
	slices.Sort(during)
	r.p99 = quantile(during, 0.99)
	return r
}

// firstSuccessCell formats a first success in seconds, or "none" for a
// negative one.
func firstSuccessCell(s float64) string {
	if s < 0 {
		return "none"
	}
	return msFromSeconds(s)
}

// writeHangTable prints the hang table, runs[i] the runs of cs[i].
func writeHangTable(w io.Writer, cfg config, cs []hangContender, runs [][]hangRun) {
	t := &table{
		title: fmt.Sprintf("hang: a server healthy (%v answers) for %v, then accepting and reading every request without ever answering it for %v, "+
			"then healthy for %v; %d closed-loop workers, %v a request; %s",
			hangLatency, cfg.hangBefore, cfg.hangFor, cfg.hangAfter, hangWorkers, hangTimeout, plural(cfg.hangRuns, "run")),
		notes: []string{cellsNote(cfg.hangRuns) + " Runs interleaved round by round. " +
			fmt.Sprintf("A worker whose request failed works %v before its next one. ", hangPause) +
			fmt.Sprintf("p99 in the hang: of the requests started from %v into the hang until the recovery. ", hangSettled) +
			"hung: requests the server received while it hung. first success: from the recovery to the end of the first success after it. " +
			fmt.Sprintf("failed late: failed requests started from %v after the recovery. ", hangSettled) +
			"probe interval: our circuit's open time at the recovery, before jitter (its State's OpenFor).",
			"Each bounds a request as its users do: bare with http.Client.Timeout; ours with Policy.AttemptTimeout and MaxAttempts 1 " +
				"(the caller's own deadline is a cancellation, which a breaker does not count); failsafe-go with its timeout policy inside " +
				"circuitbreaker.NewWithDefaults() (opens on 1 failure for 1 minute, closes on 1 success), no option set."},
		cols: []string{"contender", "requests", "p99 in the hang", "hung", "first success", "failed late", "failed", "probe interval"},
	}
	for i, c := range cs {
		rs := runs[i]
		interval := "n/a"
		if rs[0].probeInterval > 0 {
			interval = spread(column(rs, func(r hangRun) float64 { return r.probeInterval.Seconds() }), msFromSeconds)
		}
		t.add(c.name,
			spread(column(rs, func(r hangRun) float64 { return float64(r.requests) }), whole),
			spread(column(rs, func(r hangRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			spread(column(rs, func(r hangRun) float64 { return float64(r.hung) }), whole),
			spread(column(rs, func(r hangRun) float64 { return r.firstSuccess.Seconds() }), firstSuccessCell),
			failedCell(column(rs, func(r hangRun) float64 { return float64(r.failedLate) })),
			failedCell(column(rs, func(r hangRun) float64 { return float64(r.failed) })),
			interval)
	}
	t.write(w)
}

// hangGoals checks the hang goals for our contender name on its runs rs:
// callers' p99 in the hang at most hangMaxP99, at most hangMaxHung
// requests to the hung server, the first success within one probe
// interval of the recovery and no failure from hangSettled after it, each
// in every run.
func hangGoals(name string, rs []hangRun) []goal {
	p99s := column(rs, func(r hangRun) float64 { return r.p99.Seconds() })
	hung := column(rs, func(r hangRun) float64 { return float64(r.hung) })
	late := column(rs, func(r hangRun) float64 { return float64(r.failedLate) })
	// The first success over the probe interval, run by run; a run
	// without one is +Inf.
	firsts := column(rs, func(r hangRun) float64 {
		if r.firstSuccess < 0 {
			return math.Inf(1)
		}
		return r.firstSuccess.Seconds() / r.probeInterval.Seconds()
	})
	firstText := make([]string, len(rs))
	for i, r := range rs {
		firstText[i] = firstSuccessCell(r.firstSuccess.Seconds()) + " of " + ms(r.probeInterval)
	}
	return []goal{
		{slices.Max(p99s) <= hangMaxP99.Seconds(), fmt.Sprintf("%s: callers' p99 from %v into the hang at most %s in every run: worst %s%s",
			name, hangSettled, ms(hangMaxP99), msFromSeconds(slices.Max(p99s)), everyRun(p99s, msFromSeconds))},
		{slices.Max(hung) <= hangMaxHung, fmt.Sprintf("%s: at most %d requests reach the hung server in every run: worst %.0f%s",
			name, hangMaxHung, slices.Max(hung), everyRun(hung, whole))},
		{slices.Max(firsts) <= 1, fmt.Sprintf("%s: the first success within one probe interval of the recovery in every run: %s",
			name, strings.Join(firstText, ", "))},
		{slices.Max(late) == 0, fmt.Sprintf("%s: no failed request from %v after the recovery in any run: worst %.0f%s",
			name, hangSettled, slices.Max(late), everyRun(late, whole))},
	}
}

// brownoutBreakerContenders are the brownout table's contenders with our
// breaker: our standard mode, the brownout table's, alone, with a
// breaker.Circuit's defaults (which leave 503s to the retries), and with
// one whose Trips counts 5xx responses too, for information.
func brownoutBreakerContenders() []contender {
	// ours makes a new circuit for every transport, if newCircuit is set.
	ours := func(name string, newCircuit func() *breaker.Circuit) contender {
		return contender{name, kindOurs, func(base http.RoundTripper) http.RoundTripper {
			p := scaled(policy.Standard())
			if newCircuit != nil {
				p.Breaker = newCircuit()
			}
			return retrytransport.New(base, retrytransport.WithPolicy(p))
		}}
	}
	return []contender{
		ours("retrytransport standard", nil),
		ours(brownoutGoalsFor, func() *breaker.Circuit { return &breaker.Circuit{} }),
		ours("retrytransport, Breaker: &breaker.Circuit{Trips: 5xx too}", func() *breaker.Circuit {
			return &breaker.Circuit{Trips: breaker.Kinds{classify.Transient, classify.Timeout}}
		}),
	}
}

// brownoutGoalsFor names the contender whose goal the brownout table with
// our breaker checks.
const brownoutGoalsFor = hangGoalsFor

// runBrownoutBreaker runs the brownout table's shape (brownout) with our
// breaker, every contender cfg.hangRuns times, interleaved, and checks
// that the breaker's defaults fail no more requests after the recovery
// than our standard mode without it.
func runBrownoutBreaker(w io.Writer, cfg config) {
	cs := brownoutBreakerContenders()
	runs := interleave(cfg.hangRuns, cs, func(_ int, c contender) brownoutRun { return brownout(cfg, c) })
	t := &table{
		title: fmt.Sprintf("hang, brownout with our breaker: every response is 503 for %v, then healthy for %v (%d closed-loop workers); %s",
			cfg.brownoutOutage, cfg.brownoutHealthy, brownoutWorkers, plural(cfg.hangRuns, "run")),
		notes: []string{cellsNote(cfg.hangRuns) + " Runs interleaved round by round. The brownout table's server and workers; " +
			"\"after recovery\" counts logical requests started once the server was healthy again; first success and last failure " +
			"are from the recovery (last failure 0 if before it). Trips 5xx too: breaker.Kinds{classify.Transient, classify.Timeout}.", waitsNote},
		cols: []string{"contender", "logical requests", "failed", "failed after recovery", "first success", "last failure"},
	}
	for i, c := range cs {
		rs := runs[i]
		t.add(c.name,
			spread(column(rs, func(r brownoutRun) float64 { return float64(r.requests) }), whole),
			failedCell(column(rs, func(r brownoutRun) float64 { return float64(r.failed) })),
			failedCell(column(rs, func(r brownoutRun) float64 { return float64(r.failedAfter) })),
			spread(column(rs, func(r brownoutRun) float64 { return r.firstSuccess.Seconds() }), firstSuccessCell),
			spread(column(rs, func(r brownoutRun) float64 { return max(r.lastFailure, 0).Seconds() }), msFromSeconds))
	}
	t.write(w)
	writeGoals(w, []goal{brownoutBreakerGoal(brownoutGoalsFor, runs[1], runs[0])})
}

// brownoutBreakerGoal checks that ours with the breaker, runs rs, failed
// no more requests after the recovery in any run than our standard mode
// without it, runs bar, at its median.
func brownoutBreakerGoal(name string, rs, bar []brownoutRun) goal {
	after := func(r brownoutRun) float64 { return float64(r.failedAfter) }
	worst, median := slices.Max(column(rs, after)), medianOf(column(bar, after))
	return goal{worst <= median, fmt.Sprintf("%s: no more failed requests after the brownout's recovery than standard mode without it, in every run: worst %.0f, standard's median %.0f%s",
		name, worst, median, everyRun(column(rs, after), whole))}
}
