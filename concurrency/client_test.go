package concurrency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// client keeps as many attempts of one scope in flight as its limiter
// lets it, as a caller with more work than the limit does: it ends them
// oldest first, each with the latency and kind the test gives, and after
// each takes places until refused, so that every place is taken with the
// limit full.
type client struct {
	t      *testing.T
	lim    concurrency.Limiter
	scope  string
	flight []concurrency.Permit
}

func newClient(t *testing.T, lim concurrency.Limiter, scope string) *client {
	t.Helper()
	c := &client{t: t, lim: lim, scope: scope}
	c.fill()
	return c
}

// fill takes places until the limiter refuses one.
func (c *client) fill() {
	c.t.Helper()
	for {
		p, err := c.lim.Acquire(context.Background(), c.scope)
		if errors.Is(err, concurrency.ErrLimited) {
			return
		}
		if err != nil {
			c.t.Fatalf("Acquire(%q) = %v; want a place or ErrLimited", c.scope, err)
		}
		c.flight = append(c.flight, p)
	}
}

// end ends n attempts, oldest first, each with latency and kind k, taking
// places again after each.
func (c *client) end(n int, latency time.Duration, k classify.Kind) {
	c.t.Helper()
	for range n {
		if len(c.flight) == 0 {
			c.t.Fatalf("client of %q: nothing in flight", c.scope)
		}
		p := c.flight[0]
		c.flight = c.flight[1:]
		p.Done(latency, k)
		c.fill()
	}
}
