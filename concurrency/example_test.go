package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// An attempt over the limit is refused at once, with an error to tell
// apart from the server's.
func ExampleAdaptive() {
	a := &concurrency.Adaptive{Initial: 2}
	ctx := context.Background()
	p1, _ := a.Acquire(ctx, "api.example.com")
	p2, _ := a.Acquire(ctx, "api.example.com")
	_, err := a.Acquire(ctx, "api.example.com")
	fmt.Println(errors.Is(err, concurrency.ErrLimited))

	p1.Done(12*time.Millisecond, classify.Success) // a place comes free
	p3, err := a.Acquire(ctx, "api.example.com")
	fmt.Println(err)
	p2.Drop() // not sent after all
	p3.Done(11*time.Millisecond, classify.Success)
	fmt.Printf("%+v\n", a.State("api.example.com"))
	// Output:
	// true
	// <nil>
	// {Limit:2 InFlight:0 Waiting:0 Refused:1 MinLatency:0s Latency:0s}
}

// The limit rises while the latency stays at its no-load value and the
// limit is full, and falls when the latency doubles: at 20 ms instead of
// 10, half the attempts in flight were queueing, so the limit falls to the
// other half, 20, plus a queue of its square root. (The round under way
// when the latency changed mixes both latencies; the first round of 20 ms
// alone lowers the limit.)
func ExamplePermit_Done() {
	a := &concurrency.Adaptive{Max: 40}
	ctx := context.Background()
	var flight []concurrency.Permit
	fill := func() {
		for {
			p, err := a.Acquire(ctx, "api")
			if err != nil {
				return
			}
			flight = append(flight, p)
		}
	}
	serve := func(n int, latency time.Duration) {
		for range n {
			flight[0].Done(latency, classify.Success)
			flight = flight[1:]
			fill()
		}
		st := a.State("api")
		fmt.Printf("after %d attempts of %v: limit %d, no-load latency %v\n", n, latency, st.Limit, st.MinLatency)
	}
	fill()
	serve(2000, 10*time.Millisecond)
	serve(120, 20*time.Millisecond)
	// Output:
	// after 2000 attempts of 10ms: limit 40, no-load latency 10ms
	// after 120 attempts of 20ms: limit 24, no-load latency 10ms
}

// A bulkhead: at most Max attempts of each scope at once; a caller may wait
// up to MaxWait, in line, for a place to come free.
func ExampleFixed() {
	never := func(time.Duration) <-chan time.Time { return nil } // a MaxWait that does not pass, for the example
	f := &concurrency.Fixed{Max: 1, MaxWait: 100 * time.Millisecond, After: never}
	ctx := context.Background()
	p, _ := f.Acquire(ctx, "db")

	got := make(chan error)
	go func() {
		q, err := f.Acquire(ctx, "db") // waits: the one place is taken
		q.Done(3*time.Millisecond, classify.Success)
		got <- err
	}()
	for f.State("db").Waiting == 0 {
		runtime.Gosched()
	}
	p.Done(4*time.Millisecond, classify.Success) // the place goes to the caller waiting
	fmt.Println(<-got)
	fmt.Printf("%+v\n", f.State("db"))
	// Output:
	// <nil>
	// {Limit:1 InFlight:0 Waiting:0 Refused:0 MinLatency:0s Latency:0s}
}
