package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// The published quota (issue 27, item 4): the fleet's replicas and
// workers (fleetClients × fleetWorkers) share a server that admits
// publishedRate requests per second in fixed windows, aligned to the run's
// start, and says on every response what is left of the current one.
const publishedRate = 60 // requests per second: 600 per 10 s window

// publishedContender is a row of the published-quota table.
type publishedContender struct {
	contender
	// fleet is where the replicas share their state, for a contender on
	// Redis; nil for one whose replicas keep it in process.
	fleet *redisFleet
	// minJain is the least Jain's index of the contender's goals; zero
	// means it has none.
	minJain float64
}

// publishedContenders are our adaptive mode, which reads the published
// quota, the same with its limiter and quota shared on Redis in f, the
// limiter never told the quota, and the SDK's adaptive mode, which reads
// no field at all. The first two have the goals; the replicas that share
// one queue on Redis should share the quota more evenly than those that
// each estimate how many they are.
func publishedContenders(f *redisFleet) []publishedContender {
	return []publishedContender{
		{contender: oursAdaptive(), minJain: 0.97},
		{contender: f.contender(publishedOnRedis()), fleet: f, minJain: 0.99},
		{contender: oursWithQuotaIgnored()},
		{contender: awsAdaptive()},
	}
}

// publishedOnRedis is our adaptive mode with its limiter and retry quota
// shared on Redis, each replica a redisretry.Store of its own on the
// bench's redis-server.
func publishedOnRedis() fleetReplica {
	return fleetReplica{"retrytransport adaptive, Redis", true, func(s *redisretry.Store) policy.Policy {
		p := scaled(policy.Adaptive())
		p.Quota = s.Quota(nil)
		p.Limiter = s.Adaptive(nil)
		return p
	}}
}

// oursWithQuotaIgnored is our adaptive mode with a limiter that the
// transport cannot tell the published quota (quotaBlind). Everything else
// is the preset's: the transport still reads the fields of a 429, whose
// remaining count is 0, as the server's delay and waits the reset.
//
// Setting ServerDelay.Headers would not do: the quota fields are also the
// 429's only delay, so leaving them out (retryafter.None, or every source
// but IETFRateLimit and RateLimitReset) would make the 429s retry after
// the backoff's milliseconds instead of at the reset.
func oursWithQuotaIgnored() contender {
	return contender{"retrytransport adaptive, limiter not told the quota", kindOurs, func(base http.RoundTripper) http.RoundTripper {
		p := scaled(policy.Adaptive())
		if a, ok := p.Limiter.(*ratelimit.Adaptive); ok {
			p.Limiter = quotaBlind{Adaptive: a}
		}
		return retrytransport.New(base, retrytransport.WithPolicy(p))
	}}
}

// quotaBlind is a *ratelimit.Adaptive without RecordQuota: the transport,
// which looks for ratelimit.QuotaRecorder, never tells it a published
// quota, and it learns the server's rate from 429s alone. It has every
// other method of the limiter, promoted from the embedded one, since the
// transport looks for those too (Recorder, Releaser, the throttle charging
// and retries, State); TestQuotaBlindForwards checks that none is missing.
type quotaBlind struct {
	*ratelimit.Adaptive

	// RecordQuota and RecordQuotaAt are fields, not methods: at a
	// shallower depth than the embedded limiter's methods of those names,
	// they hide them.
	RecordQuota, RecordQuotaAt struct{}
}

// publishedRun is one contender's result in one run.
type publishedRun struct {
	throttledFirst int64   // 429s in the first window
	throttledLater int64   // 429s in the windows after it
	attempts       int64   // the attempts the server counted in the run, admitted or not
	leastUsed      float64 // the least share of the quota admitted in a window after the first
	jain           float64 // over the replicas' admitted attempts in the windows after the first
	goodputShare   float64 // successful logical requests over the quota of the run's windows
	failed         int
	p99            time.Duration
	stats          replicaStats // on Redis: the fallbacks to each replica's own state
	tripsPerSend   float64      // on Redis: the replicas' round trips over the attempts the server counted
}

// runPublished runs every contender's fleet cfg.publishedRuns times,
// interleaved round by round, and prints the table and the goals of our
// adaptive mode, in process and on Redis. It starts the redis-server that
// the Redis contender's replicas share.
func runPublished(w io.Writer, cfg config, _ []contender) error {
	f, err := startRedisFleet()
	if err != nil {
		return err
	}
	defer f.close()
	cs := publishedContenders(f)
	runs, err := interleaveErr(cfg.publishedRuns, cs, func(_ int, c publishedContender) (publishedRun, error) { return publishedOnce(cfg, c) })
	if err != nil {
		return err
	}
	quota := publishedQuota(cfg.publishedWindow)
	windows := int64(cfg.publishedFor / cfg.publishedWindow)
	t := &table{
		title: fmt.Sprintf("published quota: %d replicas × %d closed-loop workers against one server "+
			"(fixed windows of %d requests per %v, publishing what is left), 429 beyond; %v, %s",
			fleetClients, fleetWorkers, quota, cfg.publishedWindow, cfg.publishedFor, plural(cfg.publishedRuns, "run")),
		notes: []string{cellsNote(cfg.publishedRuns) + " " +
			fmt.Sprintf("The windows start with the run. Every response, 429s included, carries "+
				"RateLimit: \"default\";r=<left>;t=<seconds to the reset, rounded up>, RateLimit-Policy: \"default\";q=%d;w=%.0f and "+
				"X-RateLimit-Limit, -Remaining and -Reset (the reset as Unix seconds, rounded up): both resets are at most a second late, never early. "+
				"The 429s carry no Retry-After. 429s and the quota used are counted by the server; \"later\" windows: those after the first (%d). "+
				"Jain's index is over the %d replicas' admitted attempts in those windows. "+
				"goodput: successful logical requests that ended within the run, over the %d the windows admit. "+
				"\"Redis\": each replica's limiter and retry quota in a redisretry.Store of its own on one redis-server %s on %s, "+
				"started by the bench and emptied before every run, with the Store's defaults. "+
				"\"limiter not told the quota\": our limiter behind a wrapper without RecordQuota; the transport still waits the reset a 429 carries.",
				quota, cfg.publishedWindow.Seconds(), windows-1, fleetClients, quota*windows, redisVersion(f.adm), f.srv.addr),
			waitsNote},
		cols: []string{"contender", "429s, first window", "429s after it", "quota used per later window (least)",
			"Jain's index after the first window", "goodput", "p99", "failed"},
	}
	var goals []goal
	var info []string
	for i, c := range cs {
		rs := runs[i]
		t.add(c.name,
			spread(column(rs, func(r publishedRun) float64 { return float64(r.throttledFirst) }), whole),
			spread(column(rs, func(r publishedRun) float64 { return float64(r.throttledLater) }), whole),
			spread(column(rs, func(r publishedRun) float64 { return r.leastUsed }), percent),
			spread(column(rs, func(r publishedRun) float64 { return r.jain }), ratio),
			spread(column(rs, func(r publishedRun) float64 { return r.goodputShare }), percent),
			spread(column(rs, func(r publishedRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			failedCell(column(rs, func(r publishedRun) float64 { return float64(r.failed) })))
		if c.minJain > 0 {
			goals = append(goals, publishedGoals(c.name, rs, c.minJain)...)
		}
		if c.fleet != nil {
			info = append(info, fmt.Sprintf("- for information, %s: fallbacks to a replica's own state %s, Redis round trips per attempt %s",
				c.name, spread(column(rs, func(r publishedRun) float64 { return float64(r.stats.fallbacks) }), whole),
				spread(column(rs, func(r publishedRun) float64 { return r.tripsPerSend }), twoPlaces)))
		}
	}
	t.write(w)
	writeGoals(w, goals)
	for _, l := range info {
		fmt.Fprintln(w, l)
	}
	return nil
}

// publishedOnce runs c's fleet once; a fleet on Redis starts from an empty
// Redis and closes its replicas' clients after the run.
func publishedOnce(cfg config, c publishedContender) (publishedRun, error) {
	if c.fleet == nil {
		return published(cfg, c.contender), nil
	}
	before, err := c.fleet.beginRun()
	if err != nil {
		return publishedRun{}, err
	}
	r := published(cfg, c.contender)
	trips := c.fleet.trips.count() - before
	r.stats = c.fleet.endRun()
	if r.attempts > 0 {
		r.tripsPerSend = float64(trips) / float64(r.attempts)
	}
	return r, nil
}

// publishedGoals checks issue 27's goals on every run, with minJain the
// least Jain's index; each line reports the worst.
func publishedGoals(name string, rs []publishedRun, minJain float64) []goal {
	later := column(rs, func(r publishedRun) float64 { return float64(r.throttledLater) })
	used := column(rs, func(r publishedRun) float64 { return r.leastUsed })
	jains := column(rs, func(r publishedRun) float64 { return r.jain })
	failed := column(rs, func(r publishedRun) float64 { return float64(r.failed) })
	return []goal{
		{slices.Max(later) == 0, fmt.Sprintf("%s no 429 after the first window in every run: worst %.0f%s",
			name, slices.Max(later), everyRun(later, whole))},
		{slices.Min(used) >= 0.95, fmt.Sprintf("%s at least 95.0 %% of every later window's quota used in every run: worst %s%s",
			name, percent(slices.Min(used)), everyRun(used, percent))},
		{slices.Min(jains) >= minJain, fmt.Sprintf("%s Jain's index after the first window at least %.2f in every run: worst %s%s",
			name, minJain, ratio(slices.Min(jains)), everyRun(jains, ratio))},
		{slices.Max(failed) == 0, fmt.Sprintf("%s no failed logical request in any run: worst %.0f%s",
			name, slices.Max(failed), everyRun(failed, whole))},
	}
}

// publishedQuota is the requests a window of length d admits.
func publishedQuota(d time.Duration) int64 {
	return int64(math.Round(publishedRate * d.Seconds()))
}

// published runs one contender's fleet once.
func published(cfg config, c contender) publishedRun {
	d, win := cfg.publishedFor, cfg.publishedWindow
	srv := newQuotaServer(publishedQuota(win), win)
	defer srv.Close()
	clients, closeIdle := newFleetClients(c.wrap)
	defer closeIdle()

	start := time.Now()
	end := start.Add(d)
	srv.begin(start, d)
	outs := sendFleet(clients, srv.URL, func(do func(ctx context.Context, i int) outcome) []outcome {
		return runFor(fleetWorkers, end, do)
	})

	admitted, throttled := srv.results()
	var r publishedRun
	r.throttledFirst = sumClients(throttled, 0, 1)
	r.throttledLater = sumClients(throttled, 1, len(throttled[0]))
	r.attempts = sumClients(admitted, 0, len(admitted[0])) + r.throttledFirst + r.throttledLater
	r.leastUsed = math.Inf(1)
	for k := 1; k < int(d/win); k++ { // the complete windows after the first
		r.leastUsed = min(r.leastUsed, float64(sumClients(admitted, k, k+1))/float64(srv.quota))
	}
	if math.IsInf(r.leastUsed, 1) {
		r.leastUsed = math.NaN()
	}
	shares := make([]float64, fleetClients)
	for i := range shares {
		for _, n := range admitted[i][1:] {
			shares[i] += float64(n)
		}
	}
	r.jain = jain(shares)
	var all []outcome
	for _, o := range outs {
		all = append(all, o...)
	}
	r.failed = failures(all)
	_, r.p99 = latencies(all)
	r.goodputShare = float64(len(all)-r.failed) / float64(srv.quota*int64(binCount(d, win)))
	return r
}

// sumClients sums counts[i][from:to] over every client i.
func sumClients(counts [fleetClients][]int64, from, to int) int64 {
	var n int64
	for _, c := range counts {
		for _, x := range c[from:to] {
			n += x
		}
	}
	return n
}

// quotaServer admits quota requests per fixed window, the windows aligned
// to the run's start, and answers 429 beyond; every answer publishes what
// is left (writeQuota). It records the attempts of the run it admitted and
// refused, per client and window.
type quotaServer struct {
	*server
	quota  int64
	window time.Duration
	now    func() time.Time // nil means time.Now

	mu                  sync.Mutex
	start, end          time.Time
	win                 int64 // the current window, counted from the run's start; -1 before the run
	count               int64 // admitted in it
	admitted, throttled [fleetClients][]int64
}

// newQuotaServer starts the server; begin must be called before the first
// request.
func newQuotaServer(quota int64, window time.Duration) *quotaServer {
	s := &quotaServer{quota: quota, window: window}
	s.server = newServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ok, left, now, reset := s.admit(fleetClientOf(r))
		writeQuota(w.Header(), s.quota, s.window, left, now, reset)
		if ok {
			_, _ = w.Write([]byte("ok"))
			return
		}
		writeThrottled(w, false)
	})
	return s
}

// begin starts a run of length d at start.
func (s *quotaServer) begin(start time.Time, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start, s.end = start, start.Add(d)
	s.win, s.count = -1, 0
	for i := range s.admitted {
		s.admitted[i] = make([]int64, binCount(d, s.window))
		s.throttled[i] = make([]int64, binCount(d, s.window))
	}
}

// admit counts an attempt of client (-1 if unknown) against the current
// window and records it: whether it is admitted, what is left of the
// window after it, the instant it was counted and when the window ends. The clock is read under the
// mutex, so that windows only go forward. An attempt outside the run is
// answered from a window of its own, and not recorded.
func (s *quotaServer) admit(client int) (ok bool, left int64, now, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now = time.Now()
	if s.now != nil {
		now = s.now()
	}
	since := now.Sub(s.start)
	k := int64(math.Floor(float64(since) / float64(s.window)))
	if k != s.win {
		s.win, s.count = k, 0
	}
	if ok = s.count < s.quota; ok {
		s.count++
	}
	reset = s.start.Add(time.Duration(k+1) * s.window)
	if since >= 0 && now.Before(s.end) && client >= 0 {
		if ok {
			s.admitted[client][k]++
		} else {
			s.throttled[client][k]++
		}
	}
	return ok, s.quota - s.count, now, reset
}

// results returns the admitted and refused attempts per client and
// window; call it after the run.
func (s *quotaServer) results() (admitted, throttled [fleetClients][]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted, s.throttled
}

// writeQuota sets the quota fields in h: quota per window, left of the
// current one as of now, which ends at reset. Both resets are rounded up to whole
// seconds, so that a client never thinks the window over before it is
// (docs/published-quotas.md, "A reset rounded down"): the IETF t is the
// seconds from now to the reset, and X-RateLimit-Reset the Unix second at
// or after it.
func writeQuota(h http.Header, quota int64, window time.Duration, left int64, now, reset time.Time) {
	t := int64(math.Ceil(reset.Sub(now).Seconds()))
	unix := reset.Unix()
	if reset.Nanosecond() > 0 {
		unix++
	}
	w := strconv.FormatFloat(window.Seconds(), 'f', -1, 64)
	h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, left, max(t, 0)))
	h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%s`, quota, w))
	h.Set("X-RateLimit-Limit", strconv.FormatInt(quota, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(left, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(unix, 10))
}
