package ratelimit

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/scopemap"
	"github.com/retrytransport/retrytransport/internal/secs"
)

// The adaptive limiter's defaults, from docs/aws.md; botocore and aws-sdk-go-v2
// use the same numbers.
const (
	DefaultBeta        = 0.7 // factor applied to the rate on a throttle
	DefaultScale       = 0.4 // CUBIC scale constant C, in requests per second per second cubed
	DefaultSmoothing   = 0.8 // weight of the newest half-second bucket in the measured rate
	DefaultMinFillRate = 0.5 // least fill rate, in requests per second
)

// DefaultThrottleRetries is how many retries after throttles an [Adaptive]
// lets a request make beyond its policy's MaxAttempts while it paces the
// scope (see [Adaptive.ThrottleRetries]). It is not an AWS number: the
// SDKs count every attempt. Cosmos DB's SDK, which counts retries after
// throttles apart from the others, makes 9 of them by default.
const DefaultThrottleRetries = 5

// ErrRateLimited records that a client-side rate limiter ([Adaptive] or
// [Fixed]) refused to let an attempt wait for its send token: FailFast is set
// and a wait was needed, or the wait exceeded MaxWait. The limiters
// themselves report a refusal with ok false; the transport returns this
// error, wrapped, as the reason it made no further attempt. Match it with
// errors.Is.
var ErrRateLimited = errors.New("ratelimit: client-side rate limit")

// Adaptive is the client-side rate limiter of AWS adaptive retry mode
// (docs/aws.md), kept per scope: a token bucket of send tokens whose fill
// rate follows the throttling responses the scope gets. Call ReserveAt
// before each attempt, first attempts included, and wait what it returns;
// call RecordAt with each attempt's outcome (RecordQuotaAt, with the
// quota, when its response publishes one), or ReleaseAt for an attempt
// sent that ended without one. A scope that has never been
// throttled is not limited at all, and throttling of one scope never slows
// another.
//
// # Algorithm
//
// Each scope measures the rate at which its responses come back, in
// half-second buckets smoothed by Smoothing. The first throttle enables the
// bucket. On a throttle, with rate the measured rate (or, once enabled, the
// fill rate if lower):
//
//	lastMax = rate; W = cbrt(lastMax·(1-Beta)/Scale); new = Beta·rate
//
// on any other response, t seconds after the last throttle (CUBIC, RFC 9438):
//
//	new = Scale·(t - W)³ + lastMax
//
// and then, with r = min(new, 2·measured), fill = max(r, MinFillRate)
// tokens per second and capacity = max(r·0.1 s, 1) tokens: a tenth of a
// second's worth (the SDKs hold a whole second's, max(r, 1); see change 3
// below). Each attempt takes a token; without one it waits
// (1 - tokens)/fill. With the defaults, a throttle at a measured rate of 10
// req/s sets the fill rate to 7 and the capacity to 1 (0.7 tokens, raised
// to the floor); W = cbrt(7.5) = 1.957 s, and if the client keeps sending
// at 10 req/s without throttles, the fill rate is 9.65 one second later, 10
// at W, 10.45 after 3 s and 20 (twice the measured rate, the cap) after
// 4.9 s, when the bucket holds 2 tokens.
//
// Unless Reference is set, only the first throttle of a scope and the
// curve before it follow these formulas: after a throttle the rate climbs
// along a line instead (change 5).
//
// # Changes from the SDKs
//
// Unless Reference is set, Adaptive departs from the SDKs in the ways
// below; docs/adaptive.md measures each. The tests simulate closed-loop
// clients against a server admitting 200 requests per second (burst 20)
// over 20 seeded start-ups each, with the start-up jitter of a real
// client (sim_seeds_test.go, sim_fleet_test.go): one client of 16 workers
// gets 201 req/s through with 0.8 to 1.2 % of its attempts throttled,
// where the reference algorithm gets 53; a fleet of 8 clients of 2
// workers, each with its own Adaptive, gets 101 % of the capacity with 3.7
// to 4.2 % throttled, a p99 of 172 to 213 ms and a Jain's fairness index
// of 0.984 (median 0.995), 0.982 (median 0.994) when the clients start
// one after another within 10 ms; when the capacity drops to 50 req/s and
// returns to 200, the fleet is within 10 % of each within 0.5 s and 1.0
// to 1.6 s.
//
//  1. Cold start. The measured rate is 0 until the first half-second bucket
//     closes, so the SDKs' client throttled in its first half-second drops
//     to MinFillRate. Until a bucket closes, Adaptive estimates the
//     measured rate as the responses so far over the time since the
//     scope's first event, at least 100 ms; but a throttle in that time
//     decreases from the cold-start rate, the scope's concurrency (most
//     reservations outstanding at once) over its first round trip, the
//     round trip taken as at least 100 ms: 20 req/s for 2 workers, 160
//     for 16. The responses counted would say in what order the clients
//     sharing a server reached it (the first take its burst, the others'
//     first response is the throttle); the concurrency and the round trip
//     are the same for clients of the same concurrency. The decrease is
//     provisional: the line of change 5 climbs 17.5 req/s per second for
//     each reservation of the concurrency, counting only the time a
//     reservation is outstanding, until the next throttle or for 0.4 s of
//     that time, so that clients starting from the same rate reach the
//     capacity together. The long-run rate of change 7 starts at the first
//     decrease after a bucket closed.
//  2. Compounded decreases. The SDKs multiply the rate by Beta at every
//     throttled response of a burst (0.7, 0.49, 0.34…), although all were
//     sent before the first decrease took effect. Adaptive decreases at
//     most once per round trip, as TCP reduces its window: a throttle of a
//     request reserved before the last decrease (for at most one second)
//     does not decrease again. This needs ReserveAt before every attempt.
//  3. Burst window. The SDKs' bucket holds a second of tokens, which an
//     idle client (one waiting out a Retry-After) sends at once into the
//     server's much smaller burst. Adaptive's holds a tenth of a second's,
//     at least 1 token.
//  4. Empty bucket. Adaptive starts the bucket empty at the first throttle;
//     the SDKs' first limited sends may go out in a burst.
//  5. A line, not the curve. After a throttle the SDKs' curve brings every
//     client back to the rate of its own last throttle and holds it there,
//     so independent clients keep the shares their first throttles gave
//     them, and a plateau below the capacity is never corrected. Adaptive
//     restarts at Beta times the rate in use and climbs along a line with
//     no plateau: 2.5 req/s per second for each reservation outstanding,
//     never regaining the decrease in less than a second. A throttle takes
//     more from a larger rate and the climb gives every client of the same
//     concurrency the same, so shares converge, as under TCP's additive
//     increase.
//  6. Decrease from the fill rate, not from the lower of it and the
//     measured rate, which lags and falls while the workers sleep through a
//     Retry-After; and cap the rate at the larger of twice the measured rate
//     and the rate of the last throttle, so that a client whose workers
//     slept goes back to where it was.
//  7. Recovery. Each scope keeps its long-run rate (the fill rate averaged
//     over about 16 s). When the line has fallen below 85 % of it and no
//     throttle has come for 0.3 s, the line closes the gap with a 0.3 s
//     time constant: a throttle that no other follows is regained in about
//     a second, and a capacity that dropped and came back is found again
//     in 1 to 2 s. In a fleet each replica regains its own long-run rate,
//     so the throttles come about twice as often as along the line alone,
//     and the shares even out faster.
//  8. An isolated throttle. A scope that has sent for half a second
//     without a throttle lets its first one pass, and those of the requests
//     sent with it, without enabling the limiter: arrivals that bunch up
//     past a server's burst draw a 429 now and then, and pacing the client
//     for it would delay the requests that follow. A throttle of a request
//     sent after the first enables the limiter. A scope's first
//     half-second is the cold start's, which enables at the first throttle.
//
// In both modes time counts from each scope's first event; the SDKs count
// half-second buckets from the Unix epoch. The transport adds two changes
// of its own while an Adaptive that is not in reference mode paces a scope:
// a retry after a throttle costs nothing from the retry quota (see
// policy.Policy's Limiter), and up to ThrottleRetries such retries do not
// count toward the policy's MaxAttempts, and wait for their send tokens
// only, with no backoff.
//
// # Fairness
//
// Independent clients learn of each other only through the throttles each
// one receives, a dozen or so per client in ten seconds if throttles are
// to stay a few percent of the attempts; which client a throttle hits is
// chance, so the shares drift by about one over the square root of that
// count; the recovery of change 7 roughly doubles it. Over 20 seeds the
// fleet's fairness index is at least 0.984, where the SDKs' curve, which
// keeps the shares the first throttles gave, reached 0.895. Replicas that
// start one after another within 10 ms, as on loopback, reach 0.982: the cold
// start gives each the same rate, whatever order they reached the server
// in, where a count of the responses gave the first up to nine times the
// others' (0.778; docs/adaptive.md). Additive adds its own line over the
// default one, for a faster climb at the cost of more throttles. A fleet
// that needs exact shares needs shared state (module redisretry).
//
// # Waiting
//
// ReserveAt takes a send token at once and returns a [Reservation], a place
// in the scope's queue, with the wait until its turn. Unlike
// rate.Limiter's reservations, the turn is not fixed: the tokens ahead of
// it accrue at the current fill rate, so when a throttle lowers the rate
// every waiting reservation's turn moves later, and when answers raise it,
// earlier. A caller sleeps the wait and asks the reservation again
// ([Adaptive.DelayAt]), sleeping again until it is due; the transport asks again
// halfway through any wait over 10 ms, so that a rising rate is seen too.
// Turns stay in the order taken. A reservation cancelled while it waits
// moves up the ones behind it by a turn and leaves the ones ahead where
// they were, so callers that give up together (a decrease pushed their
// turns past their deadlines) do not come due as a burst of sends.
//
// The two other ways cost throttles or latency. Sleeping the first wait and
// sending keeps the pace of the moment the caller reserved: after a
// decrease, those sends are throttled, and each throttle decreases the
// rate again; against a server of 20 req/s, 16 such callers get 9 req/s
// through with 22 % throttled, where queueing gets 19 req/s with 10 %. The
// SDKs' waiters recheck: a caller told to wait gives its token back,
// sleeps, and reserves anew. That follows the rate as well, but the
// callers that wake at the same instant race for the next token, in the
// order their timers happen to fire, so a caller can lose many times
// running: with timers firing up to 200 µs late, the fleet simulation's
// 99th percentile of latency is 1.1 to 1.4 s when rechecking and 159 to 205
// ms when queueing.
//
// # Defaults, memory and concurrency
//
// Zero fields mean the defaults above; a Beta outside (0, 1), a Smoothing
// outside (0, 1], or a non-positive or NaN Scale or MinFillRate also means
// the default. The Kotlin SDK's example settings (docs/aws.md) are
// MinFillRate 1 and Smoothing 0.75.
//
// At most MaxScopes scopes are stored at any moment. A new scope that finds
// MaxScopes stored evicts one, chosen by CLOCK, an approximation of least
// recently used: the stored scopes stand in a ring that a hand goes round,
// sparing each scope used since the hand last passed it (and marking it
// unused) and evicting the first one not used since; the new scope takes
// its place, which the hand visits last. So whenever some stored scope has
// not been used since the hand last passed it, one of those is evicted;
// only when every one was used since is a scope used lately evicted: the
// one the hand started at, after a full turn. ReserveAt, RecordAt and
// RecordQuotaAt use a scope; DelayAt, CancelAt, ReleaseAt and StateAt do not, and neither does its
// creation. An evicted scope starts over as never throttled: it is not
// limited until its next throttle, which then sets its rate as a new
// scope's first throttle does (change 1). For a scope idle for a few seconds little is lost:
// its bucket has refilled to capacity, so its next requests would not have
// waited until they exceeded a tenth of a second's worth, and its measured
// rate is stale.
//
// The zero value is ready to use. An Adaptive is safe for concurrent use,
// and goroutines using different scopes never wait for each other: each
// scope has its own mutex, held only for its arithmetic, and finding a
// stored scope takes no lock (a sync.Map load). Only a scope's first use,
// with the eviction it may cause, takes a mutex that all scopes share. A
// call that finds a scope just as another goroutine evicts it acts on the
// evicted state: an outcome it records is lost, as if recorded before the
// eviction, and a reservation it takes is due at once when asked again, as
// is any reservation of an evicted scope. An Adaptive never sleeps and
// starts no goroutine. It must not be copied, nor its fields changed,
// after first use. Two transports share send rates only if given the same
// *Adaptive.
type Adaptive struct {
	Beta        float64 // multiplicative decrease on a throttle, in (0, 1); zero means DefaultBeta
	Scale       float64 // CUBIC scale constant C of the curve before a scope's first throttle, and of reference mode's; zero means DefaultScale
	Smoothing   float64 // weight of the newest bucket in the measured rate, in (0, 1]; zero means DefaultSmoothing
	MinFillRate float64 // least fill rate, requests per second; zero means DefaultMinFillRate

	// Additive, in requests per second per second, makes the rate after a
	// throttle at least Beta·lastMax + Additive·t, t seconds after it, as
	// well as the default line (change 5). Zero means the default line
	// alone; reference mode ignores it.
	Additive float64

	// Reference selects the SDKs' algorithm exactly as botocore and
	// aws-sdk-go-v2 compute it, cold-start collapse, compounded decreases
	// and a bucket of a second's tokens included, for comparison and for
	// users who need identical behaviour.
	Reference bool

	// ThrottleRetries is how many retries after throttles each request may
	// make beyond its policy's MaxAttempts, when the transport's retries of
	// a throttled scope are paced by this limiter: such a throttle is the
	// limiter's to prevent, while it finds the server's new rate, not the
	// request's to pay for with one of its attempts. Other failures count
	// toward MaxAttempts as before, and a request whose SDK retries it
	// gets none. Zero means DefaultThrottleRetries; a negative value means
	// none, every attempt counting, as in the SDKs; more than
	// MaxThrottleRetries (100) means MaxThrottleRetries.
	// Reference mode gives none.
	ThrottleRetries int

	FailFast  bool             // refuse, instead of waiting, when no token is there
	MaxWait   time.Duration    // refuse when the wait would be longer; zero means no limit (the caller's context bounds it)
	MaxScopes int              // most scopes stored at once; zero means DefaultMaxScopes
	Now       func() time.Time // clock of the methods without an At suffix; nil means time.Now

	scopes scopemap.Sync[adaptiveScope]
	gens   atomic.Uint64 // scopes created
}

// adaptiveScope is one scope's state, behind the scope's own lock.
type adaptiveScope struct {
	mu sync.Mutex
	scopeState
}

// scopeState is one scope's arithmetic and the instant its time counts
// from. Its fields are guarded by its adaptiveScope's mu, except gen, set
// before the scope is stored and never changed.
type scopeState struct {
	cubic
	quota  published // the pace of the quota its server publishes (published.go)
	origin time.Time
	gen    uint64 // tells this scope's reservations from those of an evicted scope of the same name
}

// at returns now in seconds since the scope's origin, never earlier than an
// instant seen before.
func (s *scopeState) at(now time.Time) float64 {
	return s.advance(now.Sub(s.origin).Seconds())
}

// AdaptiveState is a snapshot of one scope of an [Adaptive]. Rates are
// requests per second. The zero AdaptiveState is that of a scope not
// stored: never throttled, so not limited.
type AdaptiveState struct {
	Enabled      bool      // a throttle has been recorded, so sends are limited
	FillRate     float64   // send tokens added per second
	MeasuredRate float64   // smoothed rate of responses (before the first bucket closes, the cold-start estimate)
	Tokens       float64   // send tokens available; negative while reservations wait
	Capacity     float64   // most send tokens held: a tenth of a second of the rate (a second in reference mode), at least 1
	LastMax      float64   // the rate in use at the last decrease (the curve's plateau in reference mode)
	LastThrottle time.Time // when the last throttle was recorded; zero if never
	Outstanding  uint64    // reservations taken whose attempt has not ended: not recorded, released nor cancelled

	// The quota the server publishes (see [Adaptive.RecordQuotaAt]), while
	// it paces the scope; all zero when none does.
	QuotaRemaining int64     // the remaining count last published
	QuotaRate      float64   // sends per second it allows: the scope's part of what is left over the time to the reset
	QuotaReset     time.Time // when its window resets
}

// ReserveAt takes one send token from scope's bucket as of now and returns
// the reservation with how long the caller must wait before sending: 0
// while the scope is not enabled (before its first throttle) or when a
// token is there, else (1 - tokens)/fill. Reservations queue in the order
// they were taken. A caller that waits asks the reservation again when the
// wait is over ([Adaptive.DelayAt]): if the rate fell meanwhile, its turn
// has moved later and it waits again (see Waiting on [Adaptive]). A caller
// that gives up waiting, or will not send after all, cancels the
// reservation. With ok false nothing was taken and the attempt must not be
// sent (the caller returns [ErrRateLimited], wrapped): FailFast is set and
// a wait was needed, or the wait exceeds MaxWait. The wait is then still
// reported. The first call for a scope stores its state, which allocates;
// later calls do not.
func (a *Adaptive) ReserveAt(now time.Time, scope string) (r Reservation, wait time.Duration, ok bool) {
	p := a.params()
	s := a.scope(now, scope, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.sendWait(s.at(now), &p); w > 0 {
		wait = secs.Ceil(w)
		if a.FailFast || (a.MaxWait > 0 && wait > a.MaxWait) {
			return Reservation{}, wait, false
		}
	}
	return Reservation{q: a, scope: scope, ticket: Ticket{Gen: s.gen, Seq: s.sendTake()}}, wait, true
}

// Reserve is ReserveAt at a.Now(), or the wall clock if a.Now is nil.
func (a *Adaptive) Reserve(scope string) (r Reservation, wait time.Duration, ok bool) {
	return a.ReserveAt(a.now(), scope)
}

// RecordAt records, as of now, the outcome of one attempt sent to scope: k
// == classify.Throttle decreases the scope's rate (at most once per round
// trip unless Reference is set) and enables its bucket; any other kind is a
// response that was not throttled and moves the rate along the curve. Both
// count towards the measured rate.
func (a *Adaptive) RecordAt(now time.Time, scope string, k classify.Kind) {
	p := a.params()
	s := a.scope(now, scope, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(s.at(now), k == classify.Throttle, p)
}

// record records, at t, an outcome of the scope: cubic's record, told
// whether the scope's server publishes its quota, which a throttle then
// says was misread (see cubic.tolerates). The caller holds the scope's
// lock.
func (s *scopeState) record(t float64, throttled bool, p params) {
	p.published = s.quota.reset > 0
	s.cubic.record(t, throttled, &p)
}

// Record is RecordAt at a.Now(), or the wall clock if a.Now is nil.
func (a *Adaptive) Record(scope string, k classify.Kind) { a.RecordAt(a.now(), scope, k) }

// ReleaseAt records, as of now, that an attempt sent to scope on one of
// its reservations ended without an outcome to record: the caller's
// context ended while it was in flight, or it was a hedged copy cancelled
// before it answered. The reservation is no longer outstanding, as a
// recorded one is not (the cold start reads the scope's concurrency from
// those outstanding, and the line climbs by them); nothing else changes:
// no response is measured, the rate does not move, and no send token comes
// back, since the attempt was sent ([Adaptive.CancelAt] is for attempts
// that were not). End each reservation whose attempt was sent with one
// RecordAt (or RecordQuotaAt) or one ReleaseAt, never both. A scope not stored is left
// alone, and a release beyond the reservations outstanding changes
// nothing.
func (a *Adaptive) ReleaseAt(now time.Time, scope string) {
	s := a.scopes.Peek(scope)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release(s.at(now))
}

// Release is ReleaseAt at a.Now(), or the wall clock if a.Now is nil.
func (a *Adaptive) Release(scope string) { a.ReleaseAt(a.now(), scope) }

// StateAt returns a snapshot of scope as of now, the refill up to now
// included. A scope not stored (never seen, or evicted) reads as the zero
// AdaptiveState: not enabled.
func (a *Adaptive) StateAt(now time.Time, scope string) AdaptiveState {
	p := a.params()
	s := a.scopes.Peek(scope)
	if s == nil {
		return AdaptiveState{}
	}
	s.mu.Lock()
	c := s.scopeState // a copy, so that looking changes nothing
	s.mu.Unlock()
	t := c.at(now)
	c.refill(t, &p)
	st := AdaptiveState{
		Enabled:      c.enabled,
		FillRate:     c.bucket.rate,
		MeasuredRate: c.measuredRate(t, &p),
		Tokens:       c.bucket.balance(c.issued),
		Capacity:     c.bucket.capacity,
		LastMax:      c.lastMax,
		Outstanding:  c.sent - min(c.done, c.sent),
	}
	if c.enabled {
		st.LastThrottle = c.origin.Add(secs.Round(c.lastThrottle))
	}
	if q := c.quota; q.pacing(t) {
		st.QuotaRemaining, st.QuotaRate, st.QuotaReset = q.remaining, q.rate, c.origin.Add(secs.Round(q.reset))
	}
	return st
}

// State is StateAt at a.Now(), or the wall clock if a.Now is nil.
func (a *Adaptive) State(scope string) AdaptiveState { return a.StateAt(a.now(), scope) }

// scope returns scope's state, marked used, creating it with its origin at
// now if needed. Finding a stored scope takes no lock.
func (a *Adaptive) scope(now time.Time, scope string, p *params) *adaptiveScope {
	if s := a.scopes.Get(scope); s != nil {
		return s
	}
	minFill := p.minFill
	return a.scopes.Add(scope, orDefault(a.MaxScopes, DefaultMaxScopes), func(s *adaptiveScope) {
		s.origin, s.gen = now, a.gens.Add(1)
		s.bucket.rate, s.bucket.capacity = minFill, minCapacity // the formulas' values for a rate of 0
	})
}

// params resolves a's settings, out-of-range values to their defaults.
func (a *Adaptive) params() params {
	p := params{beta: a.Beta, scale: a.Scale, smoothing: a.Smoothing, minFill: a.MinFillRate, additive: a.Additive, window: burstWindow, reference: a.Reference}
	if p.reference {
		p.window = 1 // the SDKs' capacity, a second of tokens
	}
	if !(p.beta > 0 && p.beta < 1) {
		p.beta = DefaultBeta
	}
	if !(p.scale > 0) || math.IsInf(p.scale, 1) {
		p.scale = DefaultScale
	}
	if !(p.smoothing > 0 && p.smoothing <= 1) {
		p.smoothing = DefaultSmoothing
	}
	if !(p.minFill > 0) || math.IsInf(p.minFill, 1) {
		p.minFill = DefaultMinFillRate
	}
	if !(p.additive > 0) || math.IsInf(p.additive, 1) {
		p.additive = 0
	}
	return p
}

func (a *Adaptive) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
