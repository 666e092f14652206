package ratelimit

import (
	"math"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/internal/scopemap"
	"golang.org/x/time/rate"
)

// Fixed paces sends per scope at a fixed rate with a burst: the throttle
// policy of Amazon SNS deliveries, maxReceivesPerSecond (docs/sns.md). Each
// scope has its own token bucket, a golang.org/x/time/rate.Limiter that
// holds up to Burst tokens, starts full and gains Rate tokens per second.
// Call ReserveAt before each attempt, first attempts included, and wait what
// it returns. Unlike [Adaptive] the rate never changes, whatever the
// responses, so there is nothing to record.
//
// With Rate 10 and Burst 2, three requests at the same instant wait 0, 0 and
// 100 ms, and a fourth 200 ms. With the default Burst of 1 they wait 0, 100,
// 200 and 300 ms: sends are spaced 1/Rate apart and no window of one second
// holds more than Rate+1 of them.
//
// A Rate that is zero, negative, NaN or +Inf means no limit: ReserveAt returns
// at once without looking the scope up. At most MaxScopes scopes are stored
// at any moment; a new scope beyond that evicts one as [Adaptive] does (an
// approximation of least recently used that evicts a scope ReserveAt has
// not used lately, whenever there is one), and the evicted scope starts
// again with a full burst when next used. A scope unused for Burst/Rate
// seconds has a full bucket anyway, so evicting it changes nothing.
//
// The zero value is ready to use and limits nothing. A Fixed is safe for
// concurrent use, and as with [Adaptive] goroutines using different scopes
// never wait for each other: each scope has its own mutex, and only a
// scope's first use takes one that all scopes share. It never sleeps and
// starts no goroutine. It must not be copied, nor its fields changed, after
// first use.
type Fixed struct {
	Rate      float64          // sends per second per scope; zero or negative means no limit
	Burst     int              // most sends at once after an idle spell; zero or negative means 1 (evenly spaced sends)
	FailFast  bool             // refuse, instead of waiting, when no token is there
	MaxWait   time.Duration    // refuse when the wait would be longer; zero means no limit (the caller's context bounds it)
	MaxScopes int              // most scopes stored at once; zero means DefaultMaxScopes
	Now       func() time.Time // clock of the methods without an At suffix; nil means time.Now

	scopes scopemap.Sync[fixedScope]
}

// fixedScope is one scope's bucket and its latest reservation that had to
// wait, which CancelAt may give back, behind the scope's own lock.
type fixedScope struct {
	mu   sync.Mutex
	lim  *rate.Limiter     // set before the scope is stored, never changed
	last *rate.Reservation // nil once given back; guarded by mu
	act  time.Time         // when last may send; guarded by mu
}

// ReserveAt takes one send token from scope's bucket as of now, through
// rate.Limiter.ReserveN, and returns the reservation with how long the
// caller must wait before sending: the zero Reservation when it need not
// wait. With ok false nothing was taken (the reservation was cancelled)
// and the attempt must not be sent (the caller returns [ErrRateLimited],
// wrapped): FailFast is set and a wait was needed, or the wait exceeds
// MaxWait. The wait is then still reported.
func (f *Fixed) ReserveAt(now time.Time, scope string) (r Reservation, wait time.Duration, ok bool) {
	if !f.limited() {
		return Reservation{}, 0, true
	}
	s := f.scope(scope)
	s.mu.Lock()
	defer s.mu.Unlock()
	rr := s.lim.ReserveN(now, 1) // always OK: one token never exceeds the burst
	wait = rr.DelayFrom(now)
	if wait == 0 {
		return Reservation{}, 0, true
	}
	if f.FailFast || (f.MaxWait > 0 && wait > f.MaxWait) {
		rr.CancelAt(now) // the latest reservation: its token comes back whole
		return Reservation{}, wait, false
	}
	s.last, s.act = rr, now.Add(wait)
	return Reservation{q: f, scope: scope, ticket: Ticket{Seq: actSeq(s.act)}}, wait, true
}

// Reserve is ReserveAt at f.Now(), or the wall clock if f.Now is nil.
func (f *Fixed) Reserve(scope string) (r Reservation, wait time.Duration, ok bool) {
	return f.ReserveAt(f.now(), scope)
}

// DelayAt returns how long, as of now, the holder of r, a reservation f
// took, must still wait before sending: the time left until the instant
// ReserveAt fixed, which a fixed rate never moves.
func (f *Fixed) DelayAt(now time.Time, r Reservation) time.Duration {
	if r.q != Queue(f) {
		return 0
	}
	return max(time.Unix(0, int64(r.ticket.Seq)).Sub(now), 0)
}

// Delay is DelayAt at f.Now(), or the wall clock if f.Now is nil; it is
// what [Reservation.Delay] calls.
func (f *Fixed) Delay(r Reservation) time.Duration { return f.DelayAt(f.now(), r) }

// CancelAt tries to give back, as of now, the token of r, a reservation f
// took whose caller gave up waiting. It is best effort and never lets the
// scope send faster than its rate: it gives the token back (with
// rate.Reservation.CancelAt) only when r is the scope's latest reservation
// and the only one still waiting. When several callers wait, giving a
// token back would let a later caller send at the same instant as
// another, so nothing is given back; rate.Limiter itself restores nothing
// when a waiter other than the latest cancels. A lost token delays the
// scope's next send by at most 1/Rate.
func (f *Fixed) CancelAt(now time.Time, r Reservation) {
	if r.q != Queue(f) || !f.limited() {
		return
	}
	s := f.scopes.Peek(r.scope)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil || !s.act.After(now) || actSeq(s.act) != r.ticket.Seq {
		return
	}
	// Waiting reservations send 1/Rate apart, so the latest is the only one
	// waiting when the one before it would send no later than now.
	// The interval is rounded down, so that rounding errs on that side.
	interval := time.Duration(min(float64(time.Second)/f.Rate, math.MaxInt64))
	if prev := s.act.Add(-interval); !prev.After(now) {
		s.last.CancelAt(now)
		s.last = nil
	}
}

// Cancel is CancelAt at f.Now(), or the wall clock if f.Now is nil; it is
// what [Reservation.Cancel] calls.
func (f *Fixed) Cancel(r Reservation) { f.CancelAt(f.now(), r) }

// scope returns scope's state, marked used, creating it if needed. Finding
// a stored scope takes no lock.
func (f *Fixed) scope(scope string) *fixedScope {
	if s := f.scopes.Get(scope); s != nil {
		return s
	}
	return f.scopes.Add(scope, orDefault(f.MaxScopes, DefaultMaxScopes), func(s *fixedScope) {
		s.lim = rate.NewLimiter(rate.Limit(f.Rate), orDefault(f.Burst, 1))
	})
}

// lastUnixNano is the last instant whose Unix time in nanoseconds an
// int64 holds, in 2262.
var lastUnixNano = time.Unix(0, math.MaxInt64)

// actSeq returns the ticket of a reservation that may send at act: act's
// Unix time in nanoseconds, or that of lastUnixNano for an act after it,
// whose UnixNano is undefined (a Rate so low that the wait runs for
// centuries), so that DelayAt still reads the wait as centuries long.
func actSeq(act time.Time) uint64 {
	if act.After(lastUnixNano) {
		act = lastUnixNano
	}
	return uint64(act.UnixNano())
}

// limited reports whether Rate sets a limit: it is positive and finite.
func (f *Fixed) limited() bool { return f.Rate > 0 && !math.IsInf(f.Rate, 1) }

func (f *Fixed) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}
