package redisretry

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The Adaptive's defaults.
const (
	// DefaultBeta is the decrease on a throttle of an Adaptive whose Local
	// is nil: gentler than ratelimit.DefaultBeta (0.7), since a fleet that
	// shares one limiter acts as one client, and over a CUBIC cycle its
	// mean rate is about lastMax·(1 - (1 - Beta)/4). See docs/redis.md.
	DefaultBeta = 0.9
	// DefaultAdaptiveRefresh is how long a replica believes an answer that
	// a scope is not limited, sending without asking meanwhile.
	DefaultAdaptiveRefresh = 100 * time.Millisecond
)

// Adaptive is an adaptive client-side rate limiter ([ratelimit.Limiter],
// [ratelimit.Recorder]) whose state lives in Redis, so that a fleet of
// replicas learns one send rate per scope and paces all its attempts
// through one queue: a throttle that one replica receives slows every
// replica, and the fleet's attempts are spaced evenly, whichever replica
// sends them. It follows ratelimit.Adaptive: the CUBIC curve of the AWS
// SDKs' adaptive mode, with the parameters of Local (Beta, Scale,
// MinFillRate, Smoothing, Additive, FailFast, MaxWait).
//
// # Algorithm
//
// Each scope's hash in Redis holds whether the scope is limited, the
// curve (lastMax, the last throttle), the fleet's measured send rate
// (half-second buckets smoothed by Smoothing; before the first closes, the
// sends so far over the time since the first, at least 0.1 s) and the
// theoretical arrival time tat of a GCRA queue.
//
// Before a scope's first throttle nothing is limited. A replica asks
// Redis at most once per Refresh whether the scope is limited and, in the
// same round trip, reports its sends since it last asked, for the
// measured rate; in between its attempts cost no round trip. While the
// replica has no answer it believes, first or older than Refresh, one
// attempt asks, and those that come while its question is in flight wait
// for the answer rather than go unpaced: a burst right after another
// replica's throttle then takes its slots from the queue below, each with
// a round trip of its own.
//
// Once the scope is limited, Reserve is one round trip to a script that,
// at the server's clock now, computes the rate
//
//	r = min(Scale·(t − K)³ + lastMax, 2·measured),  K = cbrt(lastMax·(1 − b)/Scale)
//
// with t the seconds since the last throttle and b the last decrease's
// factor, Beta as a rule (below), and, with Additive, at least
// Beta·lastMax + Additive·t; the fill rate max(r, MinFillRate) and
// the burst max(r·0.1 s, 1), counts the send in the measured rate and
// hands out the queue's next slot:
//
//	interval = 1/fill;  slot = max(tat, now − burst·interval) + interval;  tat = slot
//
// The wait is slot − now, or 0. The reservation is due at the replica's
// instant now + wait; Delay counts down to it without a round trip. A
// slot once handed out does not move, so a throttle slows the slots
// handed out after it.
//
// Record(Throttle) is one round trip: it decreases the rate, lastMax =
// the rate in use (the lower of the curve and the measured rate), the
// last throttle = now, so that the curve restarts at b·lastMax with b =
// min(Beta, max(1 − f/2, 0.5)), f the share of the sends since the
// previous decrease that were throttled: Beta in steady state, a deeper
// cut when the capacity fell far below the rate (as DCTCP sizes its cut).
// A throttle of a request that was sent before the last decrease took
// effect restarts the curve at the decreased rate without decreasing it
// again, as TCP does not cut twice within one round trip: each replica
// counts its reservations and responses and knows the latest decrease it
// has heard of, so it tells the script whether the throttled request was
// sent before that; such a hold ends one second after its decrease at the
// latest. Record of any other outcome costs no round trip: the curve is
// computed when next needed.
//
// The first throttle comes before most replicas have reported their
// sends. Until the measured rate's first bucket closes, the first throttle
// each other replica reports raises lastMax to the measured rate, which
// its report completes, and a decrease cuts to at least 0.7. docs/redis.md
// has the reasons and the simulations behind these choices and the
// default Beta.
//
// # Time
//
// The script reads the Redis server's clock (TIME), so that the
// replicas' clocks need not agree; when the Store's Now is set, it uses
// that clock's readings instead.
//
// # Failures
//
// Every outcome is also recorded in Local, so that it stays warm: when
// Redis fails (see [Store]), Reserve returns Local's reservation and
// counts a fallback ([ratelimit.FallbackCounter]), as do the calls that
// waited for a question that failed. Cancel gives a slot
// back, in one round trip, only if it is still the latest handed out; it
// is best effort. State returns the scope as of the last
// answer, without a round trip, or Local's state while the Store's
// circuit is open.
//
// A nil Local means a ratelimit.Adaptive with Beta DefaultBeta (0.9) and
// the other defaults. A Local given with a zero Beta means
// ratelimit.DefaultBeta (0.7), as it does for Local itself; Reference only
// affects Local. An Adaptive is safe for concurrent use and starts no
// goroutine. It must not be copied, nor its fields changed, after first
// use.
type Adaptive struct {
	// Store is where the scopes' state lives; nil means a Store without
	// a client, so that Local makes every decision.
	Store *Store
	// Local holds the parameters and this replica's fallback state; nil
	// means a ratelimit.Adaptive with Beta DefaultBeta.
	Local *ratelimit.Adaptive
	// Refresh is how long an answer that a scope is not limited is
	// believed; zero means DefaultAdaptiveRefresh (100 ms).
	Refresh time.Duration

	defOnce  sync.Once
	defLocal *ratelimit.Adaptive

	mu     sync.Mutex
	scopes map[string]*adaptiveScope // guarded by mu

	fb   fallbacks
	none noStore
}

// adaptiveScope is what a replica knows of one scope, guarded by its
// Adaptive's mutex.
type adaptiveScope struct {
	enabled bool           // the last answer said the scope is limited
	checked time.Time      // when that answer came; zero if none yet
	asking  *adaptiveQuery // the question in flight whether the scope is limited; nil if none

	unreported uint64 // sends made without asking, not yet reported
	gen        uint64 // the latest decrease heard of
	sent, done uint64 // reservations taken, responses recorded
	holdSeq    uint64 // reservations taken before gen was heard of

	ans adaptiveAnswer // the last answer
}

// adaptiveQuery is one call's question to Redis whether a scope is
// limited, which the calls that come while it is in flight wait for.
type adaptiveQuery struct {
	done    chan struct{} // closed when the answer, or the failure, is in
	err     error         // why Redis did not answer; set before done is closed
	enabled bool          // the answer: the scope is limited; set before done is closed
}

// Reserve takes a send slot of scope and returns the reservation with the
// wait before sending. Before the scope's first throttle it makes a round
// trip at most once per Refresh and returns the zero Reservation and 0;
// once the scope is limited, one round trip (see Algorithm on [Adaptive]).
// A call that comes while another asks Redis whether the scope is limited
// waits for that answer, at most the Store's Timeout. With ok false
// nothing was taken and the attempt must not be sent: Local has FailFast
// set and a wait was needed, or the wait exceeds its MaxWait. When Redis
// fails, Local decides.
func (a *Adaptive) Reserve(scope string) (r ratelimit.Reservation, wait time.Duration, ok bool) {
	now := a.store().now()
	a.mu.Lock()
	st := a.scopeLocked(scope)
	var asking *adaptiveQuery // the question this call asks, if it asks one
	switch {
	case st.enabled:
	case !st.checked.IsZero() && now.Sub(st.checked) < positive(a.Refresh, DefaultAdaptiveRefresh):
		st.unreported++
		st.sent++
		a.mu.Unlock()
		return ratelimit.Reservation{}, 0, true
	case st.asking != nil:
		// The answer is unknown or too old to believe, and another call is
		// asking: sending unpaced meanwhile would let a burst through right
		// after another replica's throttle.
		q := st.asking
		a.mu.Unlock()
		<-q.done
		now = a.store().now()
		if q.err != nil {
			return a.reserveLocal(now, scope, st, q.err)
		}
		a.mu.Lock()
		if !q.enabled && !st.enabled {
			st.unreported++
			st.sent++
			a.mu.Unlock()
			return ratelimit.Reservation{}, 0, true
		}
		// Limited: take a slot of the queue like any call, below.
	default:
		asking = &adaptiveQuery{done: make(chan struct{})}
		st.asking = asking
	}
	sends := st.unreported
	st.unreported = 0
	a.mu.Unlock()

	l := a.local()
	p := adaptiveParamsOf(l)
	ans, err := a.run(now, scope, &p, sends, "reserve", p.maxWait)

	a.mu.Lock()
	if asking != nil {
		asking.err, asking.enabled = err, err == nil && ans.enabled
		st.asking = nil
		close(asking.done)
	}
	if err != nil {
		st.unreported += sends
		a.mu.Unlock()
		return a.reserveLocal(now, scope, st, err)
	}
	a.answerLocked(st, now, &ans)
	if !ans.ok {
		a.mu.Unlock()
		return ratelimit.Reservation{}, micros(ans.wait), false
	}
	st.sent++
	a.mu.Unlock()
	wait = micros(ans.wait)
	if !ans.enabled || wait == 0 {
		return ratelimit.Reservation{}, 0, true
	}
	t := ratelimit.Ticket{Gen: uint64(now.Add(wait).UnixNano()), Seq: math.Float64bits(ans.slot)}
	return ratelimit.NewReservation(a, scope, t), wait, true
}

// reserveLocal is Reserve decided by Local because Redis did not answer
// (err), counted as a fallback of scope, whose record is st.
func (a *Adaptive) reserveLocal(now time.Time, scope string, st *adaptiveScope, err error) (ratelimit.Reservation, time.Duration, bool) {
	a.store().fallback(&a.fb, scope, err)
	r, wait, ok := a.local().ReserveAt(now, scope)
	if ok {
		a.mu.Lock()
		st.sent++
		a.mu.Unlock()
	}
	return r, wait, ok
}

// Record records the outcome of an attempt sent to scope, in Local too. A
// throttle is one round trip that decreases the fleet's rate, unless the
// throttled request was sent before the last decrease took effect (see
// Algorithm on [Adaptive]); any other kind costs no round trip.
func (a *Adaptive) Record(scope string, k classify.Kind) {
	now := a.store().now()
	l := a.local()
	l.RecordAt(now, scope, k)
	a.mu.Lock()
	st := a.scopeLocked(scope)
	st.done++
	if k != classify.Throttle {
		a.mu.Unlock()
		return
	}
	old := int64(0)
	if st.done <= st.holdSeq {
		old = 1
	}
	known, sends := st.gen, st.unreported
	st.unreported = 0
	a.mu.Unlock()

	p := adaptiveParamsOf(l)
	ans, err := a.run(now, scope, &p, sends, "throttle", int64(known), old)
	a.mu.Lock()
	if err != nil {
		st.unreported += sends
		a.mu.Unlock()
		a.store().fallback(&a.fb, scope, err)
		return
	}
	a.answerLocked(st, now, &ans)
	a.mu.Unlock()
}

// Delay returns how long the holder of r, a reservation Reserve made, must
// still wait: until the instant it is due, without a round trip. It is
// what [ratelimit.Reservation.Delay] calls.
func (a *Adaptive) Delay(r ratelimit.Reservation) time.Duration {
	return max(time.Unix(0, int64(r.Ticket().Gen)).Sub(a.store().now()), 0)
}

// Cancel gives back the slot of r, a reservation Reserve made whose
// attempt will not be sent, if it is still the latest slot of its scope:
// one round trip, best effort, within the Store's Timeout.
func (a *Adaptive) Cancel(r ratelimit.Reservation) {
	a.mu.Lock()
	if st := a.scopes[r.Scope()]; st != nil && st.sent > 0 {
		st.sent--
	}
	a.mu.Unlock()
	err := a.store().do(func(ctx context.Context, c redis.UniversalClient) error {
		p := adaptiveParamsOf(a.local())
		return adaptiveScript.Run(ctx, c, []string{a.store().key(r.Scope(), "adaptive")}, a.args(a.store().now(), &p, 0, "cancel",
			strconv.FormatFloat(math.Float64frombits(r.Ticket().Seq), 'g', -1, 64))...).Err()
	})
	if err != nil {
		a.store().failed(err, false)
	}
}

// State returns scope's state as of the last answer from Redis, without a
// round trip, or Local's while the Store's circuit is open. A scope this
// replica has not asked about reads as the zero AdaptiveState.
func (a *Adaptive) State(scope string) ratelimit.AdaptiveState {
	now := a.store().now()
	if a.store().down() {
		return a.local().StateAt(now, scope)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.scopes[scope]
	if st == nil || st.checked.IsZero() {
		return ratelimit.AdaptiveState{}
	}
	ans := &st.ans
	s := ratelimit.AdaptiveState{
		Enabled:      ans.enabled,
		FillRate:     ans.fill,
		MeasuredRate: ans.measured,
		Capacity:     ans.burst,
		LastMax:      ans.lastMax,
	}
	if ans.enabled {
		// Tokens of the GCRA queue: the burst less the slots handed out
		// beyond the script's now, at the fill rate.
		clock := ans.scriptClock + float64(now.Sub(st.checked).Microseconds())
		s.Tokens = math.Min(ans.burst-(ans.tat-clock)*ans.fill/1e6, ans.burst)
		s.LastThrottle = time.UnixMicro(int64(ans.lastThrottle))
	}
	return s
}

// Fallbacks returns how many of scope's reservations and throttles Local
// alone decided or recorded because Redis did not answer in time (see
// [Store]).
func (a *Adaptive) Fallbacks(scope string) uint64 { return a.fb.get(scope) }

// answerLocked records ans, which came at now, in st. A decrease not
// heard of before makes every reservation taken so far one sent before
// it. The caller holds a.mu.
func (a *Adaptive) answerLocked(st *adaptiveScope, now time.Time, ans *adaptiveAnswer) {
	if ans.gen > st.gen {
		st.gen, st.holdSeq = ans.gen, st.sent
	}
	if now.Before(st.checked) {
		return
	}
	st.enabled, st.checked, st.ans = ans.enabled, now, *ans
}

// scopeLocked returns scope's record, creating it (see record). The
// caller holds a.mu.
func (a *Adaptive) scopeLocked(scope string) *adaptiveScope {
	return record(&a.scopes, scope, a.store().maxScopes())
}

// local returns Local, or a ratelimit.Adaptive with Beta DefaultBeta.
func (a *Adaptive) local() *ratelimit.Adaptive {
	if a.Local != nil {
		return a.Local
	}
	a.defOnce.Do(func() {
		a.defLocal = &ratelimit.Adaptive{Beta: DefaultBeta, MaxScopes: a.store().maxScopes(), Now: a.store().Now}
	})
	return a.defLocal
}

// store returns Store, or a Store without a client if Store is nil.
func (a *Adaptive) store() *Store { return a.none.or(a.Store) }
