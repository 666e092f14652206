package concurrency

import (
	"context"
	"math"
	"time"

	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// The adaptive limit's defaults.
const (
	// DefaultInitial is the limit of a new scope, in places: as many
	// attempts as a scope is let send at once before anything is learned.
	DefaultInitial = 20
	// DefaultMax is the most places a scope's limit reaches.
	DefaultMax = 1000
	// DefaultTolerance is how many times the no-load latency a round's
	// mean latency may reach before it counts as a queue.
	DefaultTolerance = 1.75
	// DefaultBackoff is the factor the limit is multiplied by on a
	// Timeout outcome.
	DefaultBackoff = 0.5
)

// Adaptive is a concurrency limit per scope learned from latency. Call
// Acquire before each attempt, first attempts included, and end the
// [Permit] it returns with Done, giving the attempt's latency (from its
// send to its response headers, or to its error) and outcome kind, or with
// Drop if the attempt was not sent or the caller gave up on it. An
// attempt over the limit is refused with [ErrLimited]: at once, or, with
// MaxWait set, when no place came within MaxWait (callers wait in line,
// first come first served).
//
// # Algorithm
//
// It keeps for each scope a limit L, in places, and an estimate B of
// the no-load latency. It learns in rounds. A round's cohort is the next
// places handed out, max(8, L) of them or more when latencies vary
// (roundError), and the round closes when all of them have ended, so that
// its mean is not biased towards the attempts that answered first. Of the
// cohort's successes it takes the mean latency D and the mean number of
// attempts in flight when each was taken, itself included, M; and it notes
// whether the limit was reached: whether, since the round began, as many
// places were wanted as there are. At the round's close:
//
//	queue = M·(1 - B/D)                        Little's law: the share B/D of M was served, the rest queued
//	fall  if D > Tolerance·B and queue > √L,   and the limit was reached or the last round fell too
//	C     = M·B/D                              what the server serves without a queue
//	L'    = clamp(C + min(√C, (Tolerance-1)·C/2), L/2, L)   on a fall
//	L'    = 2·L                                reached, no queue yet seen and D <= (1+Tolerance)/2·B (slow start)
//	L'    = L + √L                             reached otherwise
//	L'    = L                                  not reached: a limit nobody fills does not grow
//
// L' is then kept within [Min, Max]. A fall lands on C plus a small queue,
// enough that a place freed is taken at once but in the lower half of the
// band the tolerance allows, so that the next round does not fall again;
// the limit then climbs by √L a round until the queue shows. A queue of √L
// or less counts as noise, and a scope that keeps fewer attempts in flight
// than that is not what makes its server queue; a queue seen once while
// the limit was not reached may be a burst, so it takes two rounds in a
// row.
//
// Probes keep B honest. Every 64th round in which the limit was reached,
// and at once when the limit falls twice in a row (the no-load latency may
// have risen, so that no limit brings the latency back to B), the next
// round runs at L/2: fewer attempts than the server serves, if B was
// right, so that its mean is the no-load latency. A probe whose mean is
// below 0.9·B shows that B was too high (the server got faster, or the
// first round queued): B takes the probe's mean and the next round probes
// at half again. Otherwise B takes the probe's mean if lower, or moves
// halfway to it if higher, probing again within 4 rounds when it rose by
// more than a fifth; then the limit returns to where it was, scaled by the
// new B over the old when B fell. The first round sets B to its own mean,
// and if it reached the limit probes at L/4 to take out its own queue.
//
// A round that wanted √L places at once or fewer, below L, cannot move the
// limit: its queue cannot pass √L, and the limit was not reached. The round
// after such a quiet one is not timed: its Permits' LearnsLatency is
// false, so that the caller spares each attempt two readings of the clock,
// and it closes as the quiet one did, changing nothing. So a caller with a
// few attempts in flight at a time pays for timing only in its scope's
// first round, which learns B, in probes, and in a round after its load
// has risen, which then learns as before. Places handed out outside a
// round's cohort are never timed either: their latencies are not learned
// from.
//
// A [classify.Timeout] outcome multiplies the limit by Backoff, at most
// once per round: a loss, as TCP counts one, whatever the latencies say.
// Only a success's latency is learned from: a refused connection fails in
// microseconds, a 5xx may be fast or slow, and a [classify.Throttle] (429)
// is the rate limiter's business (package ratelimit), so it never lowers
// the concurrency. Every other outcome, and [Permit.Drop], only ends the
// attempt's part of its round.
//
// # Worked sequence
//
// The server above offered 1,600 req/s, with the defaults (Initial 20,
// Tolerance 1.75), as the simulation runs it; the places are L rounded
// down, and latencies are in milliseconds:
//
//	round  L     M     D     B     what happens
//	1      20    10.4  14.8  -     first round: B = 14.8; the limit was reached: probe at 20/4 = 5
//	probe  5     4.6   10.0  14.8  10 < 0.9·14.8: B = 10, resume at 20·10/14.8 = 13.5; probe at 2.5
//	probe  2.5   2.0   10.0  10    no lower: the probe ends, L = 13.5
//	2      13.5  7.2   10.6  10    reached, no queue yet and D <= 13.75: slow start, L = 27
//	3      27    18.0  22.4  10    queue 18·(1-10/22.4) = 10 > √27: C = 8.1, C+√C = 10.9, at most halving: 13.5
//	4      13.5  12.3  15.1  10    D <= 17.5, reached: L = 13.5 + √13.5 = 17.2
//	5      17.2  13.0  16.3  10    L = 21.4
//	6      21.4  18.8  23.5  10    queue 10.8: C = 8.0, L = 8.0 + √8.0 = 10.8
//	7      10.8  9.3   11.3  10    L = 14.1 ...
//
// after which the limit moves between 10 and 22 places, most often 14,
// every 64th round probing at half.
//
// # Defaults, memory and concurrency
//
// Zero fields mean the defaults named beside them. The defaults are the
// simulation's: with Tolerance 1.5 the limit stays closer to the server's
// concurrency (the server's p99 is about 24 ms rather than 28) but
// keeps less queue to fill a place freed, and at 1.2 times the capacity
// the goodput falls below 97 % on some seeds; with 2 the p99 reaches 43
// ms. A Min above the server's concurrency keeps probes from seeing the
// no-load latency, and the limit from falling far enough.
//
// At most MaxScopes scopes are stored at any moment. A new scope that finds
// MaxScopes stored evicts one, chosen by CLOCK, an approximation of least
// recently used, as package ratelimit's limiters do; Acquire marks a scope
// used, State does not. An evicted scope starts over at Initial with
// nothing learned, and the attempts still in flight on it end on the old
// state, so for a while the scope may have more than its limit in
// flight. Since CLOCK spares a scope used since its hand last passed, a
// scope still taking places is evicted only when every stored scope is.
//
// The zero value is ready to use. An Adaptive is safe for concurrent use,
// and goroutines using different scopes never wait for each other: each
// scope has its own mutex, held for a few comparisons per attempt and the
// arithmetic of a round once per round, and finding a stored scope takes
// no lock. Acquire on a free place and Done do not allocate; a refusal
// does not either. Adaptive never sleeps but to wait for a place, starts
// no goroutine and reads no clock: its rounds are counted in attempts. It
// must not be copied, nor its fields changed, after first use.
type Adaptive struct {
	// Initial is the limit of a new scope, in places. Zero or negative
	// means DefaultInitial; a value outside [Min, Max] means the nearer
	// bound. A scope that keeps more attempts in flight than Initial from
	// its first request has the excess refused until the limit climbs,
	// a few round trips; set Initial to what it keeps in flight.
	Initial int
	// Min is the fewest places a scope's limit falls to. Zero or
	// negative means 1.
	Min int
	// Max is the most places a scope's limit rises to. Zero or negative
	// means DefaultMax; below Min, Min.
	Max int

	// Tolerance is how many times the no-load latency a round's mean
	// latency may reach before it counts as a queue. Zero means
	// DefaultTolerance; so does a value of 1 or less, NaN or +Inf.
	Tolerance float64
	// Backoff is the factor the limit is multiplied by on a Timeout
	// outcome. Zero means DefaultBackoff; so does a value outside (0, 1).
	Backoff float64

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

// Acquire takes a place for one attempt of scope and returns it as a
// [Permit], to be ended with Done or Drop. It returns at once when a place
// is free and nobody waits for one; otherwise, with MaxWait zero, it
// returns [ErrLimited] at once, and with MaxWait set it waits in line
// until a place is handed to it, MaxWait passes ([ErrLimited]) or ctx ends
// (ctx's error). A caller that gives up waiting leaves the line, and no
// place is handed to it. The first call for a scope stores its state,
// which allocates; a free place and a refusal do not, and a wait does.
func (a *Adaptive) Acquire(ctx context.Context, scope string) (Permit, error) {
	return a.gate(scope).acquire(ctx, a.MaxWait, a.After)
}

// State returns a snapshot of scope. A scope not stored (never used, or
// evicted) reads as the zero State. It does not mark the scope used.
func (a *Adaptive) State(scope string) State {
	if g := a.scopes.Peek(scope); g != nil {
		return g.state()
	}
	return State{}
}

// gate returns scope's gate, marked used, creating it if needed. Finding a
// stored scope takes no lock.
func (a *Adaptive) gate(scope string) *gate {
	if g := a.scopes.Get(scope); g != nil {
		return g
	}
	p := a.params()
	return a.scopes.Add(scope, orDefault(a.MaxScopes, DefaultMaxScopes), func(g *gate) {
		g.est = newEstimator(p)
		g.limit = g.est.places()
	})
}

// params resolves a's settings, out-of-range values to their defaults.
func (a *Adaptive) params() params {
	p := params{min: float64(max(a.Min, 1)), tolerance: a.Tolerance, backoff: a.Backoff}
	p.max = float64(orDefault(a.Max, DefaultMax))
	p.max = max(p.max, p.min)
	p.initial = min(max(float64(orDefault(a.Initial, DefaultInitial)), p.min), p.max)
	if !(p.tolerance > 1) || math.IsInf(p.tolerance, 1) {
		p.tolerance = DefaultTolerance
	}
	if !(p.backoff > 0 && p.backoff < 1) {
		p.backoff = DefaultBackoff
	}
	return p
}

// orDefault returns v, or def when v is zero or negative.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
