package redisretry

import (
	"context"
	"math"
	"time"

	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file is an Adaptive's reserve calls of a scope: the one in flight,
// and the Reserve calls that come meanwhile, which wait for it and then
// take their slots together in one call (see Bursts on [Adaptive]).

// adaptiveCall is one reserve call of the script, for n Reserve calls of
// a scope: the one that made it, or those that came while the scope's
// previous call was in flight, which take their slots in the order they
// came. Its results are set before done is closed.
type adaptiveCall struct {
	n    int             // Reserve calls it serves; guarded by the Adaptive's mutex until it begins
	ctx  context.Context // for the calls that waited: a deadline Timeout after the first came
	done chan struct{}   // closed when the results are in

	// Set when the call begins (beginLocked), under the mutex, before it
	// is made: its maker reads them without the mutex.
	asks  bool       // it asks Redis; if not, it was done when it began
	now   time.Time  // the replica's clock when it began
	sends uint64     // sends made without asking, to report
	notes quotaNotes // published quotas heard of, to report

	err error          // why Redis did not answer
	ans adaptiveAnswer // the answer; zero if Redis was not asked
}

// beginLocked begins c, a call of st, at now. prev is the call before c,
// nil if none. If prev failed, so does c, without asking (the Store's
// circuit is open); if prev said that the scope is neither limited nor
// paced, and no published quota has been heard of since, c's calls are
// sends without asking, as within Refresh of that answer. In both cases c
// is done when beginLocked returns false. Otherwise c takes the sends and
// published quotas to report, and its maker asks Redis (ask). The caller
// holds a.mu.
func (a *Adaptive) beginLocked(st *adaptiveScope, c, prev *adaptiveCall, now time.Time) bool {
	c.now = now
	switch {
	case prev != nil && prev.err != nil:
		c.err = prev.err
		return false
	case prev != nil && !prev.ans.limited() && !st.ans.enabled && !st.paced(now):
		st.unreported += uint64(c.n)
		st.sent += uint64(c.n)
		return false
	}
	c.asks = true
	c.sends, c.notes = st.unreported, st.notes
	st.unreported, st.notes = 0, quotaNotes{}
	return true
}

// ask makes c, the scope's call in flight, which beginLocked began; then,
// in one hold of the mutex, records the answer and begins the call of the
// Reserve calls that came meanwhile (see handOverLocked).
func (a *Adaptive) ask(st *adaptiveScope, scope string, c *adaptiveCall) {
	p := adaptiveParamsOf(a.local())
	ans, err := a.run(c.ctx, c.now, scope, &p, c.sends, "reserve", p.maxWait, c.n, &c.notes)
	now := a.store().now() // when the next call begins

	a.mu.Lock()
	if err != nil {
		st.unreported += c.sends
		st.notes.putBack(c.notes)
		c.err = err
	} else {
		a.answerLocked(st, c.now, &ans)
		st.sent += uint64(ans.taken)
		c.ans = ans
	}
	next := a.handOverLocked(st, c, now)
	a.mu.Unlock()
	close(c.done)
	if next != nil {
		close(next.done)
	}
}

// handOverLocked hands st over from c, its call in flight, now done, to
// the Reserve calls that came meanwhile, if any: their call begins at now,
// and the first of them makes it once c is done. It returns that call if
// it is done already, needing no round trip, for the caller to close its
// done after c's. The caller holds a.mu.
func (a *Adaptive) handOverLocked(st *adaptiveScope, c *adaptiveCall, now time.Time) (done *adaptiveCall) {
	next := st.next
	st.flight, st.next = next, nil
	if next == nil || a.beginLocked(st, next, c, now) {
		return nil
	}
	st.flight = nil
	return next
}

// take returns the reservation of the i-th of the Reserve calls that c,
// now done, served.
func (a *Adaptive) take(st *adaptiveScope, scope string, c *adaptiveCall, i int) (ratelimit.Reservation, time.Duration, bool) {
	if c.err != nil {
		return a.reserveLocal(a.store().now(), scope, st, c.err)
	}
	ans := &c.ans
	if !ans.limited() {
		return ratelimit.Reservation{}, 0, true
	}
	// The slot waits the longer of the CUBIC queue's wait and the
	// published quota's.
	var slot, w float64
	if ans.enabled {
		slot = ans.slot + float64(i)*ans.interval
		if i == ans.taken-1 {
			slot = ans.tat // the script's own figure, which Cancel compares
		}
		w = slot - ans.scriptClock
	}
	wait := micros(max(w, ans.pubWait(i), 0))
	if i >= ans.taken {
		return ratelimit.Reservation{}, wait, false
	}
	if wait == 0 {
		return ratelimit.Reservation{}, 0, true
	}
	t := ratelimit.Ticket{Gen: uint64(c.now.Add(wait).UnixNano()), Seq: math.Float64bits(slot)}
	return ratelimit.NewReservation(a, scope, t), wait, true
}

// reserveLocal is Reserve decided by Local because Redis did not answer
// (err), counted as a fallback of scope, whose record is st.
func (a *Adaptive) reserveLocal(now time.Time, scope string, st *adaptiveScope, err error) (ratelimit.Reservation, time.Duration, bool) {
	a.store().fallback(&a.fb, scope, err)
	r, wait, ok := a.local().ReserveAt(now, scope)
	if ok {
		a.mu.Lock()
		st.sent++
		a.mu.Unlock()
	}
	return r, wait, ok
}
