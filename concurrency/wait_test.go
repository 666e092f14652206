package concurrency_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// Waiting for a place: first come first served, bounded by MaxWait and the
// caller's context, on fake timers. Adaptive and Fixed share the queue;
// the tests use both.

// timers is a fake After: each call records its duration and returns a
// channel that receives only when the test fires it.
type timers struct {
	mu    sync.Mutex
	asked []time.Duration
	chans []chan time.Time
}

func (f *timers) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan time.Time, 1)
	f.asked = append(f.asked, d)
	f.chans = append(f.chans, c)
	return c
}

// fire makes the i-th timer made go off.
func (f *timers) fire(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chans[i] <- time.Time{}
}

// durations returns the durations asked for, in order.
func (f *timers) durations() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.asked...)
}

// result is what a waiting Acquire returned.
type result struct {
	who int
	p   concurrency.Permit
	err error
}

// waitFor polls until cond holds, yielding to the goroutines it waits
// for, which never sleep.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1_000_000 {
		if cond() {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("gave up waiting until %s", what)
}

// queue starts n callers of lim one after another, each in line before
// the next starts (state tells how many wait), and returns the channel
// their results arrive on.
func queue(t *testing.T, ctx context.Context, lim concurrency.Limiter, state func() concurrency.State, n int) <-chan result {
	t.Helper()
	out := make(chan result, n)
	for i := range n {
		go func() {
			p, err := lim.Acquire(ctx, "api")
			out <- result{i, p, err}
		}()
		waitFor(t, "a caller waits", func() bool { return state().Waiting == i+1 })
	}
	return out
}

// TestWaitersGetPlacesInArrivalOrder: three callers wait for the one
// place of a Fixed; each place freed goes to the first still in line.
func TestWaitersGetPlacesInArrivalOrder(t *testing.T) {
	tm := &timers{}
	f := &concurrency.Fixed{Max: 1, MaxWait: time.Minute, After: tm.After}
	held, err := f.Acquire(context.Background(), "api")
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	results := queue(t, context.Background(), f, func() concurrency.State { return f.State("api") }, 3)
	var order []int
	p := held
	for range 3 {
		p.Done(time.Millisecond, classify.Success)
		r := <-results
		if r.err != nil {
			t.Fatalf("caller %d: Acquire = %v; want a place", r.who, r.err)
		}
		order = append(order, r.who)
		p = r.p
	}
	p.Done(time.Millisecond, classify.Success)
	if want := []int{0, 1, 2}; !slices.Equal(order, want) {
		t.Errorf("places went to %v; want %v", order, want)
	}
	if st := f.State("api"); st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("State = %+v; want nothing in flight or waiting", st)
	}
	if got := tm.durations(); len(got) != 3 || got[0] != time.Minute {
		t.Errorf("After asked for %v; want MaxWait (1m) for each of 3 callers", got)
	}
}

// TestWaiterRefusedAfterMaxWaitLeavesLine: a caller whose MaxWait passes
// gets ErrLimited, leaves the line, and the place freed later goes to the
// caller behind it, not to it.
func TestWaiterRefusedAfterMaxWaitLeavesLine(t *testing.T) {
	tm := &timers{}
	a := &concurrency.Adaptive{Initial: 1, MaxWait: 50 * time.Millisecond, After: tm.After}
	held, err := a.Acquire(context.Background(), "api")
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	results := queue(t, context.Background(), a, func() concurrency.State { return a.State("api") }, 2)
	tm.fire(0)
	r := <-results
	if r.who != 0 || !errors.Is(r.err, concurrency.ErrLimited) {
		t.Fatalf("caller %d: Acquire = %v after its MaxWait; want caller 0, ErrLimited", r.who, r.err)
	}
	if st := a.State("api"); st.Waiting != 1 || st.Refused != 1 {
		t.Fatalf("State after the refusal = %+v; want 1 waiting, 1 refused", st)
	}
	held.Drop()
	r = <-results
	if r.who != 1 || r.err != nil {
		t.Fatalf("caller %d: Acquire = %v; want caller 1 given the place", r.who, r.err)
	}
	r.p.Drop()
	if st := a.State("api"); st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("State = %+v; want nothing in flight or waiting", st)
	}
}

// TestWaiterLeavesLineWhenContextEnds: a caller whose context ends while
// it waits gets the context's error and no place; the place freed later
// stays free.
func TestWaiterLeavesLineWhenContextEnds(t *testing.T) {
	f := &concurrency.Fixed{Max: 1, MaxWait: time.Minute, After: (&timers{}).After}
	held, err := f.Acquire(context.Background(), "api")
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	results := queue(t, ctx, f, func() concurrency.State { return f.State("api") }, 1)
	cancel()
	if r := <-results; !errors.Is(r.err, context.Canceled) || r.p != (concurrency.Permit{}) {
		t.Fatalf("Acquire = %v, %v after cancel; want the zero Permit, context.Canceled", r.p, r.err)
	}
	held.Done(time.Millisecond, classify.Success)
	if st := f.State("api"); st.InFlight != 0 || st.Waiting != 0 || st.Refused != 0 {
		t.Errorf("State = %+v; want nothing in flight, waiting or refused", st)
	}
}

// TestAcquireRefusesAtOnceWithoutMaxWait: with MaxWait zero, a caller
// finding every place taken gets ErrLimited itself, at once.
func TestAcquireRefusesAtOnceWithoutMaxWait(t *testing.T) {
	for _, lim := range []interface {
		concurrency.Limiter
		State(string) concurrency.State
	}{&concurrency.Fixed{Max: 1}, &concurrency.Adaptive{Initial: 1}} {
		held, err := lim.Acquire(context.Background(), "api")
		if err != nil {
			t.Fatalf("%T: Acquire = %v", lim, err)
		}
		p, err := lim.Acquire(context.Background(), "api")
		if err != concurrency.ErrLimited || p != (concurrency.Permit{}) {
			t.Errorf("%T: second Acquire = %v, %v; want the zero Permit, ErrLimited", lim, p, err)
		}
		if st := lim.State("api"); st.Refused != 1 || st.InFlight != 1 {
			t.Errorf("%T: State = %+v; want 1 refused, 1 in flight", lim, st)
		}
		held.Drop()
	}
}

// TestAcquireWithEndedContextDoesNotWait: a caller whose context has
// ended gets its error instead of waiting when no place is free, but a
// free place is still handed out.
func TestAcquireWithEndedContextDoesNotWait(t *testing.T) {
	f := &concurrency.Fixed{Max: 1, MaxWait: time.Minute, After: (&timers{}).After}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	held, err := f.Acquire(ctx, "api")
	if err != nil {
		t.Fatalf("Acquire on a free place with an ended context = %v; want a place", err)
	}
	if _, err := f.Acquire(ctx, "api"); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire on a full scope with an ended context = %v; want context.Canceled", err)
	}
	if st := f.State("api"); st.Waiting != 0 {
		t.Errorf("Waiting = %d; want 0", st.Waiting)
	}
	held.Drop()
}
