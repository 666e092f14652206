package breaker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
)

// TestStateOfUnknownScopeIsZero: a scope the circuit does not store is
// reported closed with nothing counted, and asking does not store it.
func TestStateOfUnknownScopeIsZero(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{})
	if st := c.State("never.example"); st != (breaker.State{}) {
		t.Errorf("State of a scope never used = %+v; want the zero State", st)
	}
	if n := breaker.ScopesStored(c); n != 0 {
		t.Errorf("scopes stored after State of an unknown scope = %d; want 0", n)
	}
}

// TestStateReportsEachPhase: State says where the circuit stands, since
// when, until when it is open, and what it counted.
func TestStateReportsEachPhase(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	t0 := faketime.Epoch
	last := errRefused
	check := func(when string, want breaker.State) {
		t.Helper()
		sameText := cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })
		if diff := cmp.Diff(want, c.State(scope), sameText); diff != "" {
			t.Errorf("State %s mismatch (-want +got):\n%s", when, diff)
		}
	}
	for range 3 {
		attempt(t, c, scope, refused)
	}
	check("after 3 failures", breaker.State{Phase: breaker.Closed, Failures: 3, Last: last})
	for range 2 {
		attempt(t, c, scope, refused)
	}
	until := t0.Add(breaker.DefaultOpenFor)
	check("after 5 failures", breaker.State{Phase: breaker.Open, Since: t0, Failures: 5, Until: until,
		OpenFor: breaker.DefaultOpenFor, Opens: 1, Last: last})
	clk.Advance(breaker.DefaultOpenFor)
	p := mustAllow(t, c, scope)
	check("with a probe out", breaker.State{Phase: breaker.HalfOpen, Since: until, Failures: 5,
		OpenFor: breaker.DefaultOpenFor, Probes: 1, Opens: 1, Last: last})
	p.Done(ok, nil)
	check("after the probe's success", breaker.State{Phase: breaker.Closed, Since: until, Opens: 1, Last: last})
}

// TestOnChangeReportsTransitions: OnChange hears every change of phase,
// with the phase left and the state just after.
func TestOnChangeReportsTransitions(t *testing.T) {
	type change struct {
		Scope    string
		From, To breaker.Phase
		OpenFor  time.Duration
		Probes   int
	}
	var got []change
	c, clk := newCircuit(&breaker.Circuit{})
	c.OnChange = func(sc string, from breaker.Phase, st breaker.State) {
		got = append(got, change{sc, from, st.Phase, st.OpenFor, st.Probes})
		_ = c.State(sc) // the locks are released
	}
	until := open(t, c, scope)
	clk.Advance(until.Sub(clk.Now()))
	mustAllow(t, c, scope).Done(timeout, errOf(timeout))
	clk.Advance(time.Minute)
	mustAllow(t, c, scope).Done(ok, nil)
	want := []change{
		{scope, breaker.Closed, breaker.Open, 1500 * time.Millisecond, 0},
		{scope, breaker.Open, breaker.HalfOpen, 1500 * time.Millisecond, 1},
		{scope, breaker.HalfOpen, breaker.Open, 3 * time.Second, 0},
		{scope, breaker.Open, breaker.HalfOpen, 3 * time.Second, 1},
		{scope, breaker.HalfOpen, breaker.Closed, 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnChange calls mismatch (-want +got):\n%s", diff)
	}
}

// TestPhaseString: each phase has a lower-case name.
func TestPhaseString(t *testing.T) {
	for p, want := range map[breaker.Phase]string{breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half-open", 7: "phase(7)"} {
		if got := p.String(); got != want {
			t.Errorf("Phase(%d).String() = %q; want %q", p, got, want)
		}
	}
}

// TestZeroPassDoesNothing: the zero Pass, which comes with a refusal, is
// no probe and settling it does nothing.
func TestZeroPassDoesNothing(t *testing.T) {
	var p breaker.Pass
	p.Done(refused, errRefused)
	p.Drop()
	if p.Probe() || p.Scope() != "" || p.Ticket() != (breaker.Ticket{}) {
		t.Errorf("zero Pass: Probe %t, Scope %q, Ticket %+v; want false, \"\", zero", p.Probe(), p.Scope(), p.Ticket())
	}
	if p := breaker.NewPass(nil, scope, breaker.Ticket{Gen: 1}, true); p != (breaker.Pass{}) {
		t.Errorf("NewPass(nil, ...) = %+v; want the zero Pass", p)
	}
}

// recorder is a Settler that records what its passes report.
type recorder struct{ got []string }

func (r *recorder) Done(p breaker.Pass, out classify.Outcome, err error) {
	r.got = append(r.got, fmt.Sprintf("done %s %+v %t %v %v", p.Scope(), p.Ticket(), p.Probe(), out.Kind, err))
}

func (r *recorder) Drop(p breaker.Pass) {
	r.got = append(r.got, fmt.Sprintf("drop %s %+v %t", p.Scope(), p.Ticket(), p.Probe()))
}

// TestNewPassCallsItsSettler: a Pass made by NewPass reports to its Settler
// with its scope, ticket and probe flag.
func TestNewPassCallsItsSettler(t *testing.T) {
	r := &recorder{}
	breaker.NewPass(r, "a", breaker.Ticket{Gen: 2, Seq: 3}, true).Done(timeout, errOf(timeout))
	breaker.NewPass(r, "b", breaker.Ticket{Gen: 4}, false).Drop()
	want := []string{"done a {Gen:2 Seq:3} true timeout context deadline exceeded", "drop b {Gen:4 Seq:0} false"}
	if diff := cmp.Diff(want, r.got); diff != "" {
		t.Errorf("Settler calls mismatch (-want +got):\n%s", diff)
	}
}

// TestPassesOfAnotherCircuitAreIgnored: a circuit settles only its own
// passes.
func TestPassesOfAnotherCircuitAreIgnored(t *testing.T) {
	a, _ := newCircuit(&breaker.Circuit{Failures: 1})
	b, _ := newCircuit(&breaker.Circuit{Failures: 1})
	p := mustAllow(t, a, scope)
	mustAllow(t, b, scope).Drop()
	b.Done(p, refused, errRefused)
	if st := b.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
		t.Errorf("b's State after b.Done of a's pass = %v, %d failures; want closed, 0", st.Phase, st.Failures)
	}
	if st := a.State(scope); st.Failures != 0 {
		t.Errorf("a's State after b.Done of a's pass = %d failures; want 0", st.Failures)
	}
}
