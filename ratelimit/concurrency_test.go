package ratelimit_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The limiters' concurrency: many goroutines on many scopes, eviction
// included. Run these under the race detector. That no lock is shared by
// all scopes is shown by BenchmarkAdaptiveParallel, not tested.

// scopeNames returns n scope names.
func scopeNames(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint("host", i)
	}
	return s
}

// watchBound calls count until stop is closed, and then sends the largest
// count seen on the channel it returns.
func watchBound(count func() int, stop <-chan struct{}) <-chan int {
	most := make(chan int)
	go func() {
		m := 0
		for {
			select {
			case <-stop:
				most <- m
				return
			default:
				m = max(m, count())
			}
		}
	}()
	return most
}

// TestAdaptiveConcurrentReservationsAllCount: goroutines reserving on 16
// throttled scopes at one instant, each scope from several goroutines at
// once, take exactly one token per reservation: no update is lost.
func TestAdaptiveConcurrentReservationsAllCount(t *testing.T) {
	const goroutines, each = 8, 4096 // each a multiple of 4·16: every scope gets as many
	scopes := scopeNames(16)
	var a ratelimit.Adaptive
	for _, s := range scopes {
		// Throttled at t0 after one response: enabled, from an empty
		// bucket, which no time passes to refill.
		a.RecordAt(t0, s, classify.Success)
		a.RecordAt(t0, s, classify.Throttle)
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Goroutines in step take the same scope at once.
				a.ReserveAt(t0, scopes[(i/4)%len(scopes)])
			}
		}()
	}
	wg.Wait()
	want := -float64(goroutines * each / len(scopes))
	for _, s := range scopes {
		if got := a.StateAt(t0, s).Tokens; got != want {
			t.Errorf("StateAt(%s).Tokens after %d reservations = %v; want %v", s, goroutines*each/len(scopes), got, want)
		}
	}
}

// TestAdaptiveConcurrentEvictionKeepsBound: goroutines using 64 scopes
// with room for 8, through every method, never make it store more than 8,
// and every scope's state stays consistent.
func TestAdaptiveConcurrentEvictionKeepsBound(t *testing.T) {
	const limit = 8
	clock := faketime.New()
	a := ratelimit.Adaptive{MaxScopes: limit, MaxWait: time.Second, Now: clock.Now}
	scopes := scopeNames(64)
	stop := make(chan struct{})
	most := watchBound(func() int { return ratelimit.AdaptiveScopes(&a) }, stop)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				s := scopes[(g*13+i*(g+1))%len(scopes)]
				r, w, ok := a.Reserve(s)
				if ok && w > 0 {
					r.Delay()
					if i%2 == 0 {
						r.Cancel()
					}
				}
				k := classify.Success
				if i%5 == 0 {
					k = classify.Throttle
				}
				a.Record(s, k)
				if i%50 == 0 {
					clock.Advance(10 * ms)
				}
				if st := a.State(s); st.Enabled && (st.FillRate < ratelimit.DefaultMinFillRate || st.Tokens > st.Capacity) {
					t.Errorf("State(%s) = %+v; want fill rate >= 0.5 and tokens <= capacity", s, st)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if m := <-most; m > limit {
		t.Errorf("most scopes stored at once with MaxScopes %d = %d; want at most %d", limit, m, limit)
	}
	var known int
	for _, s := range scopes {
		if a.State(s) != (ratelimit.AdaptiveState{}) {
			known++
		}
	}
	if n := ratelimit.AdaptiveScopes(&a); n != limit || known != limit {
		t.Errorf("after the goroutines: %d scopes stored, %d with a state; want %d, %d", n, known, limit, limit)
	}
}

// TestFixedConcurrentEvictionKeepsBound is the same for Fixed.
func TestFixedConcurrentEvictionKeepsBound(t *testing.T) {
	const limit = 8
	clock := faketime.New()
	f := ratelimit.Fixed{Rate: 1000, Burst: 2, MaxScopes: limit, Now: clock.Now}
	scopes := scopeNames(64)
	stop := make(chan struct{})
	most := watchBound(func() int { return ratelimit.FixedScopes(&f) }, stop)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				s := scopes[(g*13+i*(g+1))%len(scopes)]
				r, w, ok := f.Reserve(s)
				if !ok || w > time.Second {
					t.Errorf("Reserve(%s) = %v, %t; want a wait of at most 1s, granted", s, w, ok)
					return
				}
				if w > 0 && i%2 == 0 {
					r.Delay()
					r.Cancel()
				}
				if i%50 == 0 {
					clock.Advance(ms)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if m := <-most; m > limit {
		t.Errorf("most scopes stored at once with MaxScopes %d = %d; want at most %d", limit, m, limit)
	}
	if n := ratelimit.FixedScopes(&f); n != limit {
		t.Errorf("after the goroutines: %d scopes stored; want %d", n, limit)
	}
}
