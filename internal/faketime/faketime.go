// Package faketime is a manual clock for tests: Now returns a settable
// instant and Sleep records the requested duration, advances the clock by it
// and returns at once, so no test waits for real time.
package faketime

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake clock. The zero value starts at the zero time; use New to
// start at a fixed, readable instant. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// Epoch is the instant New starts at: 2026-01-02 03:04:05 UTC.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// New returns a Clock set to Epoch.
func New() *Clock { return &Clock{now: Epoch} }

// NewAt returns a Clock set to t. Tests that also use a real context
// deadline start the clock at the real time, so that the deadline means the
// same instant to both.
func NewAt(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's current instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Sleep records d, advances the clock by d and returns at once. It returns
// the context's error, without advancing, if ctx is already done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// Sleeps returns a copy of every duration passed to Sleep, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
