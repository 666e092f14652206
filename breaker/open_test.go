package breaker_test

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// TestOpensAfterConsecutiveFailures: Failures failures in a row, of any
// kind that counts, open the circuit, and not one fewer.
func TestOpensAfterConsecutiveFailures(t *testing.T) {
	tests := []struct {
		name     string
		failures int // Circuit.Failures
		want     int // failures that open it
		out      classify.Outcome
	}{
		{"DefaultConnectionRefused", 0, breaker.DefaultFailures, refused},
		{"ThreeRefused", 3, 3, refused},
		{"NegativeRefused", -1, breaker.DefaultFailures, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCircuit(&breaker.Circuit{Failures: tt.failures})
			for i := range tt.want - 1 {
				attempt(t, c, scope, tt.out)
				if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != i+1 {
					t.Fatalf("State after %d failures (%v) = %v, %d failures; want closed, %d", i+1, tt.out.Reason, st.Phase, st.Failures, i+1)
				}
			}
			attempt(t, c, scope, tt.out)
			if st := c.State(scope); st.Phase != breaker.Open || st.Failures != tt.want {
				t.Errorf("State after %d failures (%v) = %v, %d failures; want open, %d", tt.want, tt.out.Reason, st.Phase, st.Failures, tt.want)
			}
			openError(t, c, scope)
		})
	}
}

// TestSuccessResetsFailureCount: the failures must come in a row; a
// success in between starts the count again.
func TestSuccessResetsFailureCount(t *testing.T) {
	c, _ := newCircuit(&breaker.Circuit{})
	for range 3 {
		for range breaker.DefaultFailures - 1 {
			attempt(t, c, scope, refused)
		}
		attempt(t, c, scope, ok)
	}
	if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
		t.Fatalf("State after 3 x (4 failures, 1 success) = %v, %d failures; want closed, 0", st.Phase, st.Failures)
	}
	mustAllow(t, c, scope).Drop()
}

// TestThrottleAndFatalOutcomesDoNotCount: a 429, a 404 or the caller's own
// cancellation is neither a failure nor a success: it does not open the
// circuit, however many come, and does not reset the count of failures.
func TestThrottleAndFatalOutcomesDoNotCount(t *testing.T) {
	for _, tt := range []struct {
		name string
		out  classify.Outcome
	}{{"Throttle429", status429}, {"Fatal404", status404}, {"FatalCancelled", cancelled}} {
		out := tt.out
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCircuit(&breaker.Circuit{})
			for range breaker.DefaultFailures - 1 {
				attempt(t, c, scope, refused)
			}
			for range 100 {
				attempt(t, c, scope, out)
			}
			if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != breaker.DefaultFailures-1 {
				t.Fatalf("State after 4 failures and 100 x %q = %v, %d failures; want closed, 4", out.Reason, st.Phase, st.Failures)
			}
			attempt(t, c, scope, refused)
			if st := c.State(scope); st.Phase != breaker.Open {
				t.Errorf("State after 4 failures, 100 x %q, 1 failure = %v; want open", out.Reason, st.Phase)
			}
		})
	}
}

// TestTripsSelectsFailures: Trips narrows the outcomes that count, and can
// never make a Throttle or Fatal outcome count.
func TestTripsSelectsFailures(t *testing.T) {
	t.Run("TimeoutsOnly", func(t *testing.T) {
		c, _ := newCircuit(&breaker.Circuit{Trips: breaker.Kinds{classify.Timeout}})
		for range 100 {
			attempt(t, c, scope, refused)
		}
		if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
			t.Fatalf("State after 100 x 503 with Trips timeouts only = %v, %d failures; want closed, 0", st.Phase, st.Failures)
		}
		attempt(t, c, scope, ok) // a recent success: the timeouts do not stall
		for range breaker.DefaultFailures {
			attempt(t, c, scope, timeout)
		}
		if st := c.State(scope); st.Phase != breaker.Open {
			t.Errorf("State after 5 timeouts with Trips timeouts only = %v; want open", st.Phase)
		}
	})
	t.Run("EverythingAsked", func(t *testing.T) {
		var asked []classify.Kind
		c, _ := newCircuit(&breaker.Circuit{Trips: breaker.TripFunc(func(o classify.Outcome) bool {
			asked = append(asked, o.Kind)
			return true
		})})
		for _, out := range []classify.Outcome{status429, status404, cancelled, ok} {
			for range 10 {
				attempt(t, c, scope, out)
			}
		}
		if st := c.State(scope); st.Phase != breaker.Closed || st.Failures != 0 {
			t.Errorf("State after throttles, 4xx, cancellations and successes with Trips always true = %v, %d failures; want closed, 0", st.Phase, st.Failures)
		}
		if len(asked) != 0 {
			t.Errorf("Trips was asked about %v; want it asked about Transient and Timeout outcomes only", asked)
		}
	})
}

// TestStalledTimeoutsOpenSooner: two timeouts in a row open the circuit
// when no attempt of the scope has succeeded for StallFor, as when a server
// stops answering every caller at once.
func TestStalledTimeoutsOpenSooner(t *testing.T) {
	c, clk := newCircuit(&breaker.Circuit{})
	attempt(t, c, scope, ok)
	a, b := mustAllow(t, c, scope), mustAllow(t, c, scope)
	clk.Advance(500 * time.Millisecond) // both attempts hang until they time out
	a.Done(timeout, errOf(timeout))
	if st := c.State(scope); st.Phase != breaker.Closed {
		t.Fatalf("State after 1 stalled timeout = %v; want closed", st.Phase)
	}
	b.Done(timeout, errOf(timeout))
	if st := c.State(scope); st.Phase != breaker.Open || st.Failures != breaker.DefaultStalls {
		t.Errorf("State after 2 timeouts, no success for 500 ms = %v, %d failures; want open, %d", st.Phase, st.Failures, breaker.DefaultStalls)
	}
}

// TestTimeoutsAmidSuccessesDoNotStall: timeouts while other attempts of the
// scope succeed, or fast failures however long the scope was idle, need
// Failures in a row.
func TestTimeoutsAmidSuccessesDoNotStall(t *testing.T) {
	t.Run("RecentSuccess", func(t *testing.T) {
		c, clk := newCircuit(&breaker.Circuit{})
		attempt(t, c, scope, ok)
		clk.Advance(breaker.DefaultStallFor - time.Millisecond)
		for range breaker.DefaultFailures - 1 {
			attempt(t, c, scope, timeout)
		}
		if st := c.State(scope); st.Phase != breaker.Closed {
			t.Errorf("State after 4 timeouts, 249 ms after a success = %v; want closed", st.Phase)
		}
	})
	t.Run("FastFailuresAfterIdle", func(t *testing.T) {
		c, clk := newCircuit(&breaker.Circuit{})
		attempt(t, c, scope, ok)
		clk.Advance(time.Minute)
		for range breaker.DefaultFailures - 1 {
			attempt(t, c, scope, refused)
		}
		if st := c.State(scope); st.Phase != breaker.Closed {
			t.Errorf("State after 4 x 503, a minute after a success = %v; want closed", st.Phase)
		}
	})
	t.Run("LongerStallFor", func(t *testing.T) {
		c, clk := newCircuit(&breaker.Circuit{StallFor: time.Second})
		attempt(t, c, scope, ok)
		clk.Advance(500 * time.Millisecond)
		for range breaker.DefaultFailures - 1 {
			attempt(t, c, scope, timeout)
		}
		if st := c.State(scope); st.Phase != breaker.Closed {
			t.Errorf("State after 4 timeouts, 500 ms after a success, StallFor 1 s = %v; want closed", st.Phase)
		}
	})
}

// TestStallsSetsStalledTimeoutsThatOpen: Stalls is how many timeouts in a
// row open a stalled scope; Stalls at Failures or above leaves Failures.
func TestStallsSetsStalledTimeoutsThatOpen(t *testing.T) {
	for _, tt := range []struct {
		stalls, want int
	}{{0, breaker.DefaultStalls}, {1, 1}, {3, 3}, {9, breaker.DefaultFailures}} {
		c, _ := newCircuit(&breaker.Circuit{Stalls: tt.stalls})
		n := 0
		for c.State(scope).Phase == breaker.Closed && n < 10 {
			attempt(t, c, scope, timeout) // no success ever: stalled
			n++
		}
		if n != tt.want {
			t.Errorf("Circuit{Stalls: %d} opened after %d stalled timeouts; want %d", tt.stalls, n, tt.want)
		}
	}
}

// TestStallRuleSeesRecentSuccesses: the stall rule knows when the scope
// last succeeded to within a few milliseconds, whether its successes come
// ten thousand a second or ten.
func TestStallRuleSeesRecentSuccesses(t *testing.T) {
	tests := []struct {
		name  string
		n     int           // successes
		every time.Duration // apart
		quiet time.Duration // from the last to the two timeouts
		want  breaker.Phase
	}{
		{"BusyThen5ms", 10000, 100 * time.Microsecond, 5 * time.Millisecond, breaker.Closed},
		{"BusyThen260ms", 10000, 100 * time.Microsecond, 260 * time.Millisecond, breaker.Open},
		{"SlowThen240ms", 20, 100 * time.Millisecond, 240 * time.Millisecond, breaker.Closed},
		{"SlowThen250ms", 20, 100 * time.Millisecond, 250 * time.Millisecond, breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newCircuit(&breaker.Circuit{})
			for i := range tt.n {
				if i > 0 {
					clk.Advance(tt.every)
				}
				attempt(t, c, scope, ok)
			}
			clk.Advance(tt.quiet)
			a, b := mustAllow(t, c, scope), mustAllow(t, c, scope)
			a.Done(timeout, errOf(timeout))
			b.Done(timeout, errOf(timeout))
			if st := c.State(scope); st.Phase != tt.want {
				t.Errorf("State after %d successes %v apart, %v quiet, 2 timeouts = %v; want %v", tt.n, tt.every, tt.quiet, st.Phase, tt.want)
			}
		})
	}
}
