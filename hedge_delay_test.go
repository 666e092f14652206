package retrytransport_test

// Hedge delays: a fixed Delay, then the scope's observed latency quantile,
// which counts the attempts that ran into their AttemptTimeout; a hedge
// that is never due is never sent.

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

func TestHedgeNotSentWhenTheAttemptIsFast(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return false })
	srv := newFaultServer(t, g)
	// A sleep that waits for its context: the hedge is never due.
	never := func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: time.Hour}}, sleepingWith(never), backoffUnlessSet(everySecond))
	client := tr.client(t)
	for range 5 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	if s := tr.scopeStats(srv.host()); s.Attempts != 5 || s.Hedges != 0 {
		t.Errorf("stats %+v; want 5 attempts and no hedge", s)
	}
}

// The goroutine that sleeps a hedge delay ends with the race: when
// RoundTrip returns, every hedge delay it armed has been slept and its
// sleep has returned, though the hook is slow to return once its context
// ends. (A timer left running would outlive the request: goleak misses it
// when it ends before the test does.)
func TestHedgeDelaySleptToItsEndBeforeRoundTripReturns(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return false })
	srv := newFaultServer(t, g)
	var entered, returned atomic.Int64
	slowToEnd := func(ctx context.Context, d time.Duration) error {
		entered.Add(1)
		<-ctx.Done() // the hedge is never due
		time.Sleep(20 * time.Millisecond)
		returned.Add(1)
		return ctx.Err()
	}
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: time.Hour}}, sleepingWith(slowToEnd), backoffUnlessSet(everySecond))
	client := tr.client(t)
	for i := range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if e, r := entered.Load(), returned.Load(); e != int64(i+1) || r != e {
			t.Errorf("request %d: %d hedge delays begun and %d returned when RoundTrip returned; want %d of each", i+1, e, r, i+1)
		}
		readBody(t, resp)
	}
}

// With a Quantile, the delay is the fixed Delay until the scope has seen
// enough attempts, then the observed quantile.
func TestHedgeDelayFollowsTheQuantile(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return false })
	srv := newFaultServer(t, g)
	var mu sync.Mutex
	var delays []time.Duration
	record := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		<-ctx.Done() // never due: every attempt answers first
		return ctx.Err()
	}
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: 5 * time.Millisecond, Quantile: 0.9}}, sleepingWith(record), backoffUnlessSet(everySecond))
	client := tr.client(t)
	for range 30 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delays) != 30 {
		t.Fatalf("%d hedge delays; want one per attempt", len(delays))
	}
	for i, d := range delays {
		// The fake clock stands still: every attempt took no time, and the
		// quantile is the first bucket's top, 50µs.
		want := 50 * time.Microsecond
		if i < 20 {
			want = 5 * time.Millisecond
		}
		if d != want {
			t.Errorf("attempt %d's hedge delay = %v; want %v", i+1, d, want)
		}
	}
}

// The latency quantile hears of attempts that ran into their
// AttemptTimeout: the copies the timer ends are censored at the time they
// took, so the hedge delay does not collapse to the fast answers'. Here 20
// attempts answered at once and 40 took over a (fake) second before their
// timer ended them: the 0.5 quantile is above a second.
func TestHedgeQuantileCountsTimedOutAttempts(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	var slow atomic.Bool
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			clock.Advance(2 * time.Second) // this attempt takes 2 s of the transport's clock
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}))
	var mu sync.Mutex
	var delays []time.Duration
	never := func(ctx context.Context, d time.Duration) error { // hedge delays only: MaxAttempts 1
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 5 * time.Millisecond,
		Hedge: &policy.Hedge{Delay: time.Millisecond, Quantile: 0.5}}
	tr := newRig(t, nil, p, onClock(clock), sleepingWith(never), backoffUnlessSet(everySecond))
	client := tr.client(t)
	get := func() {
		resp, err := client.Get(srv.URL)
		if err == nil {
			readBody(t, resp)
		}
	}
	for range 20 {
		get()
	}
	slow.Store(true)
	for range 40 {
		get()
	}
	slow.Store(false)
	get()
	mu.Lock()
	last := delays[len(delays)-1]
	mu.Unlock()
	if last < time.Second {
		t.Errorf("hedge delay after 20 fast and 40 timed-out (2 s) attempts = %v; want the 0.5 quantile, above 1s", last)
	}
	srv.conns.expectAllClosed(t, client)
}
