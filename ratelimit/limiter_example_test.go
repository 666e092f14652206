package ratelimit_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/ratelimit"
)

// spaced is a Limiter of your own: each scope sends at most once per
// gap, and its reservations wait for their slots in turn. It implements
// Queue so that a Reservation can ask it how long is left; the Ticket
// holds the slot, in nanoseconds since the Unix epoch.
type spaced struct {
	gap time.Duration
	now func() time.Time

	mu   sync.Mutex
	next map[string]time.Time // the next free slot per scope
}

func (s *spaced) Reserve(scope string) (ratelimit.Reservation, time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.next[scope]
	if slot.Before(now) {
		slot = now
	}
	s.next[scope] = slot.Add(s.gap)
	if !slot.After(now) {
		return ratelimit.Reservation{}, 0, true // no wait: nothing to ask again
	}
	t := ratelimit.Ticket{Seq: uint64(slot.UnixNano())}
	return ratelimit.NewReservation(s, scope, t), slot.Sub(now), true
}

func (s *spaced) Delay(r ratelimit.Reservation) time.Duration {
	return max(time.Unix(0, int64(r.Ticket().Seq)).Sub(s.now()), 0)
}

func (s *spaced) Cancel(r ratelimit.Reservation) {} // a slot given up stays empty

// A Limiter of your own, here one that spaces each scope's sends 100 ms
// apart, goes in Policy.Limiter or Policy.RateLimit like the package's
// own; the transport sleeps the wait and asks the reservation again until
// it is due.
func ExampleLimiter() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := &spaced{gap: 100 * time.Millisecond, now: func() time.Time { return now }, next: map[string]time.Time{}}

	var rs []ratelimit.Reservation
	for range 3 {
		r, wait, _ := l.Reserve("api.example.com")
		rs = append(rs, r)
		fmt.Println("wait", wait)
	}
	now = now.Add(150 * time.Millisecond) // the callers sleep
	for i, r := range rs {
		fmt.Printf("reservation %d: %v left\n", i+1, r.Delay())
	}
	// Output:
	// wait 0s
	// wait 100ms
	// wait 200ms
	// reservation 1: 0s left
	// reservation 2: 0s left
	// reservation 3: 50ms left
}
