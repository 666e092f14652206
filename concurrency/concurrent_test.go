package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// Many goroutines on a few scopes at once. Run under the race detector.

// TestConcurrentCallersNeverExceedLimit: 16 goroutines taking places of 4
// scopes of a Fixed of 3 never have more than 3 attempts of a scope in
// flight, and leave nothing in flight or waiting: when they wait until a
// place comes, and when their MaxWait passes at once, so that places are
// handed to waiters as they give up.
func TestConcurrentCallersNeverExceedLimit(t *testing.T) {
	ready := func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		c <- time.Time{}
		return c
	}
	tests := []struct {
		name      string
		after     func(time.Duration) <-chan time.Time
		mayRefuse bool
	}{
		{"waitUntilPlace", (&timers{}).After, false},
		{"maxWaitPassesAtOnce", ready, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const limit, goroutines, each = 3, 16, 500
			f := &concurrency.Fixed{Max: limit, MaxWait: time.Hour, After: tt.after}
			scopes := []string{"a", "b", "c", "d"}
			var inFlight [4]atomic.Int32
			var over, refused atomic.Int32
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						s := (g + i) % len(scopes)
						p, err := f.Acquire(context.Background(), scopes[s])
						if errors.Is(err, concurrency.ErrLimited) {
							refused.Add(1)
							continue
						}
						if err != nil {
							t.Errorf("Acquire(%q) = %v; want a place or ErrLimited", scopes[s], err)
							return
						}
						if inFlight[s].Add(1) > limit {
							over.Add(1)
						}
						inFlight[s].Add(-1)
						p.Done(time.Millisecond, classify.Success)
					}
				}()
			}
			wg.Wait()
			t.Logf("%d refused", refused.Load())
			if n := refused.Load(); n != 0 && !tt.mayRefuse {
				t.Errorf("%d refused; want none: each waits until a place comes", n)
			}
			if n := over.Load(); n != 0 {
				t.Errorf("%d times more than %d in flight", n, limit)
			}
			for _, s := range scopes {
				if st := f.State(s); st.InFlight != 0 || st.Waiting != 0 {
					t.Errorf("State(%q) = %+v; want nothing in flight or waiting", s, st)
				}
			}
		})
	}
}

// TestConcurrentAdaptiveWithEviction: goroutines acquiring, ending with
// every kind of outcome and dropping on 8 scopes of an Adaptive that
// stores 3, refused or not, finish with nothing lost: every scope still
// stored has nothing in flight.
func TestConcurrentAdaptiveWithEviction(t *testing.T) {
	a := &concurrency.Adaptive{Initial: 4, MaxScopes: 3}
	kinds := []classify.Kind{classify.Success, classify.Success, classify.Timeout, classify.Throttle, classify.Transient}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				scope := fmt.Sprint("host", (g+i)%8)
				p, err := a.Acquire(context.Background(), scope)
				if err != nil {
					continue
				}
				if i%7 == 0 {
					p.Drop()
					continue
				}
				p.Done(time.Duration(1+i%20)*time.Millisecond, kinds[i%len(kinds)])
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		s := fmt.Sprint("host", i)
		if st := a.State(s); st.InFlight != 0 {
			t.Errorf("State(%q).InFlight = %d; want 0", s, st.InFlight)
		}
	}
}
