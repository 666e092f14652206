package redisretry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/clocksample"
)

// This file is what a replica's Breaker knows of one scope: its view of
// the fleet's circuit, how an Allow is decided from it, and how Local's
// circuit is kept in step with the fleet's.

// breakerScope is one scope of a Breaker. Allow's fast path reads only
// the atomics; the rest is guarded by mu.
type breakerScope struct {
	word atomic.Uint64 // epoch<<1 | slow: a new epoch at each change of what the replica knows
	// ticks are Allow's calls on the fast path, which read the clock, to
	// learn whether the view is due a refresh, for one in a few: a busy
	// scope refreshes it within Refresh and a few milliseconds.
	ticks clocksample.Sampler
	fresh atomic.Int64 // Unix time in ns until which the fast path need not read the circuit
	// dirty says that Local may have failures of the scope counted, which
	// a success resets; Breaker.dirty counts the scopes so marked. A scope
	// evicted while marked stays counted, and every success then costs a
	// lookup of its scope: a cost, not an error.
	dirty atomic.Bool

	mu        sync.Mutex
	view      fleetView     // the last answer adopted
	asked     time.Time     // when the last read or open call started; zero if none
	flight    chan struct{} // closed when the read or open call in flight ends; nil if none
	calls     uint64        // calls started, settles included, to number them
	adopted   uint64        // the number of the call whose answer is view
	localOpen bool          // Local's circuit opened by counting, and not closed since as far as known
}

// slow is the bit of a breakerScope's word that sends Allow off its fast
// path: the fleet's circuit is open, or Local's is.
const slow = 1

// fleetView is an answer of the script, on the replica's clock.
type fleetView struct {
	known   bool      // an answer came
	at      time.Time // when the call that brought it was made
	gen     uint64
	open    bool
	until   time.Time // when the open time ends, while open
	since   time.Time // when the phase began
	openFor time.Duration
	opens   uint64
	fails   int
	last    error // nil if none
	leased  bool
}

// plan is what an Allow does, decided under the scope's lock.
type plan uint8

const (
	planPass       plan = iota // let the attempt through
	planRefuse                 // refuse it: the fleet's circuit is open, or its probe out
	planPublishing             // refuse it: Local opened, and the opening is being published
	planCall                   // ask Redis, then decide again without asking
	planWait                   // wait for the call in flight, then decide again without asking
)

// planLocked decides what an Allow of scope at now does, and which op it
// asks Redis for if it calls. mayAsk is false once the Allow has called or
// waited for a call. The caller holds bs.mu.
func (b *Breaker) planLocked(now time.Time, scope string, bs *breakerScope, mayAsk bool) (plan, string) {
	v := &bs.view
	if v.open {
		if now.Before(v.until) {
			return planRefuse, ""
		}
		// The open time is over: one replica of the fleet may probe. While
		// another holds the lease, ask again only after Refresh.
		if !mayAsk || bs.flight != nil || (v.leased && now.Sub(bs.asked) < b.refresh()) {
			return planRefuse, ""
		}
		return planCall, opRead
	}
	if bs.localOpen && b.local().StateAt(now, scope).Phase == breaker.Closed {
		// Local closed on its own, with a probe of its own it let through
		// while Redis did not answer.
		bs.localOpen = false
		b.rewordLocked(bs)
	}
	if bs.localOpen {
		if !mayAsk || bs.flight != nil {
			return planPublishing, ""
		}
		return planCall, opOpen
	}
	if v.known && now.Sub(v.at) < b.refresh() {
		return planPass, ""
	}
	// What the replica knows is older than Refresh: the fleet's circuit
	// may have opened since. A burst of attempts after a quiet spell waits
	// for the one read rather than go to a server the fleet has given up.
	switch {
	case !mayAsk:
	case bs.flight != nil:
		return planWait, ""
	case bs.asked.IsZero() || now.Sub(bs.asked) >= b.refresh():
		return planCall, opRead
	}
	return planPass, "" // the last read failed, less than Refresh ago
}

// startLocked starts a call at now and returns its number; single says
// it is a read or open call, of which one is in flight at a time (see
// endLocked). The caller holds bs.mu.
func (bs *breakerScope) startLocked(now time.Time, single bool) uint64 {
	if single {
		bs.flight, bs.asked = make(chan struct{}), now
	}
	bs.calls++
	return bs.calls
}

// endLocked ends the read or open call in flight, releasing the Allow
// calls that wait for it. The caller holds bs.mu.
func (bs *breakerScope) endLocked() {
	close(bs.flight)
	bs.flight = nil
}

// adoptLocked makes ans, the answer of call number n made at now, bs's
// view, unless a later call's answer was adopted already. It reports
// whether Local's circuit must be brought to closed (see closeLocal): the
// fleet's circuit was found closed after it was open, or in a new
// generation while Local's was open.
// The caller holds bs.mu.
func (b *Breaker) adoptLocked(bs *breakerScope, n uint64, now time.Time, ans *fleetAnswer) (closeLocal bool) {
	if n < bs.adopted {
		return false
	}
	bs.adopted = n
	old := bs.view
	v := fleetView{
		known: true, at: now, gen: ans.gen, open: ans.open, since: now.Add(-ans.ago), openFor: ans.openFor,
		opens: ans.opens, fails: ans.fails, last: old.last, leased: ans.leased,
	}
	if ans.open {
		v.until = now.Add(ans.left)
	}
	f, _ := old.last.(*fleetFailure)
	switch {
	case ans.last == "":
		v.last = nil
	case f == nil || f.text != ans.last || f.deadline != ans.deadline:
		v.last = &fleetFailure{text: ans.last, deadline: ans.deadline}
	}
	bs.view = v
	bs.fresh.Store(now.Add(b.refresh()).UnixNano())
	// Local's opening, published or not, is set aside when the fleet's
	// circuit closed since the replica last read it: its failures may be
	// older than the probe that closed it.
	closeLocal = !v.open && (old.open || (bs.localOpen && v.gen != old.gen))
	if closeLocal {
		bs.localOpen = false
	}
	if closeLocal || !old.known || old.gen != v.gen || old.open != v.open {
		b.rewordLocked(bs)
	}
	return closeLocal
}

// rewordLocked starts a new epoch of bs, with the slow bit as its view and
// Local's circuit say: the passes of the epoch before no longer count. The
// caller holds bs.mu.
func (b *Breaker) rewordLocked(bs *breakerScope) {
	w := b.gens.Add(1) << 1
	if bs.view.open || bs.localOpen {
		w |= slow
	}
	bs.word.Store(w)
}

// closeLocal brings Local's circuit of scope to closed as of now, after
// the fleet's circuit closed: a probe of the fleet succeeded, which is as
// much evidence that the server answers as a probe of Local's own. It
// lets Local's probes through (ending its open time early if need be) and
// settles them as successes; Local's OnChange, if set, hears of it. If
// Local has probes of its own in flight, their outcomes settle it instead.
func (b *Breaker) closeLocal(now time.Time, scope string) {
	l := b.local()
	for range max(l.Probes, 1) {
		st := l.StateAt(now, scope)
		if st.Phase == breaker.Closed {
			return
		}
		at := now
		if st.Phase == breaker.Open && st.Until.After(now) {
			at = st.Until
		}
		p, err := l.AllowAt(at, scope)
		if err != nil {
			return
		}
		l.DoneAt(now, p, classify.Outcome{Kind: classify.Success}, nil)
		if !p.Probe() {
			return
		}
	}
}
