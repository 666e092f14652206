package breaker_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// TestHalfOpenAfterOpenTime: the circuit refuses every attempt until its
// open time ends; then it lets one probe through and refuses the others,
// with an *OpenError whose Until is zero.
func TestHalfOpenAfterOpenTime(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()) - time.Nanosecond)
	if oe := openError(t, c, scope); !oe.Until.Equal(until) {
		t.Errorf("OpenError.Until 1 ns before the open time ends = %v; want %v", oe.Until, until)
	}
	clk.Advance(time.Nanosecond)
	p := mustAllow(t, c, scope)
	if !p.Probe() {
		t.Fatalf("Allow once the open time is over: Probe() = false; want a probe")
	}
	oe := openError(t, c, scope)
	if !oe.Until.IsZero() || oe.Last == nil || oe.Last.Error() != errRefused.Error() {
		t.Errorf("OpenError while the probe is out = {Until: %v, Last: %v}; want {zero, %v}", oe.Until, oe.Last, errRefused)
	}
	if st := c.State(scope); st.Phase != breaker.HalfOpen || st.Probes != 1 {
		t.Errorf("State while the probe is out = %v, %d probes; want half-open, 1", st.Phase, st.Probes)
	}
	p.Drop()
}

// TestProbeSuccessCloses: a successful probe closes the circuit, which
// then lets every attempt through and counts failures from zero.
func TestProbeSuccessCloses(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()))
	mustAllow(t, c, scope).Done(ok, nil)
	st := c.State(scope)
	if st.Phase != breaker.Closed || st.Failures != 0 || st.OpenFor != 0 || !st.Since.Equal(until) {
		t.Errorf("State after a successful probe = %+v; want closed since %v, 0 failures, OpenFor 0", st, until)
	}
	for range 10 {
		if p := mustAllow(t, c, scope); p.Probe() {
			t.Fatalf("Allow after closing returned a probe; want an ordinary pass")
		}
	}
}

// TestProbesSetsProbesToClose: with Probes 3, three probes go out at once,
// a fourth caller is refused, each success frees its slot for another
// probe, and the third success closes the circuit.
func TestProbesSetsProbesToClose(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{Probes: 3})
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()))
	probes := []breaker.Pass{mustAllow(t, c, scope), mustAllow(t, c, scope), mustAllow(t, c, scope)}
	openError(t, c, scope)
	for i, p := range probes[:2] {
		p.Done(ok, nil)
		if st := c.State(scope); st.Phase != breaker.HalfOpen || st.Successes != i+1 {
			t.Fatalf("State after %d successful probes of 3 = %v, %d successes; want half-open, %d", i+1, st.Phase, st.Successes, i+1)
		}
	}
	another := mustAllow(t, c, scope) // a freed slot
	if !another.Probe() {
		t.Errorf("Allow with 2 of 3 probe slots free: Probe() = false; want a probe")
	}
	probes[2].Done(ok, nil)
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Errorf("State after 3 successful probes of 3 = %v; want closed", st.Phase)
	}
	another.Done(ok, nil) // of the half-open phase: ignored
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Errorf("State after a late probe's success = %v; want closed", st.Phase)
	}
}

// TestProbeFailureReopensWithDoubledOpenTime: each failed probe opens the
// circuit again for twice the previous open time, up to MaxOpenFor; a
// success closes it, and the next opening starts again from OpenFor.
func TestProbeFailureReopensWithDoubledOpenTime(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		openFor time.Duration
		maxOpen time.Duration
		want    []time.Duration // the first opening, then after each failed probe
	}{
		{"Default", 0, 0, []time.Duration{1500 * time.Millisecond, 3 * s, 6 * s, 12 * s, 12 * s}},
		{"MaxOpenFor5s", s, 5 * s, []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s}},
		{"MaxBelowOpenFor", 2 * s, s, []time.Duration{2 * s, 2 * s, 2 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newCircuit(&breaker.Circuit{OpenFor: tt.openFor, MaxOpenFor: tt.maxOpen})
			until := open(t, c, scope)
			for i, want := range tt.want {
				if i > 0 {
					clk.Advance(until.Sub(clk.Now()))
					clk.Advance(500 * time.Millisecond) // the probe hangs, then times out
					mustAllow(t, c, scope).Done(timeout, errOf(timeout))
				}
				st := c.State(scope)
				if st.Phase != breaker.Open || st.OpenFor != want || st.Until.Sub(clk.Now()) != want || st.Opens != uint64(i+1) {
					t.Fatalf("opening %d: State = %v, OpenFor %v, open for %v, %d opens; want open, %v, %v, %d",
						i+1, st.Phase, st.OpenFor, st.Until.Sub(clk.Now()), st.Opens, want, want, i+1)
				}
				until = st.Until
			}
			clk.Advance(until.Sub(clk.Now()))
			mustAllow(t, c, scope).Done(ok, nil)
			until = open(t, c, scope)
			if got, want := until.Sub(clk.Now()), tt.want[0]; got != want {
				t.Errorf("open time after closing and opening again = %v; want %v", got, want)
			}
		})
	}
}

// TestDropFreesProbeSlot: a probe dropped, or ending with an outcome that
// says nothing of the server (a 429, a 404, the caller's cancellation),
// frees its slot for the next caller, and the circuit stays half-open.
func TestDropFreesProbeSlot(t *testing.T) {
	settle := []struct {
		name string
		do   func(breaker.Pass)
	}{
		{"Drop", func(p breaker.Pass) { p.Drop() }},
		{"Throttle", func(p breaker.Pass) { p.Done(status429, nil) }},
		{"Fatal4xx", func(p breaker.Pass) { p.Done(status404, nil) }},
		{"Cancelled", func(p breaker.Pass) { p.Done(cancelled, errOf(cancelled)) }},
		{"NotTripping", func(p breaker.Pass) { p.Done(refused, errRefused) }}, // with Trips timeouts only
	}
	for _, tt := range settle {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newCircuit(&breaker.Circuit{Failures: 1})
			if tt.name == "NotTripping" {
				c.Trips = breaker.Kinds{classify.Timeout}
				attempt(t, c, scope, timeout)
			} else {
				attempt(t, c, scope, refused)
			}
			clk.Advance(time.Minute)
			p := mustAllow(t, c, scope)
			openError(t, c, scope)
			tt.do(p)
			if st := c.State(scope); st.Phase != breaker.HalfOpen || st.Probes != 0 || st.Successes != 0 {
				t.Errorf("State after the probe's %s = %v, %d probes, %d successes; want half-open, 0, 0", tt.name, st.Phase, st.Probes, st.Successes)
			}
			if p := mustAllow(t, c, scope); !p.Probe() {
				t.Errorf("Allow after the probe's %s: Probe() = false; want a probe", tt.name)
			}
		})
	}
}

// TestProbeLeaseFreesLostProbe: a probe never settled holds its slot for
// ProbeLease, then another caller may probe; the lost probe's outcome
// still counts if it comes.
func TestProbeLeaseFreesLostProbe(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()))
	lost := mustAllow(t, c, scope)
	clk.Advance(breaker.DefaultProbeLease - time.Nanosecond)
	openError(t, c, scope)
	clk.Advance(time.Nanosecond)
	next := mustAllow(t, c, scope)
	if !next.Probe() {
		t.Fatalf("Allow after the probe lease: Probe() = false; want a probe")
	}
	if st := c.State(scope); st.Probes != 1 {
		t.Errorf("State.Probes after the lease freed the lost probe's slot = %d; want 1", st.Probes)
	}
	lost.Done(ok, nil)
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Errorf("State after the lost probe's late success = %v; want closed", st.Phase)
	}
	next.Done(timeout, errOf(timeout)) // of the half-open phase: ignored
	if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
		t.Errorf("State after the other probe's late timeout = %v, %d failures; want closed, 0", st.Phase, st.Failures)
	}
}

// TestManyWaitingCallersGetFewProbes: of 100 callers asking at once after
// the open time, exactly Probes get a probe; the others are refused.
func TestManyWaitingCallersGetFewProbes(t *testing.T) {
	for _, probes := range []int{1, 3} {
		c, clk := newCircuit(&breaker.Circuit{Probes: probes})
		until := open(t, c, scope)
		clk.Advance(until.Sub(clk.Now()) + time.Second)

		const callers = 100
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			mu      sync.Mutex
			passes  []breaker.Pass
			refusal int
		)
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				p, err := c.Allow(scope)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					passes = append(passes, p)
				case errors.Is(err, breaker.ErrOpen):
					refusal++
				default:
					t.Errorf("Allow = %v; want a pass or ErrOpen", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(passes) != probes || refusal != callers-probes {
			t.Errorf("Probes %d: of %d callers at once, %d got a pass and %d were refused; want %d and %d",
				probes, callers, len(passes), refusal, probes, callers-probes)
		}
		for _, p := range passes {
			if !p.Probe() {
				t.Errorf("Probes %d: a pass of the half-open circuit is not a probe", probes)
			}
			p.Drop()
		}
	}
}

// TestOutcomesOfEarlierPhasesAreIgnored: attempts let through before the
// circuit changed phase do not count after it: the burst of timeouts of
// the attempts in flight when a server hangs neither lengthens the open
// time nor ends it, and a late success does not close the circuit.
func TestOutcomesOfEarlierPhasesAreIgnored(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	attempt(t, c, scope, ok)
	var inFlight []breaker.Pass
	for range 8 {
		inFlight = append(inFlight, mustAllow(t, c, scope))
	}
	late := mustAllow(t, c, scope)
	clk.Advance(500 * time.Millisecond)
	for _, p := range inFlight {
		p.Done(timeout, errOf(timeout))
	}
	want := clk.Now().Add(breaker.DefaultOpenFor)
	st := c.State(scope)
	if st.Phase != breaker.Open || st.Failures != breaker.DefaultStalls || st.Opens != 1 || !st.Until.Equal(want) {
		t.Fatalf("State after 8 timeouts at once = %v, %d failures, %d opens, until %v; want open, %d, 1, %v",
			st.Phase, st.Failures, st.Opens, st.Until, breaker.DefaultStalls, want)
	}
	late.Done(ok, nil)
	if st := c.State(scope); st.Phase != breaker.Open {
		t.Fatalf("State after a success of an attempt let through before opening = %v; want open", st.Phase)
	}

	clk.Advance(breaker.DefaultOpenFor)
	probe := mustAllow(t, c, scope)
	stale := inFlight[0]
	stale.Done(timeout, errOf(timeout)) // settled twice, and from the closed phase
	stale.Drop()
	if st := c.State(scope); st.Phase != breaker.HalfOpen || st.Probes != 1 {
		t.Errorf("State after outcomes of the closed phase while half-open = %v, %d probes; want half-open, 1", st.Phase, st.Probes)
	}
	probe.Done(ok, nil)
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Fatalf("State after the probe's success = %v; want closed", st.Phase)
	}

	// Closed again: the failures of the first closed phase do not count.
	for _, p := range inFlight[1:5] {
		p.Done(refused, errRefused)
	}
	probe.Done(refused, errRefused)
	if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
		t.Fatalf("State after 5 failures of earlier phases = %v, %d failures; want closed, 0", st.Phase, st.Failures)
	}

	// A probe of one half-open phase does not count in the next.
	open(t, c, scope)
	clk.Advance(breaker.DefaultOpenFor)
	first := mustAllow(t, c, scope)
	clk.Advance(breaker.DefaultProbeLease) // first is lost; the next caller probes and fails
	mustAllow(t, c, scope).Done(refused, errRefused)
	clk.Advance(2 * breaker.DefaultOpenFor)
	second := mustAllow(t, c, scope)
	first.Done(ok, nil)
	if st := c.State(scope); st.Phase != breaker.HalfOpen || st.Probes != 1 || st.Successes != 0 {
		t.Errorf("State after a success of the previous half-open phase's probe = %v, %d probes, %d successes; want half-open, 1, 0",
			st.Phase, st.Probes, st.Successes)
	}
	second.Drop()
}

// TestOpenUntilAllowAsks: no timer ends the open time: a circuit nobody
// asks stays open past it in its own bookkeeping, reported as half-open,
// and turns half-open when Allow next asks.
func TestOpenUntilAllowAsks(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	until := open(t, c, scope)
	clk.Advance(time.Hour)
	st := c.State(scope)
	if st.Phase != breaker.HalfOpen || !st.Since.Equal(until) || !st.Until.IsZero() {
		t.Errorf("State an hour after the open time = %+v; want half-open since %v", st, until)
	}
	p := mustAllow(t, c, scope)
	if st := c.State(scope); !p.Probe() || st.Phase != breaker.HalfOpen || !st.Since.Equal(until) || st.Probes != 1 {
		t.Errorf("after Allow: Probe() = %t, State = %+v; want a probe, half-open since %v, 1 probe", p.Probe(), st, until)
	}
}

// TestLargeProbesDoesNotReserveMemory: a huge Probes lets that many probes
// through without reserving room for them all up front.
func TestLargeProbesDoesNotReserveMemory(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{Probes: 1 << 40})
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()))
	for range 10 {
		if p := mustAllow(t, c, scope); !p.Probe() {
			t.Fatalf("Allow while half-open with Probes 2^40: Probe() = false; want a probe")
		}
	}
	if st := c.State(scope); st.Probes != 10 {
		t.Errorf("State.Probes = %d; want 10", st.Probes)
	}
}
