package quota_test

import (
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
)

// A small quota in circuit-breaker mode: once a host's bucket is drained,
// retries to it are refused at once while another host keeps retrying.
func ExampleBucket() {
	q := &quota.Bucket{Capacity: 20} // a retry after a transient outcome costs 5
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	for range 5 {
		cost, _, ok := q.AcquireAt(now, "down.example", classify.Transient)
		fmt.Printf("retry down.example: cost %d, ok %t, level %v\n", cost, ok, q.LevelAt(now, "down.example"))
	}
	_, _, ok := q.AcquireAt(now, "up.example", classify.Transient)
	fmt.Println("retry up.example:", ok)

	// The host recovers: a retry that succeeds refunds its cost, and each
	// first attempt that succeeds adds one token.
	q.RefundAt(now, "down.example", 5)
	q.SuccessAt(now, "down.example")
	fmt.Println("level down.example:", q.LevelAt(now, "down.example"))
	// Output:
	// retry down.example: cost 5, ok true, level 15
	// retry down.example: cost 5, ok true, level 10
	// retry down.example: cost 5, ok true, level 5
	// retry down.example: cost 5, ok true, level 0
	// retry down.example: cost 0, ok false, level 0
	// retry up.example: true
	// level down.example: 6
}

// In Wait mode a bucket that cannot pay takes the cost anyway and reports how
// long the refill needs to cover the deficit; the caller waits that long.
func ExampleBucket_waitMode() {
	q := &quota.Bucket{Capacity: 10, RefillPerSecond: 4, Wait: true}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	for range 3 {
		cost, wait, ok := q.AcquireAt(now, "api.example", classify.Throttle)
		fmt.Printf("cost %d, wait %v, ok %t, level %v\n", cost, wait, ok, q.LevelAt(now, "api.example"))
	}
	fmt.Println("level after 5s:", q.LevelAt(now.Add(5*time.Second), "api.example"))
	// Output:
	// cost 10, wait 0s, ok true, level 0
	// cost 10, wait 2.5s, ok true, level -10
	// cost 10, wait 5s, ok true, level -20
	// level after 5s: 0
}

// A retry budget grants retries in proportion to the requests of the
// window: here half of them, with no floor.
func ExampleBudget() {
	b := &quota.Budget{Ratio: 0.5, MinPerSecond: -1, Window: 10 * time.Second}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	granted := 0
	for range 10 { // ten requests, each failing and asking for a retry
		b.RequestAt(now, "api.example.com")
		if _, _, ok := b.AcquireAt(now, "api.example.com", classify.Transient); ok {
			granted++
		}
	}
	fmt.Println("retries granted:", granted)
	fmt.Println("left:", b.LevelAt(now, "api.example.com"))
	// Ten seconds on, those requests and retries have left the window.
	fmt.Println("left 10 s on:", b.LevelAt(now.Add(10*time.Second), "api.example.com"))
	// Output:
	// retries granted: 5
	// left: 0
	// left 10 s on: 0
}
