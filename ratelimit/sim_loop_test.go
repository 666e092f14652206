package ratelimit_test

import (
	"container/heap"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// simLoop is the closed loop the simulations share: workers in virtual
// time, each with one logical request at a time, which it sends through
// its limiter as the transport does. A worker reserves a send token and
// waits as its simWaiting says (simTurn.step), sends, has the limiter
// record the answer, and reserves again when the run says: for a retry of
// the same request, or for the next one. The server, the round trips and
// what an answer does belong to the run, in the funcs below. They draw
// from the run's seeded generator when the loop calls them, and the loop
// calls them in the order of the events, so every run is the same.
type simLoop struct {
	Until time.Duration        // events at or after it are dropped
	Late  func() time.Duration // how late each sleep ends; see simTurn.step

	// Limiter returns worker w's limiter, how w waits for its send token,
	// and the scope w sends to.
	Limiter func(w int) (lim simLimiter, how simWaiting, scope string)

	// Send sends w's attempt req.attempt of req at instant at, and returns
	// how long its answer takes to come back and whether the server
	// throttled it.
	Send func(w int, at time.Duration, req *simRequest) (rtt time.Duration, throttled bool)

	// Record, if set, records in w's limiter, in place of its RecordAt,
	// the outcome k of w's answer that arrives at now, with what else the
	// answer says (a published quota), in one call as the transport does.
	Record func(w int, now time.Time, scope string, k classify.Kind)

	// Answer takes w's answer that arrives at at, which the limiter has
	// recorded, and returns how long w waits before it reserves again and
	// whether req is over: the next reservation then starts a new request.
	Answer func(w int, at time.Duration, throttled bool, req *simRequest) (wait time.Duration, done bool)

	// Reserved, if set, is told the wait of each reservation that
	// ReserveAt granted.
	Reserved func(w int, wait time.Duration)

	// Refused returns how long after a refused reservation w asks again;
	// nil means the run's limiters never refuse, and a refusal panics.
	Refused func(w int) time.Duration

	// Hold, if set, returns the instant at which the client's own event
	// due at at takes place (later while the client stalls); a request
	// already on the wire reaches the server regardless.
	Hold func(at time.Duration) time.Duration
}

// simRequest is a worker's logical request in progress.
type simRequest struct {
	start   time.Duration // when its first reservation was asked; -1 before then
	attempt int           // attempts sent so far
	turn    simTurn
}

// The kinds of a simLoop's events.
const (
	simReserve = iota // the worker asks for its send token, or asks again
	simSend           // the token is due: the worker sends
	simRespond        // the answer arrives
)

// run runs the loop with worker w's first reservation at starts[w], the
// workers scheduled in order.
func (l *simLoop) run(starts []time.Duration) {
	var q simQueue
	reqs := make([]simRequest, len(starts))
	for w, at := range starts {
		reqs[w].start = -1
		q.push(simEvent{at: at, kind: simReserve, worker: w})
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		if e.at >= l.Until {
			continue
		}
		if l.Hold != nil && e.kind != simSend {
			if at := l.Hold(e.at); at != e.at {
				e.at = at
				q.push(e)
				continue
			}
		}
		w, r := e.worker, &reqs[e.worker]
		lim, how, scope := l.Limiter(w)
		now := t0.Add(e.at)
		next := simEvent{at: e.at, kind: simReserve, worker: w}
		switch e.kind {
		case simReserve:
			if r.start < 0 {
				r.start = e.at
			}
			sleep, sendNext, reserved, ok := r.turn.step(lim, how, now, scope, l.Late)
			if !ok {
				if l.Refused == nil {
					panic("simLoop: a limiter refused, and the run has no Refused")
				}
				next.at += l.Refused(w)
				break
			}
			if l.Reserved != nil {
				l.Reserved(w, reserved)
			}
			next.at += sleep
			if sendNext {
				next.kind = simSend
			}
		case simSend:
			r.attempt++
			rtt, throttled := l.Send(w, e.at, r)
			next.at += rtt
			next.kind, next.throttled = simRespond, throttled
		case simRespond:
			k := classify.Success
			if e.throttled {
				k = classify.Throttle
			}
			if l.Record != nil {
				l.Record(w, now, scope, k)
			} else {
				lim.RecordAt(now, scope, k)
			}
			wait, done := l.Answer(w, e.at, e.throttled, r)
			if done {
				*r = simRequest{start: -1}
			}
			next.at += wait
		}
		q.push(next)
	}
}
