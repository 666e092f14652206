package breaker_test

import (
	"fmt"
	"testing"

	"github.com/retrytransport/retrytransport/breaker"
)

// TestScopesAreIndependent: one scope's circuit opening does not refuse
// another's attempts.
func TestScopesAreIndependent(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{})
	open(t, c, "down.example:443")
	for range 10 {
		attempt(t, c, "up.example:443", ok)
	}
	if st := c.State("up.example:443"); st.Phase != breaker.Closed {
		t.Errorf("State of a healthy scope beside an open one = %v; want closed", st.Phase)
	}
	openError(t, c, "down.example:443")
}

// TestMaxScopesBoundsStoredScopes: at most MaxScopes scopes are stored; an
// evicted scope starts again closed, and the passes it handed out before
// are ignored.
func TestMaxScopesBoundsStoredScopes(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{MaxScopes: 3})
	early := mustAllow(t, c, "a")
	open(t, c, "a")
	for i := range 20 {
		attempt(t, c, fmt.Sprint("other", i), ok)
		if n := breaker.ScopesStored(c); n > 3 {
			t.Fatalf("scopes stored after %d more = %d; want at most 3", i+1, n)
		}
	}
	if st := c.State("a"); st != (breaker.State{}) {
		t.Fatalf("State of an evicted scope = %+v; want the zero State", st)
	}
	p := mustAllow(t, c, "a") // stored again, closed
	early.Done(refused, errRefused)
	if st := c.State("a"); st.Failures != 0 {
		t.Errorf("Failures after a pass from before the eviction failed = %d; want 0", st.Failures)
	}
	p.Drop()
	if n := breaker.ScopesStored(c); n != 3 {
		t.Errorf("scopes stored at the end = %d; want 3", n)
	}
}

// TestDefaultMaxScopes: a zero MaxScopes keeps DefaultMaxScopes scopes.
func TestDefaultMaxScopes(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{})
	for i := range breaker.DefaultMaxScopes + 10 {
		mustAllow(t, c, fmt.Sprint(i))
	}
	if n := breaker.ScopesStored(c); n != breaker.DefaultMaxScopes {
		t.Errorf("scopes stored after %d = %d; want %d", breaker.DefaultMaxScopes+10, n, breaker.DefaultMaxScopes)
	}
}
