package breaker_test

import (
	"testing"

	"github.com/retrytransport/retrytransport/breaker"
)

// TestClosedCircuitDoesNotAllocate: while a scope's circuit is closed,
// letting an attempt through and settling it allocates nothing, so the
// transport's happy path stays free of allocations.
func TestClosedCircuitDoesNotAllocate(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{})
	mustAllow(t, c, scope).Done(ok, nil) // stores the scope
	tests := []struct {
		name string
		run  func()
	}{
		{"AllowDoneSuccess", func() {
			p, _ := c.Allow(scope)
			p.Done(ok, nil)
		}},
		{"AllowDrop", func() {
			p, _ := c.Allow(scope)
			p.Drop()
		}},
		{"AllowDoneThrottle", func() {
			p, _ := c.Allow(scope)
			p.Done(status429, nil)
		}},
		{"FailureThenSuccess", func() {
			p, _ := c.Allow(scope)
			p.Done(refused, errRefused)
			p, _ = c.Allow(scope)
			p.Done(ok, nil)
		}},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(1000, tt.run); n != 0 {
			t.Errorf("%s on a closed circuit: %v allocations per run; want 0", tt.name, n)
		}
	}
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Errorf("State after the runs = %v; want closed", st.Phase)
	}
}

// BenchmarkClosed is the cost a closed circuit adds to an attempt: Allow
// and a successful Done.
func BenchmarkClosed(b *testing.B) {
	c := &breaker.Circuit{}
	b.ReportAllocs()
	for b.Loop() {
		p, _ := c.Allow(scope)
		p.Done(ok, nil)
	}
}

// BenchmarkClosedParallel is BenchmarkClosed from every core at once, on
// one scope.
func BenchmarkClosedParallel(b *testing.B) {
	c := &breaker.Circuit{}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, _ := c.Allow(scope)
			p.Done(ok, nil)
		}
	})
}

// BenchmarkOpen is the cost of a refusal while open.
func BenchmarkOpen(b *testing.B) {
	c := &breaker.Circuit{Failures: 1}
	p, _ := c.Allow(scope)
	p.Done(refused, errRefused)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Allow(scope); err == nil {
			b.Fatal("Allow let an attempt through an open circuit")
		}
	}
}
