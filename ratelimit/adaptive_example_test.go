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
		_, wait, ok := a.ReserveAt(at(500), "api.example.com")
		fmt.Println("api.example.com:", wait.Round(time.Millisecond), ok)
	}
	_, wait, ok := a.ReserveAt(at(500), "other.example.com")
	fmt.Println("other.example.com:", wait, ok)
	// Output:
	// measured 10.0 req/s, fill rate 7.0 req/s
	// api.example.com: 143ms true
	// api.example.com: 286ms true
	// api.example.com: 429ms true
	// other.example.com: 0s true
}

// Three callers reserve at once after a throttle set the rate to 7 req/s:
// they queue 1/7 s apart. Each waits, then asks its reservation again. When
// the first is sent, the answer to an earlier request is another throttle,
// which lowers the rate to 4.9 req/s: the two still waiting are told to wait
// longer, and go 1/4.9 s apart, in the order they reserved.
func ExampleAdaptive_ReserveAt() {
	a := &ratelimit.Adaptive{}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start
	a.ReserveAt(now, "api.example.com") // the scope's first event
	for range 4 {
		now = now.Add(100 * time.Millisecond)
		a.RecordAt(now, "api.example.com", classify.Success)
	}
	now = now.Add(100 * time.Millisecond)
	a.RecordAt(now, "api.example.com", classify.Throttle) // at 10 req/s: fill rate 7

	type caller struct {
		turn ratelimit.Reservation
		due  time.Time
	}
	var callers []*caller
	for range 3 {
		turn, wait, ok := a.ReserveAt(now, "api.example.com")
		if !ok {
			fmt.Println(ratelimit.ErrRateLimited)
			return
		}
		callers = append(callers, &caller{turn, now.Add(wait)})
	}
	for i, c := range callers {
		for {
			now = c.due // the caller sleeps until its turn, on a fake clock
			wait := a.DelayAt(now, c.turn)
			if wait == 0 {
				break
			}
			c.due = now.Add(wait)
		}
		fmt.Printf("caller %d sends at +%v\n", i+1, now.Sub(start).Round(time.Millisecond))
		if i == 0 {
			a.RecordAt(now, "api.example.com", classify.Throttle)
			fmt.Printf("fill rate %.1f req/s\n", a.StateAt(now, "api.example.com").FillRate)
		}
	}
	// Output:
	// caller 1 sends at +643ms
	// fill rate 4.9 req/s
	// caller 2 sends at +847ms
	// caller 3 sends at +1.051s
}

// SNS-style pacing (throttlePolicy maxReceivesPerSecond 10) with a burst of
// 2, refusing waits longer than 250 ms.
func ExampleFixed() {
	f := &ratelimit.Fixed{Rate: 10, Burst: 2, MaxWait: 250 * time.Millisecond}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= 5; i++ {
		_, wait, ok := f.ReserveAt(now, "endpoint.example.com")
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
