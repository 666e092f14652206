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

// hammer runs rounds rounds of round on each of goroutines goroutines at
// once, round(g, i) being goroutine g's round i, and returns when all are
// done. A goroutine stops at a round that returns false, which has
// reported why.
func hammer(goroutines, rounds int, round func(g, i int) bool) {
	var wg sync.WaitGroup
	wg.Add(goroutines)
	for g := range goroutines {
		go func() {
			defer wg.Done()
			for i := range rounds {
				if !round(g, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// watchBound calls stored over and over from a goroutine of its own, until
// the func it returns is called, and fails t at the first count over
// bound, when it sees it: a limiter that goes over its MaxScopes only for
// a moment fails as one that stays over. The func returns once the watcher
// has ended, so that it never reports after the test; t.Cleanup calls it
// if the test ends first.
func watchBound(t *testing.T, bound int, stored func() int) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			if n := stored(); n > bound {
				t.Errorf("%d scopes stored at once, while the goroutines ran, with MaxScopes %d; want at most %d", n, bound, bound)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			<-ended
		})
	}
	t.Cleanup(stop)
	return stop
}

// evictionRun is a run of goroutines that use more scopes than a limiter
// stores: each makes rounds rounds, round i of goroutine g on scope
// scope(g, i). The limiter must never store more than limit scopes, and
// must store limit when the goroutines are done.
type evictionRun struct {
	goroutines, rounds, limit int
	scope                     func(g, i int) string
	round                     func(s string, i int) bool // one round on s; false ends the goroutine, having reported why
	stored                    func() int                 // how many scopes the limiter stores
}

func (r evictionRun) run(t *testing.T) {
	t.Helper()
	stop := watchBound(t, r.limit, r.stored)
	hammer(r.goroutines, r.rounds, func(g, i int) bool { return r.round(r.scope(g, i), i) })
	stop()
	if n := r.stored(); n != r.limit {
		t.Errorf("after the goroutines: %d scopes stored; want %d", n, r.limit)
	}
}

// strided returns a scope(g, i) for evictionRun that has each goroutine go
// through scopes at a step of its own, from a start of its own.
func strided(scopes []string) func(g, i int) string {
	return func(g, i int) string { return scopes[(g*13+i*(g+1))%len(scopes)] }
}

// adaptiveRound is a round of the Adaptive's eviction runs on scope s:
// reserve, ask the delay of a reservation that must wait and give every
// other one back, record a throttle every throttleEvery rounds and a
// success otherwise, advance clock 10 ms every advanceEvery rounds, and
// check that s's state is consistent.
func adaptiveRound(t *testing.T, a *ratelimit.Adaptive, clock *faketime.Clock, s string, i, throttleEvery, advanceEvery int) bool {
	r, w, ok := a.Reserve(s)
	if ok && w > 0 {
		r.Delay()
		if i%2 == 0 {
			r.Cancel()
		}
	}
	k := classify.Success
	if i%throttleEvery == 0 {
		k = classify.Throttle
	}
	a.Record(s, k)
	if i%advanceEvery == 0 {
		clock.Advance(10 * ms)
	}
	if st := a.State(s); st.Enabled && (st.FillRate < ratelimit.DefaultMinFillRate || st.Tokens > st.Capacity) {
		t.Errorf("State(%s) = %+v; want fill rate >= 0.5 and tokens <= capacity", s, st)
		return false
	}
	return true
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
	hammer(goroutines, each, func(_, i int) bool {
		// Goroutines in step take the same scope at once.
		a.ReserveAt(t0, scopes[(i/4)%len(scopes)])
		return true
	})
	want := -float64(goroutines * each / len(scopes))
	for _, s := range scopes {
		if got := a.StateAt(t0, s).Tokens; got != want {
			t.Errorf("StateAt(%s).Tokens after %d reservations = %v; want %v", s, goroutines*each/len(scopes), got, want)
		}
	}
}

// TestAdaptiveConcurrentUse: goroutines using 3 scopes with room for 2,
// through every method, never make it store more than 2, and every
// scope's state stays consistent.
func TestAdaptiveConcurrentUse(t *testing.T) {
	const limit = 2
	clock := faketime.New()
	a := ratelimit.Adaptive{MaxScopes: limit, MaxWait: time.Second, Now: clock.Now}
	scopes := []string{"a", "b", "c"}
	evictionRun{goroutines: 8, rounds: 2000, limit: limit,
		scope:  func(g, i int) string { return scopes[(g+i)%len(scopes)] },
		round:  func(s string, i int) bool { return adaptiveRound(t, &a, clock, s, i, 7, 20) },
		stored: func() int { return ratelimit.AdaptiveScopes(&a) },
	}.run(t)
}

// TestAdaptiveConcurrentEvictionKeepsBound: goroutines using 64 scopes
// with room for 8, through every method, never make it store more than 8,
// and every scope's state stays consistent.
func TestAdaptiveConcurrentEvictionKeepsBound(t *testing.T) {
	const limit = 8
	clock := faketime.New()
	a := ratelimit.Adaptive{MaxScopes: limit, MaxWait: time.Second, Now: clock.Now}
	scopes := scopeNames(64)
	evictionRun{goroutines: 8, rounds: 3000, limit: limit, scope: strided(scopes),
		round:  func(s string, i int) bool { return adaptiveRound(t, &a, clock, s, i, 5, 50) },
		stored: func() int { return ratelimit.AdaptiveScopes(&a) },
	}.run(t)
	var known int
	for _, s := range scopes {
		if a.State(s) != (ratelimit.AdaptiveState{}) {
			known++
		}
	}
	if known != limit {
		t.Errorf("after the goroutines: %d scopes with a state; want %d", known, limit)
	}
}

// TestFixedConcurrentEvictionKeepsBound is the same for Fixed.
func TestFixedConcurrentEvictionKeepsBound(t *testing.T) {
	const limit = 8
	clock := faketime.New()
	f := ratelimit.Fixed{Rate: 1000, Burst: 2, MaxScopes: limit, Now: clock.Now}
	evictionRun{goroutines: 8, rounds: 3000, limit: limit, scope: strided(scopeNames(64)),
		round: func(s string, i int) bool {
			r, w, ok := f.Reserve(s)
			if !ok || w > time.Second {
				t.Errorf("Reserve(%s) = %v, %t; want a wait of at most 1s, granted", s, w, ok)
				return false
			}
			if w > 0 && i%2 == 0 {
				r.Delay()
				r.Cancel()
			}
			if i%50 == 0 {
				clock.Advance(ms)
			}
			return true
		},
		stored: func() int { return ratelimit.FixedScopes(&f) },
	}.run(t)
}
