package ratelimit

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// The adaptive limiter's defaults, from docs/aws.md; botocore and aws-sdk-go-v2
// use the same numbers.
const (
	DefaultBeta        = 0.7 // factor applied to the rate on a throttle
	DefaultScale       = 0.4 // CUBIC scale constant C, in requests per second per second cubed
	DefaultSmoothing   = 0.8 // weight of the newest half-second bucket in the measured rate
	DefaultMinFillRate = 0.5 // least fill rate, in requests per second
)

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
// call RecordAt with each attempt's outcome. A scope that has never been
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
// # Changes from the SDKs
//
// Unless Reference is set, Adaptive departs from the SDKs in three ways
// that matter and one small one. The tests simulate 16 closed-loop clients
// with a 2 ms round trip against a server admitting 200 requests per second
// (burst 20) for 8 seconds (TestAdaptiveSimulation). Waiting as the SDKs do
// (see Waiting), the reference algorithm gets 53 req/s through with 2.7 % of
// its requests throttled, as the project measured of aws-sdk-go-v2. The
// changed one gets 191 req/s through with 0.8 % throttled, its fill rate
// between 140 and 240 req/s 4 ms after the start, and the same when the
// server also answers each throttle with Retry-After: 1 and the clients
// sleep that second before retrying, as the transport does
// (TestAdaptiveSimulationRetryAfter).
//
// A fleet of 8 clients of 2 workers each, every client with its own
// Adaptive and retry quota as separate processes have, sharing that server
// for 10 seconds, their timers firing up to 200 µs late (sim_fleet_test.go,
// 7 seeded runs): the changed algorithm gets 100 to 101 % of the capacity
// through with 2.1 to 2.8 % of attempts throttled, no logical request
// failed, a p99 of 159 to 205 ms and a Jain's fairness index of 0.92 to
// 0.99 between the clients; the reference 69 to 70 %, with a p99 of 2.0 s
// and an index of 0.79 to 0.96. With Retry-After: 1 on every 429, 89 to
// 94 % (49 to 76 % with change 3 undone). When the
// capacity drops from 200 to 50 req/s the fleet is within 10 % of it after
// half a second; when it rises back, the CUBIC curve takes more than 3
// seconds to find it (see Fairness below; Additive does it in 1.6 to 1.9 s).
//
//  1. Cold start. The measured rate is 0 until the first half-second bucket
//     closes, so a client throttled in its first half-second (a burst at
//     start-up, typically) drops to MinFillRate and climbs back along
//     Scale·t³, which takes 8 s to reach 200 req/s. Until a bucket closes,
//     Adaptive instead estimates the measured rate as the responses so far
//     over the time since the scope's first event, at least 100 ms, and
//     smooths the first closed bucket against that estimate rather than
//     against 0. Over less, a handful of responses a few milliseconds after
//     the start would read as thousands per second, and the first decrease
//     would leave the rate far above the server's: in the fleet simulation
//     a 10 ms floor failed about 10 logical requests per run at start-up,
//     on their third throttle.
//  2. Compounded decreases. With many requests in flight, each throttled
//     response of a burst multiplies the rate by Beta again (0.7, 0.49,
//     0.34…), although all were sent before the first decrease took effect.
//     Adaptive decreases at most once per round trip, as TCP reduces its
//     window: after a decrease, a throttle of a request reserved before it
//     (the responses recorded have not yet passed the reservations taken at
//     the decrease; for at most one second) restarts the curve at the
//     decreased rate without decreasing it again. This needs ReserveAt before
//     every attempt; a caller that only records gets the SDKs' behaviour.
//  3. Burst window. The SDKs' bucket holds a second of tokens, so after an
//     idle period, such as a wait the server asked for, it lets a whole
//     second's worth of sends out at once. A server's own burst is
//     typically a fraction of a second: it throttles most of them, and the
//     rate measured while the client was idle makes the decrease that
//     follows a collapse, from which CUBIC takes seconds to climb back.
//     Adaptive's bucket holds a tenth of a second of tokens, at least 1.
//     Below 10 req/s it therefore holds a single token, and requests sent
//     together are spaced 1/fill apart.
//  4. Empty bucket. Adaptive starts the bucket empty at the first throttle.
//     The SDKs fill it before, so their first limited sends may go out in a
//     burst of up to 0.7 seconds' worth, just after the server asked them to
//     slow down.
//
// In both modes time counts from each scope's first event; the SDKs count
// half-second buckets from the Unix epoch. The transport adds a fifth
// change: while an Adaptive that is not in reference mode paces a scope, a
// retry after a throttle costs nothing from the retry quota (see
// policy.Policy's Limiter).
//
// # Fairness
//
// Independent clients learn of each other only through the throttles each
// one receives. The shares they start with are set by the first throttles,
// which reach each client after a different handful of responses. From
// there a throttle moves a client's rate towards its fair share by one
// decrease, and between throttles the CUBIC curve brings every client back
// to its own last plateau, which keeps the ratios between them. So the
// shares converge at the pace of the throttles, a few per client per second
// if the 429s are to stay a few percent of the attempts, and a 10-second
// run can end with the shares it began with. The curve also grows by
// Scale·t³ requests per second beyond the plateau whatever the client's
// rate, so a fleet of small clients climbs slowly when the capacity rises.
//
// Additive adds the line of RFC 9438's Reno-friendly region: after a
// throttle the rate is at least Beta·lastMax + Additive·t. Every client
// gains the same requests per second whatever its rate, so between
// throttles the smaller ones catch up, and N clients together regain
// N·Additive requests per second each second. It buys fairness and a fast
// climb with throttles. Over 20 seeded runs of the fleet simulation (the 8
// clients above; minimum and median of the fairness index; the capacity
// change drops it from 200 to 50 req/s at 4 s and raises it back at 7 s):
//
//	Additive  429s steady  fairness index  p99 steady  back to 200 req/s  goodput, capacity change
//	0         2.1–2.8 %    0.895, 0.968    157–214 ms  not within 3 s     75–78 %
//	5         2.6–2.9 %    0.914, 0.975    169–213 ms  not within 3 s     84–87 %
//	10        3.8–4.3 %    0.943, 0.977    192–238 ms  1.6–1.9 s          94–96 %
//	20        6.2–6.6 %    0.953, 0.986    216–266 ms  1.0–1.3 s          97–99 %
//
// No setting tried (Beta 0.5 to 0.8, Scale 0.4 to 6.4, Additive 0 to 30,
// RFC 9438's fast convergence, jitter on the sends) reached a fairness
// index of 0.98 on every run with fewer than 5 % of attempts throttled:
// faster convergence takes more throttles. Additive is an absolute rate, so
// its right value depends on the API: 10 suits a fleet sharing a few
// hundred requests per second; against one client's 20 req/s it raised the
// throttled share from 10 % to 13 %. Zero, the default, keeps the SDKs'
// curve. A fleet that needs exact shares needs shared state. Two other
// experiments did not help: a probe that doubles the rate after a quiet
// spell found the capacity again within 2.1 to 2.8 s but, multiplicative,
// kept the ratios and lowered the fairness index; a longer cold-start span
// made the start fairer and the climb from it slower.
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
// Turns stay in the order taken.
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
// one the hand started at, after a full turn. ReserveAt and RecordAt use a
// scope; DelayAt, CancelAt and StateAt do not, and neither does its
// creation. An evicted scope starts over as never throttled: it is not
// limited until its next throttle, which then sets its rate from the
// cold-start estimate. For a scope idle for a few seconds little is lost:
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
	Scale       float64 // CUBIC scale constant C; zero means DefaultScale
	Smoothing   float64 // weight of the newest bucket in the measured rate, in (0, 1]; zero means DefaultSmoothing
	MinFillRate float64 // least fill rate, requests per second; zero means DefaultMinFillRate

	// Additive, in requests per second per second, makes the rate after a
	// throttle at least Beta·lastMax + Additive·t, t seconds after it, as
	// well as the CUBIC curve (see Fairness). Zero means no additive line,
	// the SDKs' curve alone; reference mode ignores it.
	Additive float64

	// Reference selects the SDKs' algorithm exactly as botocore and
	// aws-sdk-go-v2 compute it, cold-start collapse, compounded decreases
	// and a bucket of a second's tokens included, for comparison and for
	// users who need identical behaviour.
	Reference bool

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
	LastMax      float64   // the rate in use at the last decrease, the curve's plateau
	LastThrottle time.Time // when the last throttle was recorded; zero if never

	// The quota the server publishes (see [Adaptive.RecordQuotaAt]), while
	// it paces the scope; all zero when none does.
	QuotaRemaining int64     // the remaining count last published
	QuotaRate      float64   // sends per second it allows: remaining over the time to reset, when published
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
		wait = seconds(w)
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
	s.record(s.at(now), k == classify.Throttle, &p)
}

// Record is RecordAt at a.Now(), or the wall clock if a.Now is nil.
func (a *Adaptive) Record(scope string, k classify.Kind) { a.RecordAt(a.now(), scope, k) }

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
		FillRate:     c.fill,
		MeasuredRate: c.measuredRate(t, &p),
		Tokens:       c.tokens,
		Capacity:     c.capacity,
		LastMax:      c.lastMax,
	}
	if c.enabled {
		st.LastThrottle = c.origin.Add(roundSeconds(c.lastThrottle))
	}
	if q := c.quota; q.pacing(t) {
		st.QuotaRemaining, st.QuotaRate, st.QuotaReset = q.remaining, q.rate, c.origin.Add(roundSeconds(q.reset))
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
		s.fill, s.capacity = minFill, minCapacity // the formulas' values for a rate of 0
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
