package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/redisretry"
)

// watchEvery is how often the hang-redis table looks at every replica's
// circuit.
const watchEvery = 5 * time.Millisecond

// stateBreaker is a breaker whose circuits can be looked at: a
// breaker.Circuit, or a redisretry.Breaker (the fleet's circuit, as the
// replica last read it).
type stateBreaker interface {
	breaker.Breaker
	State(scope string) breaker.State
}

// hangRedisReplica is a contender of the hang-redis table: the breaker of
// one replica.
type hangRedisReplica struct {
	name string
	// shared says that the replicas share one circuit; the table's goals
	// are checked for it.
	shared     bool
	newBreaker func(store *redisretry.Store) stateBreaker
}

// hangRedisReplicas returns the hang-redis table's contenders: a
// breaker.Circuit of each replica's own, and a redisretry.Breaker shared
// through the fleet's Redis, both with their defaults.
func hangRedisReplicas() []hangRedisReplica {
	return []hangRedisReplica{
		{"retrytransport, a breaker.Circuit per replica", false, func(*redisretry.Store) stateBreaker { return &breaker.Circuit{} }},
		{"retrytransport, redisretry.Breaker shared", true, func(s *redisretry.Store) stateBreaker { return s.Breaker(nil) }},
	}
}

// hangRedisRun is one contender's result in one hang-redis run.
type hangRedisRun struct {
	hangRun           // the callers' side, and hung and probeInterval
	probes    int     // requests that reached the hung server once every circuit had opened; -1 if they never all did
	intervals float64 // open times that ended while the server hung, once every circuit had opened (see circuitWatch.intervals)
	// closedAfter is from the recovery until every replica's circuit was
	// closed; -1 if not by the run's end.
	closedAfter time.Duration
	fallbacks   uint64 // decisions a replica made alone because Redis did not answer in time
	roundTrips  int64  // the replicas' round trips to Redis
}

// perInterval is the probes per open interval; NaN without an interval.
func (r hangRedisRun) perInterval() float64 {
	if r.intervals == 0 || r.probes < 0 {
		return math.NaN()
	}
	return float64(r.probes) / r.intervals
}

// runHangRedis starts a redis-server and prints the hang-redis table: the
// hang table's server and phases, fleetClients replicas of
// fleetWorkers workers each, with a circuit each or one shared through
// Redis, every contender cfg.hangRedisRuns times, interleaved.
func runHangRedis(w io.Writer, cfg config, _ []contender) error {
	defer writeLoadNote(w, loadAverage())
	f, err := startRedisFleet()
	if err != nil {
		return err
	}
	defer f.close()
	// The breaker's script, loaded as a running deployment has it (the
	// first Allow of a scope reads its circuit).
	warm := (&redisretry.Store{Client: f.adm, Timeout: time.Second}).Breaker(nil)
	if p, err := warm.Allow("bench-warm-up"); err == nil {
		p.Done(classify.Outcome{Kind: classify.Success}, nil)
	}
	cs := hangRedisReplicas()
	runs, err := interleaveErr(cfg.hangRedisRuns, cs, func(_ int, c hangRedisReplica) (hangRedisRun, error) {
		return hangRedisOnce(cfg, f, c)
	})
	if err != nil {
		return err
	}
	writeHangRedisTable(w, cfg, redisVersion(f.adm), cs, runs)
	for i, c := range cs {
		if c.shared {
			writeGoals(w, hangRedisGoals(c.name, runs[i]))
		}
	}
	return nil
}

// hangRedisOnce runs c's fleet once against a fresh hanging server, Redis
// emptied first.
func hangRedisOnce(cfg config, f *redisFleet, c hangRedisReplica) (hangRedisRun, error) {
	before, err := f.beginRun()
	if err != nil {
		return hangRedisRun{}, err
	}
	srv := newHangServer(hangLatency)
	defer srv.close()
	var bs []stateBreaker // by replica; newFleetClients makes them in order
	replica := fleetReplica{c.name, c.shared, func(s *redisretry.Store) policy.Policy {
		b := c.newBreaker(s)
		bs = append(bs, b)
		p := hangPolicy()
		p.Breaker = b
		return p
	}}
	clients, closeIdle := newFleetClients(f.contender(replica).wrap)
	defer closeIdle()

	scope := scopeOf(srv.URL)
	ph := newHangPhases(cfg)
	srv.hang(ph.hangAt, ph.recoverAt)
	ctx, stop := context.WithDeadline(context.Background(), ph.end)
	defer stop()
	watch := &circuitWatch{scope: scope, ph: ph, breakers: bs}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch.run(ctx, watchEvery)
	}()
	outs := sendFleet(clients, srv.URL, func(do func(context.Context, int) outcome) []outcome {
		return runFor(fleetWorkers, ph.end, func(ctx context.Context, i int) outcome {
			o := do(ctx, i)
			if !o.ok() {
				pause(ctx, hangPause)
			}
			return o
		})
	})
	<-watched

	r := hangRedisRun{hangRun: hangOutcomes(slices.Concat(outs...), ph), probes: -1, closedAfter: -1}
	hung := srv.hungRequests()
	r.hung = len(hung)
	r.probeInterval = watch.openFor
	if !watch.opened.IsZero() {
		r.probes = 0
		for _, h := range hung {
			if h.at.After(watch.opened) {
				r.probes++
			}
		}
	}
	r.intervals = watch.intervals(c.shared)
	if !watch.closed.IsZero() {
		r.closedAfter = watch.closed.Sub(ph.recoverAt)
	}
	for _, b := range bs {
		if rb, ok := b.(*redisretry.Breaker); ok {
			r.fallbacks += rb.Fallbacks(scope)
		}
	}
	r.roundTrips = f.trips.count() - before
	f.endRun()
	return r, nil
}

// circuitWatch looks at every replica's circuit of one scope through a
// hang run, as its State reports it, and records when they had all
// opened, the open times they ended, their open time at the recovery and
// when they had all closed after it.
type circuitWatch struct {
	scope    string
	ph       hangPhases
	breakers []stateBreaker

	opened time.Time // the first look in the hang at which no circuit was closed; zero if none
	// untils holds, by replica, the end of each opening seen (State.Until
	// while Open), by its number (State.Opens).
	untils []map[uint64]time.Time
	// openFor is the longest open time (State.OpenFor) at the first look
	// from the recovery on, or breaker.DefaultOpenFor if every circuit
	// was closed then.
	openFor time.Duration
	closed  time.Time // the first look from the recovery on at which every circuit was closed; zero if none
}

// run looks at the circuits every interval until ctx ends.
func (cw *circuitWatch) run(ctx context.Context, every time.Duration) {
	cw.untils = make([]map[uint64]time.Time, len(cw.breakers))
	for i := range cw.untils {
		cw.untils[i] = map[uint64]time.Time{}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cw.look(time.Now())
	}
}

// look looks at every circuit once, at now.
func (cw *circuitWatch) look(now time.Time) {
	allOpen, allClosed := true, true
	var openFor time.Duration
	for i, b := range cw.breakers {
		st := b.State(cw.scope)
		if st.Phase == breaker.Closed {
			allOpen = false
		} else {
			allClosed = false
		}
		if st.Phase == breaker.Open {
			cw.untils[i][st.Opens] = st.Until
		}
		openFor = max(openFor, st.OpenFor)
	}
	if cw.opened.IsZero() && allOpen && !now.Before(cw.ph.hangAt) {
		cw.opened = now
	}
	if now.Before(cw.ph.recoverAt) {
		return
	}
	if cw.openFor == 0 {
		cw.openFor = openFor
		if allClosed {
			cw.openFor = breaker.DefaultOpenFor
		}
	}
	if cw.closed.IsZero() && allClosed {
		cw.closed = now
	}
}

// intervals returns the open times that ended while the server hung, once
// every circuit had opened: for a shared circuit, its openings (numbered by
// the fleet, as any replica saw them); for a circuit per replica, each
// replica's, averaged over the replicas.
func (cw *circuitWatch) intervals(shared bool) float64 {
	if cw.opened.IsZero() {
		return 0
	}
	ended := func(until time.Time) bool { return until.After(cw.opened) && until.Before(cw.ph.recoverAt) }
	if shared {
		fleet := map[uint64]time.Time{}
		for _, u := range cw.untils {
			for n, at := range u {
				fleet[n] = later(fleet[n], at)
			}
		}
		n := 0
		for _, at := range fleet {
			if ended(at) {
				n++
			}
		}
		return float64(n)
	}
	n := 0
	for _, u := range cw.untils {
		for _, at := range u {
			if ended(at) {
				n++
			}
		}
	}
	return float64(n) / float64(len(cw.untils))
}

// closedCell formats the time until every circuit was closed, in seconds,
// or "never" for a negative one.
func closedCell(s float64) string {
	if s < 0 {
		return "never"
	}
	return msFromSeconds(s)
}

// writeHangRedisTable prints the hang-redis table, runs[i] the runs of
// cs[i].
func writeHangRedisTable(w io.Writer, cfg config, version string, cs []hangRedisReplica, runs [][]hangRedisRun) {
	t := &table{
		title: fmt.Sprintf("hang-redis: the hang table's server (hung for %v after %v, then healthy for %v) and %d replicas × %d closed-loop workers, "+
			"%v a request, a circuit per replica or one shared through Redis; %s",
			cfg.hangFor, cfg.hangBefore, cfg.hangAfter, fleetClients, fleetWorkers, hangTimeout, plural(cfg.hangRedisRuns, "run")),
		notes: []string{cellsNote(cfg.hangRedisRuns) + " Runs interleaved round by round. " +
			fmt.Sprintf("Every replica is a separate transport (the hang table's policy: standard mode, AttemptTimeout %v, MaxAttempts 1) with its own go-redis client "+
				"to one redis-server %s, emptied before every run, and a redisretry.Store with the defaults (Timeout %v). ", hangTimeout, version, redisretry.DefaultTimeout) +
			fmt.Sprintf("The circuits are looked at every %v through their State (the shared one as each replica last read it). ", watchEvery) +
			"probes: requests that reached the hung server after the first look at which no replica's circuit was closed. " +
			"open times: of those that ended while the server hung after that look, the shared circuit's, or each replica's averaged over the replicas; " +
			"probes per open time is the quotient. hung: every request the server received while it hung. " +
			"all closed: from the recovery to the first look at which every replica's circuit was closed. " +
			"probe interval: the longest open time, before jitter, at the recovery. " +
			fmt.Sprintf("p99 in the hang and failed late as in the hang table. fallbacks: decisions a replica made alone because Redis did not answer within %v. ", redisretry.DefaultTimeout) +
			"Redis trips: the replicas' round trips to Redis."},
		cols: []string{"contender", "probes", "open times", "probes per open time", "hung", "all closed", "probe interval",
			"p99 in the hang", "failed late", "fallbacks", "Redis trips"},
	}
	for i, c := range cs {
		rs := runs[i]
		t.add(c.name,
			spread(column(rs, func(r hangRedisRun) float64 { return float64(r.probes) }), whole),
			spread(column(rs, func(r hangRedisRun) float64 { return r.intervals }), perSecond),
			spread(column(rs, hangRedisRun.perInterval), perSecond),
			spread(column(rs, func(r hangRedisRun) float64 { return float64(r.hung) }), whole),
			spread(column(rs, func(r hangRedisRun) float64 { return r.closedAfter.Seconds() }), closedCell),
			spread(column(rs, func(r hangRedisRun) float64 { return r.probeInterval.Seconds() }), msFromSeconds),
			spread(column(rs, func(r hangRedisRun) float64 { return r.p99.Seconds() }), msFromSeconds),
			failedCell(column(rs, func(r hangRedisRun) float64 { return float64(r.failedLate) })),
			spread(column(rs, func(r hangRedisRun) float64 { return float64(r.fallbacks) }), whole),
			spread(column(rs, func(r hangRedisRun) float64 { return float64(r.roundTrips) }), whole))
	}
	t.write(w)
}

// hangRedisGoals checks the hang-redis goals for the shared circuit name
// on its runs rs: at most one probe per open time for the whole fleet, and
// every replica's circuit closed within one probe interval of the
// recovery, each in every run.
func hangRedisGoals(name string, rs []hangRedisRun) []goal {
	probes, closed := make([]string, len(rs)), make([]string, len(rs))
	probesMet, closedMet := true, true
	for i, r := range rs {
		probes[i] = fmt.Sprintf("%d in %.0f", r.probes, r.intervals)
		if r.probes < 0 {
			probes[i] = "never all open"
		}
		probesMet = probesMet && r.probes >= 0 && float64(r.probes) <= r.intervals
		closed[i] = closedCell(r.closedAfter.Seconds()) + " of " + ms(r.probeInterval)
		closedMet = closedMet && r.closedAfter >= 0 && r.closedAfter <= r.probeInterval
	}
	return []goal{
		{probesMet, fmt.Sprintf("%s: at most 1 probe per open time for the whole fleet in every run: probes in open times, by run: %s",
			name, strings.Join(probes, ", "))},
		{closedMet, fmt.Sprintf("%s: every replica's circuit closed within one probe interval of the recovery in every run: %s",
			name, strings.Join(closed, ", "))},
	}
}
