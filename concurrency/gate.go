package concurrency

import (
	"context"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// gate is one scope's places: how many there are, how many are taken, and
// the callers waiting for one, first come first served. [Adaptive] and
// [Fixed] keep one per scope; an Adaptive's also learns its limit (est).
// Its fields are guarded by mu.
type gate struct {
	mu       sync.Mutex
	limit    int    // places; at least 1
	inFlight int    // places taken and not given back
	taken    uint64 // places ever handed out: the seq of the latest Permit
	refused  uint64 // acquisitions refused with ErrLimited
	waiters  waitQueue
	est      *estimator // nil for a Fixed; set before the gate is stored
}

// waiter is a caller waiting for a place. Whoever hands it one sets p and
// granted and closes ready, under the gate's mu; a waiter that gives up
// first leaves the queue under the same lock, so a place is never handed
// to a waiter that left.
type waiter struct {
	ready      chan struct{}
	p          Permit
	granted    bool
	prev, next *waiter
}

// waitQueue is a FIFO of waiters, a doubly linked list so that one who
// gives up leaves it in O(1). The zero value is empty.
type waitQueue struct {
	head, tail *waiter
	n          int
}

func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
}

// acquire takes a place: at once if one is free and nobody waits for one;
// otherwise, if maxWait is positive, it waits in line until a place is
// handed to it, maxWait passes (on the timer after makes; nil means a real
// timer) or ctx ends. A free place does not allocate.
func (g *gate) acquire(ctx context.Context, maxWait time.Duration, after func(time.Duration) <-chan time.Time) (Permit, error) {
	g.mu.Lock()
	if g.inFlight < g.limit && g.waiters.n == 0 {
		p := g.takeLocked()
		g.mu.Unlock()
		return p, nil
	}
	return g.acquireSlow(ctx, maxWait, after)
}

// acquireSlow is acquire when no place is free at once: it refuses, or
// waits in line. The caller holds g.mu, which acquireSlow releases.
func (g *gate) acquireSlow(ctx context.Context, maxWait time.Duration, after func(time.Duration) <-chan time.Time) (Permit, error) {
	if g.est != nil {
		g.est.wanted(g.inFlight + 1)
	}
	if maxWait <= 0 {
		g.refused++
		g.mu.Unlock()
		return Permit{}, ErrLimited
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return Permit{}, err
	}
	w := &waiter{ready: make(chan struct{})}
	g.waiters.push(w)
	g.mu.Unlock()

	var expired <-chan time.Time
	if after != nil {
		expired = after(maxWait)
	} else {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		expired = t.C
	}
	var err error
	select {
	case <-w.ready:
		return w.p, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = ErrLimited
	}

	g.mu.Lock()
	if w.granted {
		// A place came as the wait ended. Out of time, the caller may
		// still use it; with its context ended it cannot, and the place
		// goes to the next in line.
		g.mu.Unlock()
		if err == ErrLimited {
			return w.p, nil
		}
		w.p.Drop()
		return Permit{}, err
	}
	g.waiters.remove(w)
	if err == ErrLimited {
		g.refused++
	}
	g.mu.Unlock()
	return Permit{}, err
}

// takeLocked hands out a place. The caller holds g.mu and has checked
// that one is free.
func (g *gate) takeLocked() Permit {
	g.inFlight++
	g.taken++
	if g.est != nil {
		g.est.wanted(g.inFlight)
	}
	return Permit{g: g, seq: g.taken, in: g.inFlight, timed: g.est != nil && g.est.times(g.taken)}
}

// admitLocked hands free places to the callers waiting, first in line
// first. The caller holds g.mu.
func (g *gate) admitLocked() {
	for g.inFlight < g.limit && g.waiters.head != nil {
		w := g.waiters.head
		g.waiters.remove(w)
		w.p, w.granted = g.takeLocked(), true
		close(w.ready)
	}
}

// release gives back p's place. An Adaptive's estimator first takes the
// attempt's end: if sent, its latency and outcome kind, which may move the
// limit. The place, and any the limit gained, go to the callers waiting.
func (g *gate) release(p Permit, latency time.Duration, k classify.Kind, sent bool) {
	g.mu.Lock()
	if g.inFlight > 0 {
		g.inFlight--
	}
	if g.est != nil && g.est.learn(p, latency, k, sent, g.taken) {
		g.limit = g.est.places()
	}
	if g.waiters.head != nil {
		g.admitLocked()
	}
	g.mu.Unlock()
}

// state returns a snapshot of g.
func (g *gate) state() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := State{Limit: g.limit, InFlight: g.inFlight, Waiting: g.waiters.n, Refused: g.refused}
	if g.est != nil {
		s.MinLatency, s.Latency = g.est.noLoad(), g.est.lastMean()
	}
	return s
}
