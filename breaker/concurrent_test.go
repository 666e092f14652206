package breaker_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
)

// TestConcurrentUse: goroutines sharing a Circuit across a few scopes,
// with mixed outcomes and a clock that moves, never find more probes of one
// half-open phase in flight than Probes, nor a refusal that is not an
// *OpenError; run it with -race. A probe of an earlier phase may still be
// in flight when the circuit half-opens again: it no longer holds a slot.
func TestConcurrentUse(t *testing.T) {
	const (
		goroutines = 8
		rounds     = 2000
		probes     = 2
	)
	clk := faketime.New()
	c := &breaker.Circuit{Probes: probes, Now: clk.Now, OpenFor: 10 * time.Millisecond}
	scopes := []string{"a", "b", "c"}
	var (
		mu          sync.Mutex
		inFlight    = map[uint64]int{} // probes in flight, by half-open phase (the ticket's generation)
		maxInFlight [3]int
	)
	var passes, refusals atomic.Int64
	outcomes := []classify.Outcome{ok, ok, ok, status503, timeout, status429, refused}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				i := rng.IntN(len(scopes))
				p, err := c.Allow(scopes[i])
				if err != nil {
					var oe *breaker.OpenError
					if !errors.As(err, &oe) || oe.Scope != scopes[i] {
						t.Errorf("Allow(%q) = %v; want an *OpenError of that scope", scopes[i], err)
						return
					}
					refusals.Add(1)
					clk.Advance(time.Millisecond)
					continue
				}
				passes.Add(1)
				out := outcomes[rng.IntN(len(outcomes))]
				if p.Probe() {
					// Counted from after Allow to before settling: never
					// more than the slots the circuit holds.
					gen := p.Ticket().Gen
					mu.Lock()
					inFlight[gen]++
					maxInFlight[i] = max(maxInFlight[i], inFlight[gen])
					mu.Unlock()
					clk.Advance(time.Millisecond)
					mu.Lock()
					inFlight[gen]--
					mu.Unlock()
				}
				if rng.IntN(10) == 0 {
					p.Drop()
				} else {
					p.Done(out, errOf(out))
				}
			}
		}()
	}
	wg.Wait()
	for i, sc := range scopes {
		if m := maxInFlight[i]; m > probes {
			t.Errorf("scope %q: %d probes of one half-open phase in flight at once; want at most %d", sc, m, probes)
		}
		st := c.State(sc)
		if st.Probes > probes || st.Successes >= probes {
			t.Errorf("State(%q) at the end = %+v; want at most %d probes and fewer successes", sc, st, probes)
		}
	}
	if passes.Load() == 0 || refusals.Load() == 0 {
		t.Errorf("%d passes and %d refusals; want both (the circuits should have opened and closed)", passes.Load(), refusals.Load())
	}
}
