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

func ExampleEqualJitter_Delay() {
	// Half of each ceiling is kept; Rand 0.5 adds a quarter.
	s := backoff.EqualJitter{Rand: func() float64 { return 0.5 }}
	fmt.Println(s.Delay(1), s.Delay(3), s.Delay(10))
	// Output: 750ms 3s 15s
}

func ExampleDecorrelated_Delay() {
	// Each sleep is drawn between Base and three times the one before;
	// with Rand fixed at 0.5: 1 + 0.5*(3*2 - 1) = 3.5, and so on.
	s := backoff.Decorrelated{Rand: func() float64 { return 0.5 }}
	for retry := 1; retry <= 6; retry++ {
		fmt.Println(retry, s.Delay(retry))
	}
	// Output:
	// 1 2s
	// 2 3.5s
	// 3 5.75s
	// 4 9.125s
	// 5 14.1875s
	// 6 20s
}

func ExampleScaledJitter_Delay() {
	// The Kotlin SDK's defaults without jitter: 10ms growing by 1.5.
	s := backoff.ScaledJitter{NoJitter: true}
	fmt.Println(s.Delay(1), s.Delay(2), s.Delay(3), s.Delay(20))

	// Half jitter: Rand 0.5 takes a quarter off.
	h := backoff.ScaledJitter{Jitter: 0.5, Rand: func() float64 { return 0.5 }}
	fmt.Println(h.Delay(1), h.Delay(20))
	// Output:
	// 10ms 15ms 22.5ms 20s
	// 7.5ms 15s
}

func ExampleExponential_Delay() {
	// Azure Storage's exponential policy, at the middle of its random range.
	s := backoff.Exponential{
		MinBackoff:   3 * time.Second,
		MaxBackoff:   30 * time.Second,
		DeltaBackoff: 4 * time.Second,
		Rand:         func() float64 { return 0.5 },
	}
	fmt.Println(s.Delay(1), s.Delay(2), s.Delay(3), s.Delay(4))
	// Output: 3s 7s 15s 30s
}

func ExampleIncremental_Delay() {
	s := backoff.Incremental{FastFirstRetry: true}
	for retry := 1; retry <= 4; retry++ {
		fmt.Println(s.Delay(retry))
	}
	// Output:
	// 0s
	// 2s
	// 3s
	// 4s
}

func ExampleConstant_Delay() {
	// The Azure guide's interactive suggestion: 500ms, first retry at once.
	s := backoff.Constant{Interval: 500 * time.Millisecond, FastFirstRetry: true}
	fmt.Println(s.Delay(1), s.Delay(2), s.Delay(3))
	// Output: 0s 500ms 500ms
}

func ExampleSchedule() {
	// SNS's example HTTP/S delivery policy: 3 immediate retries, 2 at 1s,
	// 10 backing off exponentially from 1s to 60s, 35 at 60s.
	s := backoff.Schedule{
		MinDelay:           time.Second,
		MaxDelay:           time.Minute,
		NumRetries:         50,
		NumNoDelayRetries:  3,
		NumMinDelayRetries: 2,
		NumMaxDelayRetries: 35,
		BackoffFunction:    backoff.CurveExponential,
	}
	var delays []time.Duration
	for retry := 1; retry <= 16; retry++ {
		delays = append(delays, s.Delay(retry).Round(10*time.Millisecond))
	}
	fmt.Println(delays)
	fmt.Println(s.Total().Round(time.Second), s.Validate())
	// Output:
	// [0s 0s 0s 1s 1s 1s 1.58s 2.48s 3.91s 6.17s 9.72s 15.33s 24.15s 38.07s 1m0s 1m0s]
	// 37m44s <nil>
}

func ExampleSchedule_Validate() {
	s := backoff.Schedule{MinDelay: 500 * time.Millisecond, NumRetries: 120}
	fmt.Println(s.Validate())
	// Output:
	// backoff: Schedule.NumRetries is 120, want 0 to 100
	// backoff: Schedule.MinDelay is 500ms, want 1s to MaxDelay (20s)
}

func ExampleCurve() {
	// SNS's chart: 10 backoff retries from 5s to 260s, one line per function.
	for c := backoff.CurveLinear; c <= backoff.CurveGeometric; c++ {
		s := backoff.Schedule{MinDelay: 5 * time.Second, MaxDelay: 260 * time.Second, NumRetries: 10, BackoffFunction: c}
		fmt.Printf("%-12s", c)
		for retry := 1; retry <= 10; retry++ {
			fmt.Printf(" %3.0f", s.Delay(retry).Seconds())
		}
		fmt.Println()
	}
	// Output:
	// linear         5  33  62  90 118 147 175 203 232 260
	// arithmetic     5   8  18  33  55  84 118 159 206 260
	// exponential    5   8  12  19  29  45  70 108 168 260
	// geometric      5  97 157 195 220 236 246 253 257 260
}

func ExampleParseCurve() {
	c, err := backoff.ParseCurve("exponential")
	fmt.Println(c == backoff.CurveExponential, err)
	_, err = backoff.ParseCurve("steep")
	fmt.Println(err)
	// Output:
	// true <nil>
	// backoff: Schedule.BackoffFunction is "steep", want linear, arithmetic, exponential or geometric
}

func ExampleCapped() {
	// Topaz's incremental strategy has no cap; add one.
	s := backoff.Capped{Strategy: backoff.Incremental{}, Max: 3 * time.Second}
	for retry := 1; retry <= 5; retry++ {
		fmt.Println(retry, s.Delay(retry))
	}
	// Output:
	// 1 1s
	// 2 2s
	// 3 3s
	// 4 3s
	// 5 3s
}

func ExampleJittered() {
	// Up to 20% off a fixed 1s interval; Rand 0.5 takes 10%.
	s := backoff.Jittered{
		Strategy: backoff.Constant{Interval: time.Second},
		Fraction: 0.2,
		Rand:     func() float64 { return 0.5 },
	}
	fmt.Println(s.Delay(1))
	// Output: 900ms
}
