package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/ratelimit"
	"golang.org/x/time/rate"
)

// The fleet: fleetClients independent clients (replicas of one service),
// each with fleetWorkers closed-loop workers, share one server like the
// throttled scenario's: fleetRate requests per second, a token bucket of
// fleetBurst.
const (
	fleetClients = 8
	fleetWorkers = 2 // per client
	fleetBurst   = throttleBurst
	fleetRate    = throttleRate // requests per second
	fleetLowRate = 50           // the capacity variant's reduced rate

	// fleetClientHeader carries the client's index (0 to fleetClients-1),
	// so that the server can attribute every attempt.
	fleetClientHeader = "X-Fleet-Client"
)

// What the fleet server records, and how the settle time is measured.
const (
	fleetBin        = 100 * time.Millisecond // per-client bins of attempts and 429s
	settleBin       = 50 * time.Millisecond  // fleet-wide bins of admitted attempts: the settle windows' slide
	settleWindow    = 500 * time.Millisecond
	settleTolerance = 0.10 // of the new capacity
	plotWindow      = 5    // fleetBins per moving average in the pictures (500 ms)
)

// capacityStep sets the server's rate from pct per cent of the run on.
type capacityStep struct {
	pct  int
	rate float64 // requests per second
}

// capacityPhase is a stretch of one run at one server rate.
type capacityPhase struct {
	from time.Duration // since the run's start
	rate float64       // requests per second
}

// fleetVariant is one fleet table: the server's capacity over the run and
// whether its 429s carry Retry-After: 1.
type fleetVariant struct {
	name       string
	slug       string // in the pictures' file names
	retryAfter bool
	steps      []capacityStep // the first at 0 %
}

// fleetVariants returns the fleet tables in order.
func fleetVariants() []fleetVariant {
	return []fleetVariant{
		{"fleet", "steady", false, []capacityStep{{0, fleetRate}}},
		{"fleet, Retry-After: 1", "retry-after", true, []capacityStep{{0, fleetRate}}},
		{fmt.Sprintf("fleet, capacity %d → %d → %d", fleetRate, fleetLowRate, fleetRate), "capacity", false,
			[]capacityStep{{0, fleetRate}, {40, fleetLowRate}, {70, fleetRate}}},
	}
}

// schedule returns the variant's capacity phases in a run of length d.
func (v fleetVariant) schedule(d time.Duration) []capacityPhase {
	ps := make([]capacityPhase, len(v.steps))
	for i, s := range v.steps {
		ps[i] = capacityPhase{from: d * time.Duration(s.pct) / 100, rate: s.rate}
	}
	return ps
}

// capacityText describes the variant's capacity for a title.
func (v fleetVariant) capacityText() string {
	if len(v.steps) == 1 {
		return fmt.Sprintf("%.0f req/s", v.steps[0].rate)
	}
	var rates, at []string
	for i, s := range v.steps {
		rates = append(rates, fmt.Sprintf("%.0f", s.rate))
		if i > 0 {
			at = append(at, fmt.Sprintf("%d %%", s.pct))
		}
	}
	return fmt.Sprintf("%s req/s, changing at %s of the run", strings.Join(rates, " → "), strings.Join(at, " and "))
}

// phaseEnd returns when phase i of ps ends in a run of length d.
func phaseEnd(ps []capacityPhase, i int, d time.Duration) time.Duration {
	if i+1 < len(ps) {
		return ps[i+1].from
	}
	return d
}

// capacityIntegral is the requests the server's rate admits over a run of
// length d, its burst left out.
func capacityIntegral(ps []capacityPhase, d time.Duration) float64 {
	var n float64
	for i, p := range ps {
		n += p.rate * (phaseEnd(ps, i, d) - p.from).Seconds()
	}
	return n
}

// fleetContender is a contender of the fleet tables.
type fleetContender struct {
	contender
	slug  string // in the pictures' file names
	goals bool   // the goals are checked for this one: our default adaptive mode
}

// fleetContenders are our adaptive mode and the SDK's, with our limiter
// with the additive line of 10 req/s per second (see ratelimit.Adaptive's
// Fairness) and in reference mode, the SDKs' algorithm, between them. Each
// client gets a fresh limiter, quota and retryer.
func fleetContenders() []fleetContender {
	return []fleetContender{
		{oursAdaptive(), "adaptive", true},
		{oursWithLimiter("retrytransport adaptive, Additive 10", func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Additive: 10} }), "additive", false},
		{oursWithLimiter("retrytransport adaptive (reference)", func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Reference: true} }), "reference", false},
		{awsAdaptive(), "aws-adaptive", false},
	}
}

// fleetTrace is what the server saw of one run, by time since its start.
type fleetTrace struct {
	attempts, throttles [fleetClients][]int64 // per client, per fleetBin
	admitted            []int64               // whole fleet, per settleBin: attempts not answered 429
}

// settle is how the fleet's admitted rate followed one capacity change.
type settle struct {
	ok    bool          // false: never within the tolerance in the phase
	after time.Duration // from the change to the end of the first window within it
	held  float64       // admitted rate from then to the phase's end, over the capacity; NaN if nothing is left
}

// seconds returns the settle time in seconds, +Inf for never.
func (s settle) seconds() float64 {
	if !s.ok {
		return math.Inf(1)
	}
	return s.after.Seconds()
}

// fleetRun is one contender's result in one run of a fleet variant.
type fleetRun struct {
	goodputShare     float64 // successful logical requests over the capacity's integral
	attempts         int64   // attempts the server received within the run
	share429         float64 // 429s over attempts, server side
	failed           int
	p50, p99         time.Duration
	jain             float64
	slowest, fastest float64  // per-client goodput, req/s
	settles          []settle // one per capacity change
	phases           []capacityPhase
	trace            fleetTrace
}

// runFleet runs the three fleet variants: fleetClients independent clients
// of one contender share one server, as replicas of a service share an
// API's capacity. Every contender runs cfg.fleetRuns times, interleaved
// round by round so that drift of this noisy machine hits all alike.
func runFleet(w io.Writer, cfg config, _ []contender) error {
	fcs := fleetContenders()
	for _, v := range fleetVariants() {
		runs := interleave(cfg.fleetRuns, fcs, func(_ int, fc fleetContender) fleetRun { return fleet(cfg, v, fc.contender) })
		writeFleetTable(w, cfg, v, fcs, runs)
		if cfg.svgDir == "" {
			continue
		}
		if err := writeFleetPictures(cfg, v, fcs, runs); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nPicture of each contender's first run, side by side: %s.\n", fleetPicture(cfg.svgDir, v))
	}
	return nil
}

// writeFleetTable prints one variant's table and the goals of the
// contender that has them, each checked on every run.
func writeFleetTable(w io.Writer, cfg config, v fleetVariant, fcs []fleetContender, runs [][]fleetRun) {
	phases := v.schedule(cfg.fleetFor)
	cols := []string{"contender", "goodput share", "429 share", "failed", "p50", "p99", "Jain's index", "slowest replica/s", "fastest replica/s"}
	for _, p := range phases[1:] {
		cols = append(cols, fmt.Sprintf("settle to %.0f", p.rate), fmt.Sprintf("then, of %.0f", p.rate))
	}
	notes := []string{fmt.Sprintf("%s "+
		"goodput share: successful logical requests that ended within the run over the requests the server's rate admits in it "+
		"(%.0f; its burst of %d is left out, so a share can pass 100 %%). 429 share: of all attempts the server received. "+
		"Latency percentiles are over all logical requests that ended within the run. "+
		"Jain's index is over the %d replicas' successful logical requests (1: equal shares; 1/%d: one replica has everything). "+
		"Every replica is a separate transport with its own limiter, quota and connections, in its own http.Client.",
		cellsNote(cfg.fleetRuns), capacityIntegral(phases, cfg.fleetFor), fleetBurst, fleetClients, fleetClients)}
	if len(phases) > 1 {
		notes = append(notes, fmt.Sprintf("settle: from the change to the end of the first %d ms window, sliding by %d ms and lying entirely "+
			"within the new phase, in which the server admitted (did not answer 429) within ±%.0f %% of the new capacity; "+
			"\"never\" if no such window. \"then\": the admitted rate from that instant to the phase's end, over the capacity.",
			settleWindow.Milliseconds(), settleBin.Milliseconds(), 100*settleTolerance))
	}
	notes = append(notes, waitsNote)
	t := &table{
		title: fmt.Sprintf("%s: %d replicas × %d closed-loop workers against one server (token bucket, %s, burst %d), 429 beyond; %v, %s",
			v.name, fleetClients, fleetWorkers, v.capacityText(), fleetBurst, cfg.fleetFor, plural(cfg.fleetRuns, "run")),
		notes: notes,
		cols:  cols,
	}
	var goals []goal
	for i, fc := range fcs {
		rs := runs[i]
		row := []string{fc.name,
			spread(column(rs, func(r fleetRun) float64 { return r.goodputShare }), percent),
			spread(column(rs, func(r fleetRun) float64 { return r.share429 }), percent),
			failedCell(column(rs, func(r fleetRun) float64 { return float64(r.failed) })),
			spread(column(rs, func(r fleetRun) float64 { return r.p50.Seconds() }), msFromSeconds),
			spread(column(rs, func(r fleetRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			spread(column(rs, func(r fleetRun) float64 { return r.jain }), ratio),
			spread(column(rs, func(r fleetRun) float64 { return r.slowest }), perSecond),
			spread(column(rs, func(r fleetRun) float64 { return r.fastest }), perSecond),
		}
		for k := range phases[1:] {
			row = append(row,
				spread(column(rs, func(r fleetRun) float64 { return r.settles[k].seconds() }), settleCell),
				spread(column(rs, func(r fleetRun) float64 { return r.settles[k].held }), percent))
		}
		t.add(row...)
		if fc.goals {
			goals = fleetGoals(fc.name, v, rs, phases)
		}
	}
	t.write(w)
	writeGoals(w, goals)
}

// column returns one metric of every run, in run order.
func column[R any](rs []R, f func(R) float64) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return xs
}

// fleetGoals checks the fleet's goals for one contender on every run; each
// line reports the worst run. Fairness is judged as the project set it for
// independent replicas: Jain's index at least 0.95 in every run and, with
// no Retry-After, at least 0.98 at the median; 0.98 in every run needs
// state the replicas share (the fleet-redis tables).
func fleetGoals(name string, v fleetVariant, rs []fleetRun, phases []capacityPhase) []goal {
	const minJain, medianJain = 0.95, 0.98
	minShare := 0.95
	if v.retryAfter {
		minShare = 0.90
	}
	shares := column(rs, func(r fleetRun) float64 { return r.goodputShare })
	s429 := column(rs, func(r fleetRun) float64 { return r.share429 })
	failed := column(rs, func(r fleetRun) float64 { return float64(r.failed) })
	jains := column(rs, func(r fleetRun) float64 { return r.jain })
	goals := []goal{
		{slices.Min(shares) >= minShare, fmt.Sprintf("%s goodput share at least %s in every run: worst %s%s",
			name, percent(minShare), percent(slices.Min(shares)), everyRun(shares, percent))},
		{slices.Max(s429) <= 0.05, fmt.Sprintf("%s 429 share at most 5.0 %% in every run: worst %s%s",
			name, percent(slices.Max(s429)), everyRun(s429, percent))},
		{slices.Max(failed) == 0, fmt.Sprintf("%s no failed logical request in any run: worst %.0f%s",
			name, slices.Max(failed), everyRun(failed, whole))},
	}
	if !v.retryAfter {
		p99s := column(rs, func(r fleetRun) float64 { return r.p99.Seconds() })
		goals = append(goals, goal{slices.Max(p99s) <= 0.250, fmt.Sprintf("%s p99 at most 250 ms in every run: worst %s%s",
			name, msFromSeconds(slices.Max(p99s)), everyRun(p99s, msFromSeconds))})
	}
	goals = append(goals, goal{slices.Min(jains) >= minJain, fmt.Sprintf("%s Jain's index at least %.2f in every run: worst %s%s",
		name, minJain, ratio(slices.Min(jains)), everyRun(jains, ratio))})
	if !v.retryAfter {
		med := medianOf(jains)
		goals = append(goals, goal{med >= medianJain, fmt.Sprintf("%s Jain's index at least %.2f at the median of the runs: %s%s",
			name, medianJain, ratio(med), everyRun(jains, ratio))})
	}
	for k, p := range phases[1:] {
		ss := column(rs, func(r fleetRun) float64 { return r.settles[k].seconds() })
		goals = append(goals, goal{slices.Max(ss) < 2, fmt.Sprintf("%s settles to %.0f req/s in under 2 s in every run: worst %s%s",
			name, p.rate, settleCell(slices.Max(ss)), everyRun(ss, settleCell))})
	}
	return goals
}

// cellsNote is the first sentence of the notes of a table whose cells
// spread over runs runs, as spread and failedCell write them.
func cellsNote(runs int) string {
	if runs == 1 {
		return "One run."
	}
	return "Cells are min / median / max over the runs (one value where they are equal); \"failed\" is the sum over the runs and the most in one."
}

// newFleetClients returns fleetClients clients, each its own
// wrap(newBase()) in its own http.Client, and a func that closes their
// bases' idle connections.
func newFleetClients(wrap func(http.RoundTripper) http.RoundTripper) ([]*http.Client, func()) {
	clients := make([]*http.Client, fleetClients)
	bases := make([]*http.Transport, fleetClients)
	for i := range clients {
		bases[i] = newBase()
		clients[i] = &http.Client{Transport: wrap(bases[i])}
	}
	return clients, func() {
		for _, b := range bases {
			b.CloseIdleConnections()
		}
	}
}

// sendFleet has every client send GETs to url, each marked with its
// index in fleetClientHeader, all clients at once; load runs one client's
// workers on do. It returns each client's outcomes.
func sendFleet(clients []*http.Client, url string, load func(do func(ctx context.Context, i int) outcome) []outcome) [][]outcome {
	outs := make([][]outcome, len(clients))
	var wg sync.WaitGroup
	for i, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := strconv.Itoa(i)
			outs[i] = load(func(ctx context.Context, _ int) outcome {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set(fleetClientHeader, id)
				return send(ctx, client, req)
			})
		}()
	}
	wg.Wait()
	return outs
}

// fleetClientOf returns the client index r carries in fleetClientHeader,
// or -1 if it carries none in range.
func fleetClientOf(r *http.Request) int {
	i, err := strconv.Atoi(r.Header.Get(fleetClientHeader))
	if err != nil || i < 0 || i >= fleetClients {
		return -1
	}
	return i
}

// fleet runs one contender's fleet once: fleetClients clients, each its
// own contender.wrap(newBase()) in its own http.Client.
func fleet(cfg config, v fleetVariant, c contender) fleetRun {
	srv := newFleetServer(v.retryAfter)
	defer srv.Close()
	clients, closeIdle := newFleetClients(c.wrap)
	defer closeIdle()

	d := cfg.fleetFor
	phases := v.schedule(d)
	start := time.Now()
	end := start.Add(d)
	srv.begin(start, d, phases)
	outs := sendFleet(clients, srv.URL, func(do func(context.Context, int) outcome) []outcome {
		return runFor(fleetWorkers, end, do)
	})

	trace, attempts, refused := srv.results()
	r := fleetRun{phases: phases, trace: trace, attempts: attempts}
	var all []outcome
	good := make([]float64, fleetClients)
	for i, o := range outs {
		all = append(all, o...)
		good[i] = float64(len(o) - failures(o))
	}
	r.failed = failures(all)
	r.p50, r.p99 = latencies(all)
	r.goodputShare = float64(len(all)-r.failed) / capacityIntegral(phases, d)
	if attempts > 0 {
		r.share429 = float64(refused) / float64(attempts)
	}
	r.jain = jain(good)
	r.slowest, r.fastest = slices.Min(good)/d.Seconds(), slices.Max(good)/d.Seconds()
	for i := 1; i < len(phases); i++ {
		r.settles = append(r.settles, settleTime(trace.admitted, settleBin, settleWindow,
			phases[i].from, phaseEnd(phases, i, d), phases[i].rate))
	}
	return r
}

// fleetServer is the fleet's one server: a token bucket whose rate follows
// a schedule, answering 429 when it is empty, that records every attempt of
// the run by client and time.
type fleetServer struct {
	*server
	mu         sync.Mutex
	limiter    *rate.Limiter
	changes    []capacityPhase // still ahead, as offsets from start
	start, end time.Time
	trace      fleetTrace
	attempts   int64 // within the run
	refused    int64 // of them, answered 429
}

// newFleetServer starts the fleet's server; begin must be called before
// the first request. The 429s are the throttled server's: an AWS
// throttling code, and Retry-After: 1 if retryAfter is set.
func newFleetServer(retryAfter bool) *fleetServer {
	s := &fleetServer{}
	s.server = newServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if s.admit(fleetClientOf(r)) { // -1: counted for the fleet, not for a client
			_, _ = w.Write([]byte("ok"))
			return
		}
		writeThrottled(w, retryAfter)
	})
	return s
}

// begin starts a run of length d at start with the capacity phases ps.
func (s *fleetServer) begin(start time.Time, d time.Duration, ps []capacityPhase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start, s.end = start, start.Add(d)
	s.limiter = rate.NewLimiter(rate.Limit(ps[0].rate), fleetBurst)
	s.changes = ps[1:]
	for i := range s.trace.attempts {
		s.trace.attempts[i] = make([]int64, binCount(d, fleetBin))
		s.trace.throttles[i] = make([]int64, binCount(d, fleetBin))
	}
	s.trace.admitted = make([]int64, binCount(d, settleBin))
}

// binCount is the number of bins of width bin that cover d.
func binCount(d, bin time.Duration) int { return int((d + bin - 1) / bin) }

// admit takes a token for an attempt of client (-1 if unknown) and records
// it. The clock is read under the mutex, so that the limiter sees time
// only go forward. A capacity change due by now is applied as of its own
// instant, not of the first request after it: the bucket fills at the old
// rate until the change and at the new one from it, whatever the traffic.
func (s *fleetServer) admit(client int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for len(s.changes) > 0 && !now.Before(s.start.Add(s.changes[0].from)) {
		s.limiter.SetLimitAt(s.start.Add(s.changes[0].from), rate.Limit(s.changes[0].rate))
		s.changes = s.changes[1:]
	}
	ok := s.limiter.AllowN(now, 1)
	if now.Before(s.start) || !now.Before(s.end) {
		return ok
	}
	since := now.Sub(s.start)
	s.attempts++
	if !ok {
		s.refused++
	} else {
		s.trace.admitted[since/settleBin]++
	}
	if client >= 0 {
		s.trace.attempts[client][since/fleetBin]++
		if !ok {
			s.trace.throttles[client][since/fleetBin]++
		}
	}
	return ok
}

// results returns what the server recorded; call it after the run.
func (s *fleetServer) results() (trace fleetTrace, attempts, refused int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trace, s.attempts, s.refused
}

// jain is Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all are
// equal, 1/n when one has everything. It is 1 when all are zero, equal
// shares of nothing.
func jain(xs []float64) float64 {
	var sum, squares float64
	for _, x := range xs {
		sum += x
		squares += x * x
	}
	if squares == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * squares)
}

// settleTime finds when an admitted rate settled after a change of
// capacity: admitted holds counts per bin from the run's start; windows of
// length window (a multiple of bin) slide by bin, and the first that lies
// entirely within [change, end) with a rate within ±settleTolerance of
// capacity settles it, at the window's end. held is the rate from there to
// end, over the capacity.
func settleTime(admitted []int64, bin, window, change, end time.Duration, capacity float64) settle {
	w := int(window / bin)
	first := int((change + bin - 1) / bin) // the first bin starting at or after change
	last := min(int(end/bin), len(admitted))
	sum := func(from, to int) (n int64) {
		for _, x := range admitted[from:to] {
			n += x
		}
		return n
	}
	for k := first; k+w <= last; k++ {
		if r := float64(sum(k, k+w)) / window.Seconds(); math.Abs(r-capacity) > settleTolerance*capacity {
			continue
		}
		s := settle{ok: true, after: time.Duration(k+w)*bin - change, held: math.NaN()}
		if rest := last - (k + w); rest > 0 {
			s.held = float64(sum(k+w, last)) / (time.Duration(rest) * bin).Seconds() / capacity
		}
		return s
	}
	return settle{held: math.NaN()}
}

// minMedMax returns the least, median and greatest of xs, NaNs (no value)
// left out; all three are NaN if nothing is left. The median of an even
// count is the mean of the middle two.
func minMedMax(xs []float64) (lo, med, hi float64) {
	vs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vs = append(vs, x)
		}
	}
	if len(vs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return slices.Min(vs), medianOf(vs), slices.Max(vs)
}

// spread formats xs as "min / median / max", or as one value if all are
// equal (one run, say); "n/a" if there is none. NaNs are left out.
func spread(xs []float64, f func(float64) string) string {
	lo, med, hi := minMedMax(xs)
	switch {
	case math.IsNaN(lo):
		return "n/a"
	case lo == hi:
		return f(lo)
	}
	return f(lo) + " / " + f(med) + " / " + f(hi)
}

// everyRun lists the runs' values, in run order, when there is more than
// one, for a goal line.
func everyRun(xs []float64, f func(float64) string) string {
	if len(xs) < 2 {
		return ""
	}
	vs := make([]string, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return " (runs: " + strings.Join(vs, ", ") + ")"
}

// failedCell is the failed logical requests: the sum over the runs and the
// most in one.
func failedCell(xs []float64) string {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.0f", sum)
	}
	return fmt.Sprintf("%.0f, max %.0f", sum, slices.Max(xs))
}

// plural returns "n thing", with an s unless n is 1.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func msFromSeconds(s float64) string { return ms(time.Duration(s * float64(time.Second))) }

func perSecond(x float64) string { return fmt.Sprintf("%.1f", x) }

// settleCell formats a settle time in seconds, +Inf as "never".
func settleCell(s float64) string {
	if math.IsInf(s, 1) {
		return "never"
	}
	return secs(time.Duration(s * float64(time.Second)))
}

// writeFleetPictures writes one SVG of v into cfg.svgDir, fleet-<slug>.svg:
// every contender's first run side by side (fleetFigure).
func writeFleetPictures(cfg config, v fleetVariant, fcs []fleetContender, runs [][]fleetRun) error {
	if err := os.MkdirAll(cfg.svgDir, 0o755); err != nil {
		return fmt.Errorf("writing the fleet pictures: %w", err)
	}
	names := make([]string, len(fcs))
	firsts := make([]fleetRun, len(fcs))
	for i, fc := range fcs {
		names[i], firsts[i] = fc.name, runs[i][0]
	}
	name := v.name
	if len(v.steps) == 1 {
		name += ", " + v.capacityText()
	}
	title := fmt.Sprintf("%s: %d replicas × %d workers against one server, first of %s per contender",
		name, fleetClients, fleetWorkers, plural(len(runs[0]), "run"))
	var b bytes.Buffer
	if err := writeSVG(&b, fleetFigure(title, names, firsts, cfg.fleetFor)); err != nil {
		return fmt.Errorf("writing the fleet pictures: %w", err)
	}
	if err := os.WriteFile(fleetPicture(cfg.svgDir, v), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the fleet pictures: %w", err)
	}
	return nil
}

// fleetPicture is the file of v's picture in dir.
func fleetPicture(dir string, v fleetVariant) string {
	return filepath.Join(dir, "fleet-"+v.slug+".svg")
}

// The rows of fleetFigure, from the top.
const (
	fleetRowTotal     = iota // the fleet's admitted rate and the capacity
	fleetRowReplicas         // each replica's send rate and the fair share
	fleetRowThrottles        // the fleet's 429s
)

// fleetFigure draws runs side by side, one column per run titled by
// names: the fleet's admitted rate and the server's capacity in the top
// row, each replica's send rate and the fair share (capacity over
// fleetClients) in the middle one, with an axis of its own that fits the
// replicas, and the fleet's 429s per second in the bottom one. Each row
// has one y axis for all columns. Replica i has the same colour and dash
// in every column and every figure.
func fleetFigure(title string, names []string, runs []fleetRun, d time.Duration) figure {
	full := int(d / fleetBin) // complete bins only: a partial last one would read low
	rows := []row{
		fleetRowTotal:     {ylabel: "fleet, requests per second", height: 165},
		fleetRowReplicas:  {ylabel: "each replica, attempts per second", height: 230},
		fleetRowThrottles: {ylabel: "fleet, 429s per second", height: 135},
	}
	for _, r := range runs {
		var replicas []series
		admitted := make([]int64, full)
		throttled := make([]int64, full)
		for i := range fleetClients {
			a := r.trace.attempts[i][:full]
			t := r.trace.throttles[i][:full]
			for k := range admitted {
				admitted[k] += a[k] - t[k]
				throttled[k] += t[k]
			}
			color, dash := replicaStyle(i)
			s := movingRate(fmt.Sprintf("replica %d", i+1), color, a)
			s.dash = dash
			replicas = append(replicas, s)
		}
		total := movingRate("fleet admitted (not 429)", "#000000", admitted)
		total.width = 2
		capacity := series{name: "server capacity", color: "#000000", width: 1.3, dash: "6 4"}
		fair := series{name: fmt.Sprintf("fair share: capacity / %d", fleetClients), color: "#000000", width: 1.6, dash: "2 3"}
		for i, p := range r.phases {
			from, to := p.from.Seconds(), phaseEnd(r.phases, i, d).Seconds()
			capacity.xs = append(capacity.xs, from, to)
			capacity.ys = append(capacity.ys, p.rate, p.rate)
			fair.xs = append(fair.xs, from, to)
			fair.ys = append(fair.ys, p.rate/fleetClients, p.rate/fleetClients)
		}
		throttles := movingRate("fleet 429s", "#555555", throttled)
		throttles.width = 1.5
		rows[fleetRowTotal].cells = append(rows[fleetRowTotal].cells, []series{capacity, total})
		rows[fleetRowReplicas].cells = append(rows[fleetRowReplicas].cells, append(replicas, fair))
		rows[fleetRowThrottles].cells = append(rows[fleetRowThrottles].cells, []series{throttles})
	}
	return figure{
		title:   title,
		xlabel:  "time since the run's start (s)",
		xmax:    d.Seconds(),
		columns: names,
		rows:    rows,
		caption: []string{
			"Top: the attempts the server admitted (did not answer 429) from all replicas, and its capacity. Middle: each replica's attempts per second as the server",
			"received them, on an axis of their own, with the fair share of the capacity. Bottom: the 429s the server sent the fleet. Each row has one axis for all columns.",
			fmt.Sprintf("Rates are %d ms moving averages of %d ms bins, drawn at each window's middle.",
				(time.Duration(plotWindow) * fleetBin).Milliseconds(), fleetBin.Milliseconds()),
		},
	}
}

// movingRate returns counts per fleetBin as a series of plotWindow-bin
// moving averages, per second, each at its window's middle.
func movingRate(name, color string, bins []int64) series {
	s := series{name: name, color: color, width: 1.3}
	window := time.Duration(plotWindow) * fleetBin
	for k := 0; k+plotWindow <= len(bins); k++ {
		var n int64
		for _, x := range bins[k : k+plotWindow] {
			n += x
		}
		s.xs = append(s.xs, (time.Duration(k)*fleetBin + window/2).Seconds())
		s.ys = append(s.ys, float64(n)/window.Seconds())
	}
	return s
}

// runSingleRetryAfter repeats the throttled scenario with Retry-After: 1
// for our adaptive mode and the SDK's, cfg.singleRuns times, interleaved:
// a single run of one transport varies from run to run, and the goal must
// hold in every one.
func runSingleRetryAfter(w io.Writer, cfg config, _ []contender) error {
	pair := []contender{oursAdaptive(), awsAdaptive()}
	runs := throttledRounds(cfg, pair, cfg.singleRuns, true)
	t := &table{
		title: fmt.Sprintf("one transport, %d workers, Retry-After: 1, %s: the throttled scenario's server (%d req/s, burst %d), %v each",
			throttleWorkers, plural(cfg.singleRuns, "run"), throttleRate, throttleBurst, cfg.throttleFor),
		notes: []string{"The throttled table with Retry-After: 1, repeated; runs interleaved contender by contender. " +
			"goodput: successful logical requests per second in each run, in run order. 429 share: of all server hits.",
			waitsNote},
		cols: []string{"contender", "goodput/s, every run", "min", "median", "max", "429 share", "failed"},
	}
	const minGoodput = 180
	var goals []goal
	for i, c := range pair {
		var goodputs, shares, failed []float64
		for _, r := range runs[i] {
			goodputs = append(goodputs, r.goodput)
			shares = append(shares, r.share429)
			failed = append(failed, float64(r.failed))
		}
		lo, med, hi := minMedMax(goodputs)
		var every []string
		for _, g := range goodputs {
			every = append(every, fmt.Sprintf("%.1f", g))
		}
		t.add(c.name, strings.Join(every, ", "), perSecond(lo), perSecond(med), perSecond(hi),
			spread(shares, percent), failedCell(failed))
		if c.kind == kindOurs {
			goals = append(goals, goal{lo >= minGoodput, fmt.Sprintf("%s goodput at least %d/s in every run: worst %.1f/s",
				c.name, minGoodput, lo)})
		}
	}
	t.write(w)
	writeGoals(w, goals)
	return nil
}
