package redisretry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// DefaultBreakerRefresh is how long a replica believes what it last read
// of a scope's shared circuit when Breaker.Refresh is zero: 100 ms.
const DefaultBreakerRefresh = 100 * time.Millisecond

// Breaker is a circuit breaker ([breaker.Breaker]) whose circuit per scope
// is shared by a fleet of replicas through Redis: when one replica opens a
// scope's circuit, every replica refuses its attempts, and once the open
// time is over one replica of the whole fleet at a time sends a probe,
// whose success closes the circuit for every replica. Its rules are
// breaker.Circuit's, with the parameters of Local (Failures, Stalls,
// StallFor, Trips, OpenFor, MaxOpenFor, ProbeLease, Rand), and its
// refusals are a [*breaker.OpenError] that carries the last failure the
// fleet counted. Breaker implements [ratelimit.FallbackCounter].
//
// # Opening
//
// Each replica counts the failures of its own attempts in Local, as a
// breaker.Circuit does in process: Failures in a row (5), or Stalls (2)
// ending in a Timeout when no attempt has succeeded for StallFor. When
// Local opens, the replica publishes it, in one round trip: the fleet's
// circuit opens until Local's open time ends, with Local's last failure
// and a new generation, unless another replica opened it first (then the
// replica adopts that opening) or it closed since the replica last read
// it (then the replica's failures may be older than the probe that closed
// it, and Local is closed again). The other replicas refuse the scope's
// attempts from their next read of it on.
//
// # Probing
//
// Once the open time is over, the first replica to ask takes the probe
// lease, a field of the scope's key that one replica holds at a time, and
// lets one attempt through as a probe; the others keep refusing, and ask
// again every Refresh. The probe's outcome is one round trip: a success
// closes the circuit for the fleet, a failure opens it again for twice the
// open time (up to MaxOpenFor, jittered as a Circuit's), and a probe
// dropped, or ending with a Throttle or Fatal outcome, releases the lease.
// A lease not released within Local's ProbeLease (30 s) expires, so that a
// replica that dies while probing holds up the fleet for that long at most;
// set ProbeLease a little above the attempt timeout to make it shorter. So
// the fleet sends one probe per open time, however many replicas it has,
// and the replicas hear that the circuit closed within Refresh of the
// probe's success, at their next Allow.
//
// # Round trips
//
// While a scope's circuit is closed, Allow makes no round trip, but for
// one per Refresh in which the replica sends, to read the fleet's circuit,
// and Done none for a success: a replica learns that another opened the
// circuit at its first Allow after Refresh, or sooner when an attempt of
// its own fails (a failure reads the circuit too, at most once per
// Refresh). Closed, Allow takes no lock and reads the clock for one call
// in a few (up to one in 16 on a busy scope, as breaker.Circuit's Done of
// a success does; so a busy scope that falls quiet may let up to 15
// attempts through on what it last read before it reads again), and Allow
// with a successful Done allocates nothing. While it is open, Allow
// refuses without a round trip until the open time ends; then each
// replica makes at most one round trip per Refresh until the circuit
// closes, and the prober one to take the lease and one to settle the
// probe. A replica has at most one read, opening or lease call of a scope
// in flight: the Allow calls that come meanwhile decide from what it last
// read, without waiting, unless that is Refresh old or more on a closed
// circuit: then they wait for the answer (within its Timeout), so that a
// burst after a quiet spell does not go to a server the fleet has given
// up on. A Breaker's calls touch one key per scope,
// Prefix + "{" + scope + "}:breaker", through one Lua script.
//
// # Failures
//
// No call waits on Redis longer than the Store's Timeout, and an Allow
// makes one call at most. When a call fails (see [Store]), the replica
// counts a fallback of the scope and Local decides: a replica whose Local
// opened refuses on its own, and, once Local's open time is over, probes
// on its own as in process; a replica whose Local is closed lets attempts
// through, even while the fleet's circuit is open past its open time, and
// counts their failures in Local. An open time the replica read is
// honoured without Redis. Local hears the outcomes of the attempts the
// Breaker lets through, but for probes: every failure, the successes that
// follow one, and one success in a few for its stall rule's clock, so that
// it holds the replica's recent history when Redis fails. When the fleet's
// circuit closes, Local is closed too, with a success of its own probe, so
// that its count starts again and it does not refuse what the fleet lets
// through; Local's OnChange, if set, hears Local's changes, not the
// fleet's.
//
// Local must be this Breaker's own, used by nothing else: a nil Local
// means a breaker.Circuit with its defaults and the Store's Now. The
// Store's Now is the Breaker's clock, which Local's should be too; when it
// is set, the script takes the fleet's time from it as well (see Store).
//
// A Breaker is safe for concurrent use and starts no goroutine. Its State
// reports the fleet's circuit as the replica last read it. It must not be
// copied, nor its fields changed, after first use.
type Breaker struct {
	// Store is where the circuits live; nil means a Store without a
	// client, so that Local makes every decision.
	Store *Store
	// Local holds the parameters and this replica's own circuit; nil means
	// a breaker.Circuit with its defaults. Its Probes and MaxScopes apply
	// to its own decisions only: the fleet sends one probe at a time, and
	// the Breaker keeps at most the Store's MaxScopes scopes.
	Local *breaker.Circuit
	// Refresh is how long a replica believes what it last read of a
	// scope's circuit: a replica sending to a closed scope reads it again
	// after Refresh, and one waiting for another's probe asks again after
	// Refresh. Zero means DefaultBreakerRefresh (100 ms).
	Refresh time.Duration

	defOnce  sync.Once
	defLocal *breaker.Circuit

	gens   atomic.Uint64 // the last epoch handed out, for all scopes
	dirty  atomic.Int64  // scopes marked dirty: while none is, a success need not reach Local
	scopes scopemap.Sync[breakerScope]

	fb   fallbacks
	none noStore
}

var (
	_ breaker.Breaker = (*Breaker)(nil)
	_ breaker.Settler = (*Breaker)(nil)
)

// Breaker returns a [Breaker] in s whose parameters and local fallback
// circuit are local (nil means a breaker.Circuit with its defaults).
func (s *Store) Breaker(local *breaker.Circuit) *Breaker { return &Breaker{Store: s, Local: local} }

// Allow asks to send one attempt of scope now. It returns a Pass, a probe
// if the replica took the probe lease, or the zero Pass and an error
// wrapping breaker.ErrOpen: the fleet's [*breaker.OpenError], open until
// its Until or, with Until zero, its probe out with another replica, or
// Local's when Local decides. It makes at most one round trip, within the
// Store's Timeout (see Round trips on [Breaker]).
func (b *Breaker) Allow(scope string) (breaker.Pass, error) {
	bs := b.scope(scope)
	w := bs.word.Load()
	if w&slow != 0 {
		return b.allow(b.now(), scope, bs)
	}
	if !bs.ticks.Due() {
		return breaker.NewPass(b, scope, breaker.Ticket{Gen: w >> 1}, false), nil
	}
	now := b.now()
	bs.ticks.Stamp(now)
	if now.UnixNano() < bs.fresh.Load() {
		return breaker.NewPass(b, scope, breaker.Ticket{Gen: w >> 1, Seq: feed}, false), nil
	}
	return b.allow(now, scope, bs)
}

// feed marks, in its Ticket's Seq, a pass of a closed circuit whose
// success Local hears, to note its time for the stall rule: one in a few
// (see tick), and every pass handed out off the fast path. Local hears
// every failure, and the successes that follow one (see Done).
const feed = 1

// allow is Allow off its fast path, at now.
func (b *Breaker) allow(now time.Time, scope string, bs *breakerScope) (breaker.Pass, error) {
	bs.mu.Lock()
	pl, op := b.planLocked(now, scope, bs, true)
	switch pl {
	case planWait:
		ch := bs.flight
		bs.mu.Unlock()
		<-ch // within the call's Timeout
		bs.mu.Lock()
		pl, _ = b.planLocked(now, scope, bs, false)
	case planCall:
		var args []any
		if op == opOpen {
			args = openArgs(now, bs.view.gen, b.local().StateAt(now, scope))
		} else {
			_, _, lease := circuitParams(b.local())
			args = []any{lease.Microseconds()}
		}
		n := bs.startLocked(now, true)
		bs.mu.Unlock()
		ans, err := b.run(now, scope, op, args...)
		bs.mu.Lock()
		bs.endLocked()
		if err != nil {
			w := bs.word.Load()
			bs.mu.Unlock()
			b.store().fallback(&b.fb, scope, err)
			return b.localDecides(now, scope, w)
		}
		closeLocal := b.adoptLocked(bs, n, now, &ans)
		if ans.token != 0 {
			bs.view.leased = true
			bs.mu.Unlock()
			return breaker.NewPass(b, scope, breaker.Ticket{Gen: ans.gen, Seq: ans.token}, true), nil
		}
		if closeLocal {
			bs.mu.Unlock()
			b.closeLocal(now, scope)
			bs.mu.Lock()
		}
		pl, _ = b.planLocked(now, scope, bs, false)
	}
	w, v := bs.word.Load(), bs.view
	bs.mu.Unlock()
	switch pl {
	case planRefuse:
		e := &breaker.OpenError{Scope: scope, Last: v.last}
		if now.Before(v.until) {
			e.Until = v.until
		}
		return breaker.Pass{}, e
	case planPublishing:
		// Local refuses, but lets no probe through: the fleet's circuit
		// is about to open, and its probes are the fleet's.
		st := b.local().StateAt(now, scope)
		return breaker.Pass{}, &breaker.OpenError{Scope: scope, Last: st.Last, Until: st.Until}
	}
	return breaker.NewPass(b, scope, breaker.Ticket{Gen: w >> 1, Seq: feed}, false), nil
}

// localDecides is Allow of scope decided by Local as of now: Local's
// refusal, its probe, or a pass of the Breaker in epoch w>>1, whose outcome
// Local hears.
func (b *Breaker) localDecides(now time.Time, scope string, w uint64) (breaker.Pass, error) {
	p, err := b.local().AllowAt(now, scope)
	if err != nil || p.Probe() {
		return p, err // Local's own probe: Local hears its outcome
	}
	return breaker.NewPass(b, scope, breaker.Ticket{Gen: w >> 1, Seq: feed}, false), nil
}

// Done hears the outcome of the attempt p let through, as
// [breaker.Pass.Done] describes; Pass.Done calls it. A success makes no
// round trip. A failure is counted in Local; if it opens Local, or the
// replica last read the scope's circuit Refresh or more ago, it makes one
// round trip to publish the opening or read the circuit. A probe's outcome
// is one round trip, which closes the fleet's circuit or opens it again.
func (b *Breaker) Done(p breaker.Pass, out classify.Outcome, err error) {
	v := b.verdict(out, err)
	if p.Probe() {
		b.settle(p, v, out, err)
		return
	}
	switch v {
	case dropped:
		return
	case succeeded:
		// Nothing goes to Redis. Local hears the success if it may have
		// failures to forget (some scope has), or to note the time of one
		// success in a few.
		if p.Ticket().Seq&feed != 0 || b.dirty.Load() > 0 {
			b.succeeded(p, out)
		}
		return
	}
	bs := b.scopes.Peek(p.Scope())
	if bs == nil || bs.word.Load()>>1 != p.Ticket().Gen {
		return // let through before the replica learnt of a change
	}
	l := b.local()
	lp, lerr := l.Allow(p.Scope())
	if lerr != nil {
		return // Local is open on its own after a fallback; not counted
	}
	lp.Done(out, err)
	if bs.dirty.CompareAndSwap(false, true) { // after Local counted it: see succeeded
		b.dirty.Add(1)
	}
	now := b.now()
	opened := !lp.Probe() && l.StateAt(now, p.Scope()).Phase != breaker.Closed
	b.failed(now, p.Scope(), bs, opened)
}

// succeeded has Local hear the success out of pass p, if p is marked to
// feed it or Local has failures of the scope to forget.
func (b *Breaker) succeeded(p breaker.Pass, out classify.Outcome) {
	bs := b.scopes.Peek(p.Scope())
	// Clear the mark before Local hears the success, so that a failure
	// Local hears meanwhile leaves it set: the mark is clear only while
	// Local has no failure counted.
	dirty := bs != nil && bs.dirty.CompareAndSwap(true, false)
	if dirty {
		b.dirty.Add(-1)
	}
	if !dirty && p.Ticket().Seq&feed == 0 {
		return
	}
	if lp, err := b.local().Allow(p.Scope()); err == nil {
		lp.Done(out, nil)
	}
}

// failed follows a failure of an attempt of scope at now: it publishes
// Local's opening, if opened, or reads the fleet's circuit if the replica
// last did Refresh or more ago.
func (b *Breaker) failed(now time.Time, scope string, bs *breakerScope, opened bool) {
	bs.mu.Lock()
	if opened && !bs.localOpen {
		bs.localOpen = true
		b.rewordLocked(bs)
	}
	var op string
	var args []any
	switch {
	case bs.flight != nil || bs.view.open:
	case bs.localOpen:
		op, args = opOpen, openArgs(now, bs.view.gen, b.local().StateAt(now, scope))
	case (!bs.view.known || now.Sub(bs.view.at) >= b.refresh()) && (bs.asked.IsZero() || now.Sub(bs.asked) >= b.refresh()):
		op, args = opRead, []any{0} // no lease: there is no attempt to probe with
	}
	if op == "" {
		bs.mu.Unlock()
		return
	}
	n := bs.startLocked(now, true)
	bs.mu.Unlock()
	ans, err := b.run(now, scope, op, args...)
	bs.mu.Lock()
	bs.endLocked()
	b.answered(now, scope, bs, n, &ans, err)
}

// settle sends the outcome v of probe p, with out and err, to Redis.
func (b *Breaker) settle(p breaker.Pass, v verdict, out classify.Outcome, err error) {
	verdict := "drop"
	switch v {
	case succeeded:
		verdict = "ok"
	case failed:
		verdict = "fail"
	}
	now := b.now()
	bs := b.scope(p.Scope())
	bs.mu.Lock()
	n := bs.startLocked(now, false)
	bs.mu.Unlock()
	ans, rerr := b.run(now, p.Scope(), opSettle, b.settleArgs(p, verdict, out, err)...)
	bs.mu.Lock()
	b.answered(now, p.Scope(), bs, n, &ans, rerr)
}

// answered adopts ans, the answer of call number n of scope made at now,
// or counts a fallback if the call failed with err, and closes Local if
// the fleet's circuit closed. The caller holds bs.mu, which answered
// releases.
func (b *Breaker) answered(now time.Time, scope string, bs *breakerScope, n uint64, ans *fleetAnswer, err error) {
	if err != nil {
		bs.mu.Unlock()
		b.store().fallback(&b.fb, scope, err)
		return
	}
	closeLocal := b.adoptLocked(bs, n, now, ans)
	bs.mu.Unlock()
	if closeLocal {
		b.closeLocal(now, scope)
	}
}

// Drop hears that the attempt p let through was not sent, or that its
// caller gave up on it; Pass.Drop calls it. A probe's lease is released,
// in one round trip, so that a replica may probe at once; any other pass
// needs nothing.
func (b *Breaker) Drop(p breaker.Pass) {
	if p.Probe() {
		b.settle(p, dropped, classify.Outcome{}, nil)
	}
}

// State returns the scope's circuit as the replica last read it from
// Redis, without a round trip: its phase, since when, the open time and
// its end, the openings and the last failure, the fleet's; the failures
// counted while closed, and the probes while half-open, as the replica
// knows them (1 while the lease is held). An open circuit whose open time
// is over is reported HalfOpen. Before the first read, while the Store's
// circuit is open, or while Local's opening is being published, it
// returns Local's state.
func (b *Breaker) State(scope string) breaker.State {
	now := b.now()
	l := b.local()
	bs := b.scopes.Peek(scope)
	if bs == nil || b.store().down() {
		return l.StateAt(now, scope)
	}
	bs.mu.Lock()
	v, localOpen := bs.view, bs.localOpen
	bs.mu.Unlock()
	if !v.known || (!v.open && localOpen) {
		return l.StateAt(now, scope)
	}
	st := breaker.State{Since: v.since, Failures: v.fails, OpenFor: v.openFor, Opens: v.opens, Last: v.last}
	switch {
	case !v.open:
		st.Failures = l.StateAt(now, scope).Failures
	case now.Before(v.until):
		st.Phase, st.Until = breaker.Open, v.until
	default:
		st.Phase, st.Since = breaker.HalfOpen, v.until
		if v.leased {
			st.Probes = 1
		}
	}
	return st
}

// Fallbacks returns how many of scope's calls to Redis failed, each
// leaving a decision to Local (see Failures on [Breaker]).
func (b *Breaker) Fallbacks(scope string) uint64 { return b.fb.get(scope) }

// verdict is what an outcome says of the server, to the circuit.
type verdict uint8

const (
	dropped   verdict = iota // nothing: a Throttle, a Fatal outcome, an outcome Trips does not count, a Drop
	succeeded                // it answers
	failed                   // it is in trouble
)

// verdict returns what out, with err its attempt's error, counts as, as
// Local counts it (breaker.Circuit.Failure).
func (b *Breaker) verdict(out classify.Outcome, err error) verdict {
	switch {
	case out.Kind == classify.Success:
		return succeeded
	case b.local().Failure(out, err):
		return failed
	}
	return dropped
}

// scope returns scope's record, creating it if needed. Finding a stored
// scope takes no lock.
func (b *Breaker) scope(scope string) *breakerScope {
	if bs := b.scopes.Get(scope); bs != nil {
		return bs
	}
	return b.scopes.Add(scope, b.store().maxScopes(), func(bs *breakerScope) {
		bs.word.Store(b.gens.Add(1) << 1)
	})
}

// local returns Local, or a breaker.Circuit with the defaults.
func (b *Breaker) local() *breaker.Circuit {
	if b.Local != nil {
		return b.Local
	}
	b.defOnce.Do(func() { b.defLocal = &breaker.Circuit{MaxScopes: b.store().maxScopes(), Now: b.store().Now} })
	return b.defLocal
}

func (b *Breaker) refresh() time.Duration { return positive(b.Refresh, DefaultBreakerRefresh) }
func (b *Breaker) now() time.Time         { return b.store().now() }

// store returns Store, or a Store without a client if Store is nil.
func (b *Breaker) store() *Store { return b.none.or(b.Store) }
