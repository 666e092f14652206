package concurrency

import (
	"context"
	"time"

	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// Fixed is a bulkhead: each scope may have at most Max attempts in flight,
// whatever their latencies. Call Acquire before each attempt and end the
// [Permit] it returns with Done or Drop, as with [Adaptive]; Fixed learns
// nothing from Done. An attempt over the limit is refused with
// [ErrLimited]: at once, or, with MaxWait set, when no place came within
// MaxWait (callers wait in line, first come first served). failsafe-go
// calls this a bulkhead; it suits a server whose concurrency is known.
//
// A Max that is zero or negative means no limit: Acquire returns the zero
// Permit at once without looking the scope up. At most MaxScopes scopes
// are stored at any moment; a new scope beyond that evicts one as
// [Adaptive] does, and the evicted scope starts again with every place
// free, so for a while it may have more than Max attempts in flight.
//
// The zero value is ready to use and limits nothing. A Fixed is safe for
// concurrent use, and goroutines using different scopes never wait for
// each other. Acquire on a free place, Done, Drop and a refusal do not
// allocate. It never sleeps but to wait for a place and starts no
// goroutine. It must not be copied, nor its fields changed, after first
// use.
type Fixed struct {
	// Max is how many attempts of each scope may be in flight at once.
	// Zero or negative means no limit.
	Max int
	// MaxWait is how long Acquire may wait for a place when none is
	// free. Zero or negative means that it refuses at once.
	MaxWait time.Duration
	// MaxScopes is the most scopes stored at once. Zero or negative
	// means DefaultMaxScopes.
	MaxScopes int
	// After makes the MaxWait timer: the channel receives when d has
	// passed. Nil means a real timer. Tests pass a fake.
	After func(d time.Duration) <-chan time.Time

	scopes scopemap.Sync[gate]
}

// Acquire takes a place for one attempt of scope, as [Adaptive.Acquire]
// does: at once when one is free and nobody waits; otherwise [ErrLimited]
// at once, or, with MaxWait set, after waiting in line for at most
// MaxWait or until ctx ends (ctx's error). Without a limit it returns the
// zero Permit.
func (f *Fixed) Acquire(ctx context.Context, scope string) (Permit, error) {
	if f.Max <= 0 {
		return Permit{}, nil
	}
	g := f.scopes.Get(scope)
	if g == nil {
		limit := f.Max
		g = f.scopes.Add(scope, orDefault(f.MaxScopes, DefaultMaxScopes), func(g *gate) { g.limit = limit })
	}
	return g.acquire(ctx, f.MaxWait, f.After)
}

// State returns a snapshot of scope: its limit, places taken, callers
// waiting and refusals. A scope not stored (never used, evicted, or any
// scope while Max is not positive) reads as the zero State. It does not
// mark the scope used.
func (f *Fixed) State(scope string) State {
	if g := f.scopes.Peek(scope); g != nil {
		return g.state()
	}
	return State{}
}
