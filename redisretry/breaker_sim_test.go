package redisretry_test

import (
	"container/heap"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
)

// hangSim is a fleet sending to a server that hangs, in virtual time: each
// replica's workers send requests in closed loops to a server that is
// healthy, then accepts requests and never answers them for a while, then
// is healthy again.
type hangSim struct {
	replicas, workers int           // replicas, and closed-loop callers in each
	at, For, end      time.Duration // the hang: from at, for For; the run's length
	timeout           time.Duration // an attempt sent during the hang fails after it, as a Timeout
	latency           time.Duration // a healthy answer takes this long
	pause             time.Duration // a refused caller asks again after this
}

// issueFleetHang is the issue's goal: a fleet of 8 replicas, here with 2
// callers each, through a 5 s hang, with 500 ms attempt timeouts.
var issueFleetHang = hangSim{
	replicas: 8, workers: 2, at: 3 * time.Second, For: 5 * time.Second, end: 13 * time.Second,
	timeout: 500 * time.Millisecond, latency: 5 * time.Millisecond, pause: 5 * time.Millisecond,
}

// hangResult is what a run measured.
type hangResult struct {
	hung      int            // attempts the server received while it hung
	probed    int            // probes among them
	probes    map[string]int // probes sent while it hung, per generation of the circuit that let them through
	closedIn  []time.Duration
	probeGap  time.Duration // the open time in force at the recovery, before jitter: the probe interval
	refusedAt int           // refusals
}

// run simulates h on clock with bs, one breaker per replica: each
// replica's first success that ends after the recovery is when it closed.
func (h hangSim) run(clock *faketime.Clock, bs []breaker.Breaker) hangResult {
	t0 := clock.Now()
	recovery := h.at + h.For
	r := hangResult{probes: map[string]int{}, closedIn: make([]time.Duration, len(bs))}
	for i := range r.closedIn {
		r.closedIn[i] = -1
	}
	type step struct {
		ends bool
		pass breaker.Pass
		out  classify.Outcome
	}
	n := h.replicas * h.workers
	steps := make([]step, n)
	var q simQueue // sim_test.go's
	var seq uint64
	schedule := func(w int, at time.Duration, s step) {
		seq++
		steps[w] = s
		heap.Push(&q, simEvent{at: at, seq: seq, worker: w})
	}
	for w := range n {
		schedule(w, time.Duration(w)*h.latency/time.Duration(n), step{})
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		clock.Advance(t0.Add(e.at).Sub(clock.Now()))
		if e.at >= recovery && r.probeGap == 0 {
			// The prober's view: the open time in force, whose end brings
			// the next probe.
			r.probeGap = bs[h.replicas-1].(interface{ State(string) breaker.State }).State(scope).OpenFor
		}
		rep := e.worker / h.workers
		b := bs[rep]
		if s := steps[e.worker]; s.ends {
			var err error
			if s.out.Kind == classify.Timeout {
				err = context.DeadlineExceeded
			}
			s.pass.Done(s.out, err)
			if s.out.Kind == classify.Success && e.at >= recovery && r.closedIn[rep] < 0 {
				r.closedIn[rep] = e.at - recovery
			}
			if e.at < h.end {
				schedule(e.worker, e.at, step{})
			}
			continue
		}
		p, err := b.Allow(scope)
		if err != nil {
			r.refusedAt++
			if e.at < h.end {
				schedule(e.worker, e.at+h.pause, step{})
			}
			continue
		}
		if e.at >= h.at && e.at < recovery {
			r.hung++
			if p.Probe() {
				r.probed++
				r.probes[fmt.Sprint(p.Ticket().Gen)]++
			}
			schedule(e.worker, e.at+h.timeout, step{ends: true, pass: p, out: timedOut})
			continue
		}
		schedule(e.worker, e.at+h.latency, step{ends: true, pass: p, out: answered})
	}
	return r
}

// TestBreakerFleetThroughHang is the issue's goal for a fleet: 8 replicas
// sharing one Breaker's circuit through Redis ride out a 5 s hang with at
// most one probe per open time for the whole fleet, where 8 in-process
// circuits send one each, and every replica closes within one probe
// interval of the recovery.
func TestBreakerFleetThroughHang(t *testing.T) {
	srv := startRedis(t)
	h := issueFleetHang

	clock := faketime.New()
	fleet := breakerFleet(t, srv, h.replicas, clock, nil)
	shared := make([]breaker.Breaker, len(fleet))
	for i, b := range fleet {
		shared[i] = b
	}
	got := h.run(clock, shared)

	clock = faketime.New()
	alone := make([]breaker.Breaker, h.replicas)
	for i := range alone {
		alone[i] = &breaker.Circuit{Now: clock.Now, Rand: func() float64 { return 0.5 }, Trips: fiveXX}
	}
	base := h.run(clock, alone)

	t.Logf("shared: %d attempts to the hung server, %d probes (per generation %v), replicas closed %v after the recovery (probe interval %v)",
		got.hung, got.probed, got.probes, got.closedIn, got.probeGap)
	t.Logf("in process: %d attempts to the hung server, %d probes, replicas closed %v after the recovery",
		base.hung, base.probed, base.closedIn)
	if len(got.probes) == 0 {
		t.Fatal("the shared circuit sent no probe during the hang; want one per open time")
	}
	for gen, n := range got.probes {
		if n != 1 {
			t.Errorf("the fleet sent %d probes in the open time of generation %s; want 1", n, gen)
		}
	}
	for i, d := range got.closedIn {
		if d < 0 || d > got.probeGap {
			t.Errorf("replica %d closed %v after the recovery; want within the probe interval %v", i, d, got.probeGap)
		}
	}
	if got.hung >= base.hung {
		t.Errorf("the hung server received %d attempts from the sharing fleet, %d from in-process circuits; want fewer", got.hung, base.hung)
	}
}
