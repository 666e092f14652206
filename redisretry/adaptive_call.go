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
	n    int             // Reserve calls it serves; guarded by the Adaptive's mutex until it is made
	ctx  context.Context // for the calls that waited: a deadline Timeout after the first came
	done chan struct{}   // closed when the results are in

	now time.Time      // the replica's clock when the call was made
	err error          // why Redis did not answer
	ans adaptiveAnswer // the answer; zero if the call was not made
}

// call makes c, the scope's call in flight, at now, then hands the scope
// over to the calls that came meanwhile. prev is the call before c, nil if
// none. If prev failed, so does c, without asking (the Store's circuit is
// open); if prev said that the scope is neither limited nor paced, and no
// published quota has been heard of since, c's calls are sends without
// asking, as within Refresh of that answer. The call reports the published
// quotas heard of since the last one.
func (a *Adaptive) call(st *adaptiveScope, scope string, c, prev *adaptiveCall, now time.Time) {
	defer func() {
		a.mu.Lock()
		st.flight, st.next = st.next, nil
		a.mu.Unlock()
		close(c.done)
	}()
	c.now = now
	a.mu.Lock()
	switch {
	case prev != nil && prev.err != nil:
		c.err = prev.err
		a.mu.Unlock()
		return
	case prev != nil && !prev.ans.limited() && !st.ans.enabled && !st.paced(now):
		st.unreported += uint64(c.n)
		st.sent += uint64(c.n)
		a.mu.Unlock()
		return
	}
	n, sends, notes := c.n, st.unreported, st.notes
	st.unreported, st.notes = 0, quotaNotes{}
	a.mu.Unlock()

	p := adaptiveParamsOf(a.local())
	ans, err := a.run(c.ctx, now, scope, &p, sends, "reserve", p.maxWait, n, &notes)

	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		st.unreported += sends
		st.notes.putBack(notes)
		c.err = err
		return
	}
	a.answerLocked(st, now, &ans)
	st.sent += uint64(ans.taken)
	c.ans = ans
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
