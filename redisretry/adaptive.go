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
// [ratelimit.Recorder], [ratelimit.Releaser], [ratelimit.QuotaRecorder])
// whose state lives in Redis, so that a fleet of replicas learns one send
// rate per scope and paces all its attempts through one queue: a throttle
// that one replica receives slows every replica, and the fleet's attempts
// are spaced evenly, whichever replica sends them. It follows ratelimit.Adaptive: the
// CUBIC curve of the AWS SDKs' adaptive mode, with the parameters of Local
// (Beta, Scale, MinFillRate, Smoothing, Additive, FailFast, MaxWait), and
// the pacing by the quota a server publishes (see Published quotas).
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
// for the answer rather than go unpaced (see Bursts below).
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
// # Bursts
//
// A replica has at most one reserve call of a scope in flight. The
// Reserve calls that come meanwhile wait for it, then make one call
// together, which hands out as many slots one after the other, an
// interval apart, at its now: the slots that as many calls at that instant
// would take, in the order the calls came. So right after another
// replica's throttle, a burst that comes while the replica asks whether
// the scope is limited is paced by the queue, in two round trips, instead
// of going unpaced; if the answer is that the scope is not limited, the
// burst goes without a further round trip. With MaxWait or FailFast, the
// calls are refused from the first whose wait is too long, and take
// nothing. The calls that waited make their call within what is left of
// the Store's Timeout since the first of them came, so that none waits on
// Redis longer than Timeout in all (with a client whose
// ContextTimeoutEnabled is set: a client without it is cloned to time out
// reads and writes after Timeout, and go-redis then ignores the shorter
// deadline, so a call may wait up to twice Timeout); if the call they waited for failed,
// they do not ask (the Store's circuit is open) and Local decides.
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
// # Published quotas
//
// A server that says on its responses how much of its quota is left (the
// IETF RateLimit fields, X-RateLimit-*) paces the fleet by it, through one
// pacing per scope in Redis (the scope's key of kind "published"): the
// freshest quota any replica has reported, and a queue of places for the
// whole fleet, credited at
//
//	rate = (remaining − 1)/(seconds to the reset)
//
// places per second, with at most a tenth of a second's worth (at least
// one place) credited ahead, so that the fleet spends what is left evenly
// up to the reset and keeps one request, for its sends whose count the
// answers did not include yet. Since every replica takes its places from
// this one queue, the rate is the fleet's: no replica estimates how many
// replicas share the quota, as ratelimit.Adaptive does in process, and the
// queue's order is the fairness. Each slot waits the longer of its wait in
// the CUBIC queue, once the scope is limited, and in this one. The rules
// for answers are ratelimit.Adaptive.RecordQuotaAt's: a reset more than a
// second before the known one, while that one is ahead, is from a window
// that has ended and is ignored; one within a second of it, with no more
// left, keeps the earlier reset; any other replaces the quota known, and
// the remaining count of every answer not ignored replaces the one before. From the reset on
// nothing is paced until a replica reports the next window's quota, and
// a wait longer than 20 s is not imposed.
//
// The transport calls RecordQuota, in place of Record, with the outcome
// of each attempt whose answer publishes the quota. The quota costs no
// round trip of its own: a replica keeps the quotas it hears of (the
// newest 8) and reports them with its next call for the scope, a Reserve
// or a throttle (a throttled answer's own quota included, in the
// throttle's round trip), whose script applies them in order, before the
// throttle, each reset as the time left to it on the replica's clock at
// the call. While the quota paces the scope, or the replica has quotas to
// report, each Reserve is one round trip, shared with the calls that come
// while it is in flight (see Bursts). Cancel gives back a place of the
// queue as a place's credit, which moves the places behind it up one.
//
// # Time
//
// The script reads the Redis server's clock (TIME), so that the
// replicas' clocks need not agree; when the Store's Now is set, it uses
// that clock's readings instead.
//
// # Failures
//
// Every outcome and published quota is also recorded in Local, so that it
// stays warm: when Redis fails (see [Store]), Reserve returns Local's
// reservation, paced as ratelimit.Adaptive paces one replica of a fleet, and
// counts a fallback ([ratelimit.FallbackCounter]), for each of the calls
// that made or waited for the call that failed. Cancel gives a slot
// back, in one round trip, only if it is still the latest handed out; it
// is best effort. State returns the scope as of the last
// answer, without a round trip, or Local's state while the Store's
// circuit is open.
//
// A nil Local means a ratelimit.Adaptive with Beta DefaultBeta (0.9) and
// the other defaults. A Local given with a zero Beta means
// ratelimit.DefaultBeta (0.7), as it does for Local itself; Reference
// only affects Local, and turns the pacing by published quotas off, as in
// ratelimit. An Adaptive is safe for concurrent use and starts no
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
// Adaptive's mutex. Whether the scope is limited, and until when the
// published quota paces it, are the last answer's (ans, checked).
type adaptiveScope struct {
	ans     adaptiveAnswer // the last answer
	checked time.Time      // when it came; zero if none yet
	flight  *adaptiveCall  // the scope's reserve call in flight; nil if none
	next    *adaptiveCall  // the Reserve calls that came while flight was in flight, to make after it; nil if none

	unreported uint64 // sends made without asking, not yet reported
	gen        uint64 // the latest decrease heard of
	sent, done uint64 // reservations taken (less those cancelled); responses recorded and attempts released
	holdSeq    uint64 // reservations taken before gen was heard of

	notes quotaNotes // published quotas heard of, not yet reported (published.go)
}

// Reserve takes a send slot of scope and returns the reservation with the
// wait before sending. Before the scope's first throttle, while no
// published quota paces it, it makes a round trip at most once per Refresh
// and returns the zero Reservation and 0; once the scope is limited or
// paced, or a published quota is to be reported, one round trip (see
// Algorithm and Published quotas on [Adaptive]).
// A Reserve call that comes while another of the scope is in flight waits
// for it, then makes one round trip with the others that came meanwhile
// (see Bursts on [Adaptive]), waiting on Redis no longer than the Store's
// Timeout in all. With ok false nothing was taken and the attempt must not be sent: Local
// has FailFast set and a wait was needed, or the wait exceeds its MaxWait.
// When Redis fails, Local decides.
func (a *Adaptive) Reserve(scope string) (r ratelimit.Reservation, wait time.Duration, ok bool) {
	now := a.store().now()
	a.mu.Lock()
	st := a.scopeLocked(scope)
	if !st.ans.enabled && !st.paced(now) && !st.checked.IsZero() && now.Sub(st.checked) < positive(a.Refresh, DefaultAdaptiveRefresh) {
		st.unreported++
		st.sent++
		a.mu.Unlock()
		return ratelimit.Reservation{}, 0, true
	}
	// The mutex is taken once before the round trip and once after it,
	// which records the answer and hands the scope over (ask).
	if st.flight == nil {
		c := &adaptiveCall{n: 1, ctx: context.Background(), done: make(chan struct{})}
		st.flight = c
		a.beginLocked(st, c, nil, now)
		a.mu.Unlock()
		a.ask(st, scope, c)
		return a.take(st, scope, c, 0)
	}
	// A call is in flight: it may be the question whether the scope is
	// limited, right after another replica's throttle, and a burst must
	// not go unpaced meanwhile; and a burst of calls of their own would
	// queue for the client's connections and Redis past the Timeout.
	c := st.next
	if c == nil {
		var cancel context.CancelFunc
		c = &adaptiveCall{done: make(chan struct{})}
		c.ctx, cancel = context.WithTimeout(context.Background(), a.store().timeout())
		defer cancel()
		st.next = c
	}
	i := c.n
	c.n++
	prev := st.flight
	a.mu.Unlock()
	if i == 0 {
		<-prev.done // c has begun (handOverLocked)
		if c.asks {
			a.ask(st, scope, c)
		}
	}
	<-c.done
	return a.take(st, scope, c, i)
}

// Record records the outcome of an attempt sent to scope, in Local too. A
// throttle is one round trip that decreases the fleet's rate, unless the
// throttled request was sent before the last decrease took effect (see
// Algorithm on [Adaptive]); any other kind costs no round trip.
func (a *Adaptive) Record(scope string, k classify.Kind) {
	now := a.store().now()
	l := a.local()
	l.RecordAt(now, scope, k)
	a.record(now, l, scope, k, nil)
}

// record records in the replica's state, at now, the outcome k of an
// attempt sent to scope (Local has recorded it), after adding note, if
// not nil, to the quotas to report: a throttle is one round trip, which
// reports them.
func (a *Adaptive) record(now time.Time, l *ratelimit.Adaptive, scope string, k classify.Kind, note *quotaNote) {
	a.mu.Lock()
	st := a.scopeLocked(scope)
	if note != nil {
		st.notes.add(note.remaining, note.reset)
	}
	st.done++
	if k != classify.Throttle {
		a.mu.Unlock()
		return
	}
	old := int64(0)
	if st.done <= st.holdSeq {
		old = 1
	}
	known, sends, notes := st.gen, st.unreported, st.notes
	st.unreported, st.notes = 0, quotaNotes{}
	a.mu.Unlock()

	p := adaptiveParamsOf(l)
	ans, err := a.run(context.Background(), now, scope, &p, sends, "throttle", int64(known), old, &notes)
	a.mu.Lock()
	if err != nil {
		st.unreported += sends
		st.notes.putBack(notes)
		a.mu.Unlock()
		a.store().fallback(&a.fb, scope, err)
		return
	}
	a.answerLocked(st, now, &ans)
	a.mu.Unlock()
}

// Release records that an attempt sent to scope on a reservation Reserve
// made ended without an outcome to record (see [ratelimit.Releaser]), in
// Local too: the replica no longer counts it in flight, so that a hold
// (see Algorithm on [Adaptive]) ends once the reservations taken before
// its decrease were all answered or released. It costs no round trip: the
// fleet's state in Redis counts sends, not attempts in flight.
func (a *Adaptive) Release(scope string) {
	a.local().ReleaseAt(a.store().now(), scope)
	a.mu.Lock()
	if st := a.scopes[scope]; st != nil && st.done < st.sent {
		st.done++
	}
	a.mu.Unlock()
}

// Delay returns how long the holder of r, a reservation Reserve made, must
// still wait: until the instant it is due, without a round trip. It is
// what [ratelimit.Reservation.Delay] calls.
func (a *Adaptive) Delay(r ratelimit.Reservation) time.Duration {
	return max(time.Unix(0, int64(r.Ticket().Gen)).Sub(a.store().now()), 0)
}

// Cancel gives back the slot of r, a reservation Reserve made whose
// attempt will not be sent, if it is still the latest slot of its scope;
// and, while the published quota paces the scope, a place's credit, which
// moves the places behind it up one. One round trip, best effort, within
// the Store's Timeout.
func (a *Adaptive) Cancel(r ratelimit.Reservation) {
	a.mu.Lock()
	if st := a.scopes[r.Scope()]; st != nil && st.sent > 0 {
		st.sent--
	}
	a.mu.Unlock()
	err := a.store().do(func(ctx context.Context, c redis.UniversalClient) error {
		p := adaptiveParamsOf(a.local())
		return adaptiveScript.Run(ctx, c, a.keys(r.Scope()), a.args(a.store().now(), &p, 0, "cancel",
			strconv.FormatFloat(math.Float64frombits(r.Ticket().Seq), 'g', -1, 64), 0, nil)...).Err()
	})
	if err != nil {
		a.store().failed(err, false)
	}
}

// State returns scope's state as of the last answer from Redis, without a
// round trip, or Local's while the Store's circuit is open. A scope this
// replica has not asked about reads as the zero AdaptiveState. The
// published quota's fields are the fleet's pacing: QuotaRate is the
// fleet's rate, not this replica's; Outstanding is this replica's
// reservations in flight.
func (a *Adaptive) State(scope string) ratelimit.AdaptiveState {
	now := a.store().now()
	if a.store().down() {
		s := a.local().StateAt(now, scope)
		a.mu.Lock()
		s.Outstanding = 0
		if st := a.scopes[scope]; st != nil {
			s.Outstanding = st.outstanding()
		}
		a.mu.Unlock()
		return s
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
		Outstanding:  st.outstanding(),
	}
	if ans.enabled {
		// Tokens of the GCRA queue: the burst less the slots handed out
		// beyond the script's now, at the fill rate.
		clock := ans.scriptClock + float64(now.Sub(st.checked).Microseconds())
		s.Tokens = math.Min(ans.burst-(ans.tat-clock)*ans.fill/1e6, ans.burst)
		s.LastThrottle = time.UnixMicro(int64(ans.lastThrottle))
	}
	ans.quotaState(&s, st.checked, now)
	return s
}

// Fallbacks returns how many of scope's reservations and throttles Local
// alone decided or recorded because Redis did not answer in time (see
// [Store]).
func (a *Adaptive) Fallbacks(scope string) uint64 { return a.fb.get(scope) }

// ExtraThrottleRetries returns how many retries after throttles a request
// may make beyond its policy's MaxAttempts while the shared limiter paces
// the scope: Local's (ratelimit.Adaptive.ThrottleRetries, by default
// ratelimit.DefaultThrottleRetries). The transport asks it once per policy.
func (a *Adaptive) ExtraThrottleRetries() int { return a.local().ExtraThrottleRetries() }

// outstanding returns how many of the replica's reservations of the
// scope have not ended: taken, and not recorded, released nor cancelled.
// The caller holds the Adaptive's mutex.
func (st *adaptiveScope) outstanding() uint64 { return st.sent - min(st.done, st.sent) }

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
	st.checked, st.ans = now, *ans
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
