package ratelimit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// A client sends 10 requests a second to a host; the fifth answer, at 500 ms,
// is a throttle. The limiter then allows 0.7 × 10 = 7 requests a second to
// that host, from an empty bucket; other hosts are not limited.
func ExampleAdaptive() {
	a := &ratelimit.Adaptive{}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	a.ReserveAt(at(0), "api.example.com")
	for ms := 100; ms <= 500; ms += 100 {
		k := classify.Success
		if ms == 500 {
			k = classify.Throttle
		}
		a.RecordAt(at(ms), "api.example.com", k)
	}
	st := a.StateAt(at(500), "api.example.com")
	fmt.Printf("measured %.1f req/s, fill rate %.1f req/s\n", st.MeasuredRate, st.FillRate)

	for range 3 {
		wait, ok := a.ReserveAt(at(500), "api.example.com")
		fmt.Println("api.example.com:", wait.Round(time.Millisecond), ok)
	}
	wait, ok := a.ReserveAt(at(500), "other.example.com")
	fmt.Println("other.example.com:", wait, ok)
	// Output:
	// measured 10.0 req/s, fill rate 7.0 req/s
	// api.example.com: 143ms true
	// api.example.com: 286ms true
	// api.example.com: 429ms true
	// other.example.com: 0s true
}

// The waiting loop of the AWS SDKs: a caller told to wait gives its token
// back, sleeps, and asks again. Waiters then hold no place in a queue priced
// at an old rate: a rate that changes applies to each of them at its next
// check. Here, after a throttle set the rate to 7 req/s, answers to other
// requests keep raising it, so each wait is shorter than the one before:
// 1/7 s, then 1/7.61 s, then 1/8.09 s.
func ExampleAdaptive_ReserveAt() {
	a := &ratelimit.Adaptive{}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sleep := func(d time.Duration) { now = now.Add(d) } // a fake clock
	a.ReserveAt(now, "api.example.com")
	for range 5 {
		sleep(100 * time.Millisecond)
		a.RecordAt(now, "api.example.com", classify.Success)
	}
	a.RecordAt(now, "api.example.com", classify.Throttle) // fill rate 7

	start := now
	for attempt := 1; attempt <= 3; attempt++ {
		for {
			wait, ok := a.ReserveAt(now, "api.example.com")
			if !ok {
				fmt.Println(ratelimit.ErrRateLimited)
				return
			}
			if wait == 0 {
				break
			}
			a.CancelAt(now, "api.example.com")
			sleep(wait)
			// Meanwhile an answer to another request comes in.
			a.RecordAt(now, "api.example.com", classify.Success)
		}
		fmt.Printf("attempt %d sent at +%v\n", attempt, now.Sub(start).Round(time.Millisecond))
	}
	// Output:
	// attempt 1 sent at +143ms
	// attempt 2 sent at +274ms
	// attempt 3 sent at +398ms
}

// SNS-style pacing (throttlePolicy maxReceivesPerSecond 10) with a burst of
// 2, refusing waits longer than 250 ms.
func ExampleFixed() {
	f := &ratelimit.Fixed{Rate: 10, Burst: 2, MaxWait: 250 * time.Millisecond}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= 5; i++ {
		wait, ok := f.ReserveAt(now, "endpoint.example.com")
		if !ok {
			err := fmt.Errorf("send %d: wait %v: %w", i, wait, ratelimit.ErrRateLimited)
			fmt.Println(err, errors.Is(err, ratelimit.ErrRateLimited))
			continue
		}
		fmt.Printf("send %d after %v\n", i, wait)
	}
	// Output:
	// send 1 after 0s
	// send 2 after 0s
	// send 3 after 100ms
	// send 4 after 200ms
	// send 5: wait 300ms: ratelimit: client-side rate limit true
}
