package backoff_test

import (
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

func ExampleFullJitter_Delay() {
	// A fixed Rand makes the jitter predictable; leave it nil in real use.
	s := backoff.FullJitter{Rand: func() float64 { return 0.5 }}
	fmt.Println(s.Delay(1), s.Delay(3), s.Delay(10))
	// Output: 500ms 2s 10s
}

func ExampleFullJitter_scaled() {
	// The default shape a thousand times faster: ceilings of 1ms, 2ms,
	// 4ms, 8ms, 16ms, then 20ms.
	s := backoff.FullJitter{
		Base: time.Millisecond,
		Max:  20 * time.Millisecond,
		Rand: func() float64 { return 0.5 },
	}
	for retry := 1; retry <= 6; retry++ {
		fmt.Println(retry, s.Delay(retry))
	}
	// Output:
	// 1 500µs
	// 2 1ms
	// 3 2ms
	// 4 4ms
	// 5 8ms
	// 6 10ms
}

func ExampleFunc() {
	// A fixed schedule: 100ms, 1s, then 5s for every later retry.
	schedule := []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second}
	var s backoff.Strategy = backoff.Func(func(retry int) time.Duration {
		return schedule[min(max(retry, 1), len(schedule))-1]
	})
	for retry := 1; retry <= 4; retry++ {
		fmt.Println(s.Delay(retry))
	}
	// Output:
	// 100ms
	// 1s
	// 5s
	// 5s
}
