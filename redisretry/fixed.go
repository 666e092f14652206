package redisretry

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// Fixed paces the attempts of each scope at a rate published for the
// whole fleet ([ratelimit.Limiter]): all replicas that share the Store
// together send at most Limit, through a GCRA bucket in Redis kept by
// package redis_rate (its Limiter.Allow). With Limit redis_rate.PerSecond(100),
// a fleet of any size sends at most 100 attempts of a scope per second,
// in bursts of at most 100.
//
// # Waiting
//
// redis_rate's Allow takes a token or reports how long until one is
// free; it reserves nothing. So Reserve makes one round trip, unless other
// attempts of this replica already wait: an allowed attempt goes at once;
// a refused one, or one that queues behind the waiting ones without
// asking, gets a [ratelimit.Reservation] due at its turn to ask: when
// the RetryAfter Redis reported has passed, or one token interval
// (Period/Rate) after the latest turn this replica handed out, if that is
// later. Asked then (Reservation.Delay), it
// makes one round trip: allowed, it returns 0; refused, it keeps its place
// and asks again after the new RetryAfter. Delay before the turn makes no
// round trip, and Cancel none: it gives the turn back if it was the
// latest.
//
// The turns space one replica's waiters by the token interval, so that
// they do not all ask Redis the moment a token frees up and all but one
// ask in vain, and serve them in order; the replicas of a fleet still
// race for each token, in the order their turns come, and a wait may add
// up to more than the first RetryAfter. Under contention an attempt costs
// about one round trip per replica with waiters.
//
// FailFast and MaxWait refuse, without waiting, as ratelimit.Fixed's do:
// Reserve returns ok false with the wait when a wait was needed, or
// exceeded MaxWait.
//
// # Failures
//
// When Redis fails (see [Store]), Local decides: Reserve returns Local's
// reservation, and a reservation due to ask Redis again takes a token from
// Local instead (or, if Local would make it wait, gives that token back and
// returns Local's wait). Local should be this replica's share of the
// fleet's rate, Limit divided by the number of replicas, so that the fleet
// stays within Limit while Redis is down. Nil means a ratelimit.Fixed at
// the whole Limit, with FailFast and MaxWait: each replica alone may then
// send as much as the fleet, and N replicas up to N times Limit. A replica
// that falls back while the others still reach Redis adds its Local rate
// to theirs until its circuit closes. Each decision Local makes counts as
// a fallback ([ratelimit.FallbackCounter]).
//
// A Fixed is safe for concurrent use and starts no goroutine. It must not
// be copied, nor its fields changed, after first use.
type Fixed struct {
	// Store is where the buckets live; nil means a Store without a
	// client, so that Local makes every decision.
	Store *Store
	// Limit is the fleet's rate per scope, in Limit.Rate attempts per
	// Limit.Period with bursts of Limit.Burst. A Rate or Period that is
	// zero or negative means no limit: Reserve makes no round trip and
	// lets every attempt go. A Burst below 1 means 1.
	Limit redis_rate.Limit
	// Local is this replica's rate while Redis is down; nil means a
	// ratelimit.Fixed at the whole Limit (see Failures).
	Local *ratelimit.Fixed
	// FailFast refuses, instead of waiting, when no token is free.
	FailFast bool
	// MaxWait refuses when the wait would be longer; zero means no limit
	// (the caller's context bounds it).
	MaxWait time.Duration

	defOnce  sync.Once
	defLocal *ratelimit.Fixed

	mu     sync.Mutex
	scopes map[string]*fixedScope // guarded by mu
	ids    uint64                 // reservations handed out; guarded by mu

	fb   fallbacks
	none noStore
}

// Fixed returns a [Fixed] in s that paces each scope at limit, and with
// local while Redis is down (nil: see Fixed's Failures).
func (s *Store) Fixed(limit redis_rate.Limit, local *ratelimit.Fixed) *Fixed {
	return &Fixed{Store: s, Limit: limit, Local: local}
}

// Reserve asks Redis, in one round trip, for a send token of scope and
// returns the reservation with the wait before sending: the zero
// Reservation and 0 when the token was free, else a reservation due when
// it is its turn to ask again (see Waiting on [Fixed]). While other
// reservations of this replica wait for their turns, it queues behind
// them without asking. With ok false nothing was taken and the attempt
// must not be sent: FailFast is set, or the wait exceeds MaxWait.
func (f *Fixed) Reserve(scope string) (r ratelimit.Reservation, wait time.Duration, ok bool) {
	limit, limited := f.limit()
	if !limited {
		return ratelimit.Reservation{}, 0, true
	}
	now := f.store().now()
	f.mu.Lock()
	queued := f.scopeLocked(scope).last.After(now)
	f.mu.Unlock()
	var retry time.Duration
	if !queued {
		var err error
		if retry, err = f.allow(scope, limit); err != nil {
			f.store().fallback(&f.fb, scope, err)
			return f.local(limit).ReserveAt(now, scope)
		}
		if retry == 0 {
			return ratelimit.Reservation{}, 0, true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.scopeLocked(scope)
	due := st.turn(now, retry, interval(limit))
	wait = due.Sub(now)
	if f.FailFast || (f.MaxWait > 0 && wait > f.MaxWait) {
		return ratelimit.Reservation{}, wait, false
	}
	st.last = due
	f.ids++
	return ratelimit.NewReservation(f, scope, ratelimit.Ticket{Gen: f.ids, Seq: uint64(due.Add(-st.shift).UnixNano())}), wait, true
}

// Delay returns how long the holder of r, a reservation Reserve made, must
// still wait: until its turn to ask Redis, without a round trip; at its
// turn, one round trip: 0 if Redis allows the attempt now, else the
// RetryAfter Redis reported (see Waiting on [Fixed]). It is what
// [ratelimit.Reservation.Delay] calls.
func (f *Fixed) Delay(r ratelimit.Reservation) time.Duration {
	now := f.store().now()
	id := r.Ticket().Gen
	f.mu.Lock()
	st := f.scopeLocked(r.Scope())
	due := st.due(r)
	f.mu.Unlock()
	if left := due.Sub(now); left > 0 {
		return left
	}
	limit, limited := f.limit()
	if !limited {
		return 0
	}
	retry, err := f.allow(r.Scope(), limit)
	if err != nil {
		f.store().fallback(&f.fb, r.Scope(), err)
		f.forget(r)
		lr, wait, ok := f.local(limit).ReserveAt(now, r.Scope())
		if ok && wait > 0 {
			lr.Cancel() // ask again after the wait, not hold a second place
		}
		return wait
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st = f.scopeLocked(r.Scope())
	iv := interval(limit)
	if retry == 0 {
		// With a burst of 1, Redis's schedule restarts from a token taken
		// late, keeping no credit: the turns still to come move as much
		// later, up to an interval.
		if limit.Burst == 1 {
			st.slip(min(now.Sub(due), iv))
		}
		delete(st.again, id)
		return 0
	}
	// Refused at its turn, a waiter keeps its place: it asks again when
	// Redis said, and the turns still to come move as much later, up to
	// an interval, and after it.
	next := now.Add(retry)
	st.slip(min(retry, iv))
	if next.After(st.last) {
		st.last = next
	}
	if st.again == nil {
		st.again = make(map[uint64]time.Time)
	}
	if len(st.again) >= maxAgain {
		dropSome(st.again) // those dropped ask again early: one round trip more
	}
	st.again[id] = next
	return next.Sub(now)
}

// Cancel forgets r, a reservation Reserve made whose attempt will not be
// sent; if r had the latest turn of its scope, the next reservation may
// take it. It makes no round trip: r holds no token in Redis, since
// redis_rate's Allow reserves none.
func (f *Fixed) Cancel(r ratelimit.Reservation) {
	limit, _ := f.limit()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.scopes[r.Scope()]
	if st == nil {
		return
	}
	due := st.due(r)
	delete(st.again, r.Ticket().Gen)
	if st.last.Equal(due) {
		st.last = due.Add(-interval(limit))
	}
}

// forget drops what f keeps of r, once r no longer waits.
func (f *Fixed) forget(r ratelimit.Reservation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.scopes[r.Scope()]; st != nil {
		delete(st.again, r.Ticket().Gen)
	}
}

// fixedScope is what a replica keeps of one scope's waiters, guarded by
// its Fixed's mutex. A reservation's ticket holds its id and its turn less
// the shift at the time it was handed out, so that slip moves every turn
// handed out before.
type fixedScope struct {
	last  time.Time            // the latest turn handed out, shift included
	shift time.Duration        // how much later the turns are than first handed out
	again map[uint64]time.Time // the next turn of each reservation refused at its turn, by id
}

// due returns r's turn.
func (st *fixedScope) due(r ratelimit.Reservation) time.Time {
	if next, ok := st.again[r.Ticket().Gen]; ok {
		return next
	}
	return time.Unix(0, int64(r.Ticket().Seq)).Add(st.shift)
}

// slip moves the turns still to come d later.
func (st *fixedScope) slip(d time.Duration) {
	if d > 0 {
		st.shift += d
		st.last = st.last.Add(d)
	}
}

// maxAgain bounds a scope's again map.
const maxAgain = 1024

// turn returns when a waiter that Redis told to retry after retry, at now,
// may ask again: then, or an interval after the latest turn handed out if
// that is later, so that this replica's waiters ask one at a time.
func (st *fixedScope) turn(now time.Time, retry, interval time.Duration) time.Time {
	due := now.Add(retry)
	if next := st.last.Add(interval); next.After(due) {
		due = next
	}
	return due
}

// scopeLocked returns scope's record, creating it (see record). The
// caller holds f.mu.
func (f *Fixed) scopeLocked(scope string) *fixedScope {
	return record(&f.scopes, scope, f.store().maxScopes())
}

// interval is the time between two tokens of limit.
func interval(limit redis_rate.Limit) time.Duration {
	return limit.Period / time.Duration(limit.Rate)
}

// Fallbacks returns how many of scope's decisions Local made because Redis
// did not answer in time (see [Store]).
func (f *Fixed) Fallbacks(scope string) uint64 { return f.fb.get(scope) }

// allow takes a token of scope from Redis if one is free, returning 0, or
// returns how long until one is.
func (f *Fixed) allow(scope string, limit redis_rate.Limit) (wait time.Duration, err error) {
	err = f.store().do(func(ctx context.Context, c redis.UniversalClient) error {
		res, err := redis_rate.NewLimiter(c).Allow(ctx, f.store().key(scope, "fixed"), limit)
		if err != nil {
			return err
		}
		if res.Allowed == 0 {
			// RetryAfter is positive when refused; a clock rounding to
			// zero still must not read as allowed.
			wait = max(res.RetryAfter, time.Nanosecond)
		}
		return nil
	})
	return wait, err
}

// limit returns Limit with its Burst at least 1, and whether it limits.
func (f *Fixed) limit() (redis_rate.Limit, bool) {
	l := f.Limit
	l.Burst = max(l.Burst, 1)
	return l, l.Rate > 0 && l.Period > 0
}

// local returns Local, or a ratelimit.Fixed at the whole limit.
func (f *Fixed) local(limit redis_rate.Limit) *ratelimit.Fixed {
	if f.Local != nil {
		return f.Local
	}
	f.defOnce.Do(func() {
		f.defLocal = &ratelimit.Fixed{
			Rate:      float64(limit.Rate) / limit.Period.Seconds(),
			Burst:     limit.Burst,
			FailFast:  f.FailFast,
			MaxWait:   f.MaxWait,
			MaxScopes: f.store().maxScopes(),
			Now:       f.store().Now,
		}
	})
	return f.defLocal
}

// store returns Store, or a Store without a client if Store is nil.
func (f *Fixed) store() *Store { return f.none.or(f.Store) }
