package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// A circuit opens after five failures in a row (here refused connections:
// a server that answers, even 503, counts only if Trips says so), refuses
// attempts at once while open, lets one probe through when its open time
// is over, and closes when the probe succeeds.
func ExampleCircuit() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &breaker.Circuit{
		Now:  func() time.Time { return now },
		Rand: func() float64 { return 0.5 }, // no jitter: open for exactly 1.5 s
	}
	const scope = "api.example.com:443"
	refused := errors.New("dial tcp 192.0.2.1:443: connect: connection refused")
	for range 5 {
		p, _ := c.Allow(scope)
		p.Done(classify.Outcome{Kind: classify.Transient, Reason: "connection refused"}, refused)
	}
	_, err := c.Allow(scope)
	fmt.Println(err)

	now = now.Add(1500 * time.Millisecond) // the open time is over
	probe, _ := c.Allow(scope)
	_, err = c.Allow(scope)
	fmt.Println("probe:", probe.Probe(), "other caller:", errors.Is(err, breaker.ErrOpen))

	probe.Done(classify.Outcome{Kind: classify.Success}, nil)
	fmt.Println(c.State(scope).Phase)
	// Output:
	// breaker: circuit open for scope "api.example.com:443": dial tcp 192.0.2.1:443: connect: connection refused
	// probe: true other caller: true
	// closed
}

// An *OpenError says which scope refused, until when, and why: it unwraps
// to the failure that opened the circuit, here two attempts that timed
// out with no success in between for 500 ms.
func ExampleOpenError() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &breaker.Circuit{
		Now:  func() time.Time { return now },
		Rand: func() float64 { return 0.5 },
	}
	a, _ := c.Allow("hung.example:443")
	b, _ := c.Allow("hung.example:443")
	now = now.Add(500 * time.Millisecond)
	a.Done(classify.Outcome{Kind: classify.Timeout}, context.DeadlineExceeded)
	b.Done(classify.Outcome{Kind: classify.Timeout}, context.DeadlineExceeded)

	_, err := c.Allow("hung.example:443")
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println(oe.Scope, "open for", oe.Until.Sub(now))
	}
	fmt.Println(errors.Is(err, breaker.ErrOpen), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// hung.example:443 open for 1.5s
	// true true
}

// OnChange hears each change of phase, for events and telemetry; while
// probes keep failing, the open time doubles.
func ExampleCircuit_onChange() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &breaker.Circuit{
		Failures: 1,
		Now:      func() time.Time { return now },
		Rand:     func() float64 { return 0.5 },
		OnChange: func(scope string, from breaker.Phase, s breaker.State) {
			fmt.Printf("%s: %v -> %v", scope, from, s.Phase)
			if s.Phase == breaker.Open {
				fmt.Printf(" for %v", s.OpenFor)
			}
			fmt.Println()
		},
	}
	refused := classify.Outcome{Kind: classify.Transient, Reason: "connection refused"}
	err := errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	p, _ := c.Allow("db.internal:5432")
	p.Done(refused, err)
	for range 2 {
		now = c.State("db.internal:5432").Until
		p, _ = c.Allow("db.internal:5432")
		p.Done(refused, err)
	}
	// Output:
	// db.internal:5432: closed -> open for 1.5s
	// db.internal:5432: open -> half-open
	// db.internal:5432: half-open -> open for 3s
	// db.internal:5432: open -> half-open
	// db.internal:5432: half-open -> open for 6s
}
