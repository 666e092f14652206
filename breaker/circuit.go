package breaker

import (
	"cmp"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// The defaults of a [Circuit]'s zero fields. The package doc explains how
// they were chosen.
const (
	// DefaultFailures is the number of consecutive failures that opens a
	// circuit when Circuit.Failures is zero: 5.
	DefaultFailures = 5
	// DefaultStalls is the number of consecutive failures that opens a
	// circuit, when the last of them is a stalled Timeout, when
	// Circuit.Stalls is zero: 2.
	DefaultStalls = 2
	// DefaultStallFor is how long no attempt of a scope may have
	// succeeded for a Timeout to count as stalled, when Circuit.StallFor
	// is zero: 250 ms.
	DefaultStallFor = 250 * time.Millisecond
	// DefaultOpenFor is the open time of a circuit's first opening, before
	// jitter, when Circuit.OpenFor is zero: 1.5 s.
	DefaultOpenFor = 1500 * time.Millisecond
	// DefaultProbes is the number of successful probes that closes a
	// half-open circuit, and of probes in flight at once, when
	// Circuit.Probes is zero: 1.
	DefaultProbes = 1
	// DefaultProbeLease is how long a probe keeps its slot without being
	// settled when Circuit.ProbeLease is zero: 30 s.
	DefaultProbeLease = 30 * time.Second
	// DefaultMaxScopes is the most scopes a [Circuit] stores at once when
	// Circuit.MaxScopes is zero.
	DefaultMaxScopes = 10000
)

// jitter is the relative spread of an open time: the circuit stays open for
// its nominal open time times a factor uniform in [1-jitter, 1+jitter).
const jitter = 0.1

// Circuit is a circuit breaker per scope, in process. It refuses at once,
// with an [*OpenError], the attempts of a scope whose server seems to be in
// trouble, and lets a few probes through now and then to learn when it has
// recovered. Each scope has its own circuit, in one of three phases:
//
//   - [Closed]: Allow lets every attempt through, and the failures are
//     counted in a row: a success resets the count, while Throttle and
//     Fatal outcomes leave it alone. The circuit opens after Failures
//     consecutive failures (5), or after Stalls of them (2) when the last
//     is a Timeout and no attempt of the scope has succeeded for StallFor
//     (250 ms). A server that has stopped answering is thus told apart
//     from one that fails now and then without waiting for 5 timeouts,
//     each of which lets its caller send one more attempt to hang.
//   - [Open]: Allow refuses every attempt with an *OpenError carrying the
//     last failure, until the open time ends: OpenFor (1.5 s) at the first
//     opening, doubled at each failed probe up to MaxOpenFor (12 s), and
//     each time multiplied by a factor uniform in [0.9, 1.1), drawn from
//     Rand, so that circuits opened together do not probe together.
//   - [HalfOpen]: the first Allow after the open time finds the circuit
//     half-open. It lets at most Probes attempts (1) through at once, as
//     probes, and refuses the others: never all the waiting callers at
//     once. Probes successful probes close the circuit, and its open time
//     goes back to OpenFor. A failed probe opens it again, for twice as
//     long. A probe dropped, or ending with a Throttle or Fatal outcome,
//     frees its slot for another caller; so does one not settled within
//     ProbeLease (30 s), whose outcome still counts if it comes.
//
// In short:
//
//	closed    --Failures in a row, or Stalls ending in a stall-->  open (OpenFor)
//	open      --Allow once the open time is over----------------> half-open
//	half-open --Probes successful probes------------------------> closed
//	half-open --a failed probe----------------------------------> open (open time x2, at most MaxOpenFor)
//
// Only the outcomes of attempts let through since the last change of phase
// count. When a server hangs, the attempts that were in flight when the
// circuit opened time out in a burst after it: they neither lengthen its
// open time nor close it.
//
// For example, with the defaults and Rand 0.5 (no jitter): a server stops
// answering for 5 s, at 0 s, while 8 callers wait on it with attempts that
// time out after 500 ms. At 0.5 s the first timeout is counted and its
// caller sends again; the second, with no success for 500 ms, opens the
// circuit until 2 s, and the 6 others are ignored. Callers are refused at
// once. At 2 s one caller probes; the probe times out at 2.5 s and the
// circuit opens until 5.5 s. At 5.5 s a probe succeeds and the circuit
// closes. The server received the 8 attempts, 1 more before the circuit
// opened, and 1 probe while it hung.
//
// The zero Circuit is ready to use, with the defaults above. A Circuit is
// safe for concurrent use, and goroutines using different scopes never
// wait for each other. While a scope's circuit is closed, Allow takes no
// lock, does not read the clock and allocates nothing; nor does Done of a
// success, but for reading the clock for one success in a few. A Circuit
// starts no goroutine and sets no timer: an open time ends when Allow is
// next called. At most MaxScopes scopes are stored; a new
// scope beyond that evicts one that Allow has not used lately, and an
// evicted scope starts again closed. A Circuit must not be copied, nor its
// fields changed, after first use.
type Circuit struct {
	// Failures is the number of consecutive failures that opens the
	// circuit. Zero or negative means DefaultFailures (5).
	Failures int
	// Stalls is the number of consecutive failures that opens the circuit
	// when the last of them is a Timeout and no attempt of the scope has
	// succeeded for StallFor. Zero or negative means DefaultStalls (2); a
	// value of Failures or more turns the rule off.
	Stalls int
	// StallFor is how long no attempt of a scope must have succeeded for
	// a Timeout to count as stalled. Zero or negative means
	// DefaultStallFor (250 ms). Keep it below the attempt timeout.
	StallFor time.Duration
	// Trips, unless nil, says which Transient and Timeout outcomes count
	// as failures: those for which it returns true, Kinds{classify.Timeout}
	// for the client's own timeouts only, Kinds{classify.Transient,
	// classify.Timeout} for 5xx responses too, or a TripFunc of the
	// caller's. Nil means the failures of a server that does not answer:
	// every Timeout, and a Transient outcome without a response (a refused
	// or reset connection). A server that answers, even 503, is up; its
	// 5xx are for the retries and their retry quota, which is AWS's
	// circuit breaker for retries, and a breaker that opened on a 503
	// brownout refused the callers for a whole open time after the server
	// recovered, where the retries lost none.
	// It is never asked about other outcomes, which never count: a
	// Throttle is the rate limiter's business, and a Fatal outcome (a 4xx,
	// the caller's cancellation) no sign of trouble on the server. It must
	// be safe for concurrent use.
	Trips Tripper
	// OpenFor is the open time of the first opening, before jitter. Zero
	// or negative means DefaultOpenFor (1.5 s).
	OpenFor time.Duration
	// MaxOpenFor caps the open time, which doubles at each failed probe.
	// Zero or negative means 8 times OpenFor (12 s with the default); a
	// value below OpenFor means OpenFor, so that it never doubles.
	MaxOpenFor time.Duration
	// Probes is the number of successful probes that closes a half-open
	// circuit, and the most probes in flight at once. Zero or negative
	// means DefaultProbes (1).
	Probes int
	// ProbeLease is how long a probe holds its slot without being
	// settled, by Done or Drop; after that another caller may probe.
	// Zero or negative means DefaultProbeLease (30 s).
	ProbeLease time.Duration
	// MaxScopes is the most scopes stored at once. Zero or negative means
	// DefaultMaxScopes.
	MaxScopes int
	// Now is the clock of the methods without an At suffix; nil means
	// time.Now.
	Now func() time.Time
	// Rand returns numbers uniform in [0, 1) for the open time's jitter;
	// nil means math/rand/v2. It must be safe for concurrent use.
	Rand func() float64
	// OnChange, unless nil, is called after a scope's circuit changes
	// phase, with the scope, the phase it left and its state just after
	// the change. It is called synchronously by the Allow or Done that
	// made the change, after the circuit's locks are released (it may
	// call State), and must not block. Calls for one scope may overlap
	// when goroutines change its phase at once.
	OnChange func(scope string, from Phase, s State)

	gens   atomic.Uint64 // the last generation handed out, for all scopes
	scopes scopemap.Sync[circuitScope]
}

var (
	_ Breaker = (*Circuit)(nil)
	_ Settler = (*Circuit)(nil)
)

// Allow is AllowAt at c.Now(), or the wall clock if c.Now is nil; it reads
// the clock only when the scope's circuit is not closed.
func (c *Circuit) Allow(scope string) (Pass, error) {
	s := c.scope(scope)
	if w := s.word.Load(); phaseOf(w) == Closed {
		return Pass{s: c, scope: scope, ticket: Ticket{Gen: genOf(w)}, cs: s}, nil
	}
	return c.allowSlow(c.now(), scope, s)
}

// AllowAt asks to send one attempt of scope as of now. While the scope's
// circuit is closed it returns a Pass that is not a probe; half-open with a
// probe slot free, a probe. Otherwise it returns the zero Pass and an
// *OpenError, which matches ErrOpen with errors.Is and unwraps to the last
// failure counted: the circuit is open until the error's Until, or
// half-open with its Probes probes in flight.
func (c *Circuit) AllowAt(now time.Time, scope string) (Pass, error) {
	s := c.scope(scope)
	if w := s.word.Load(); phaseOf(w) == Closed {
		return Pass{s: c, scope: scope, ticket: Ticket{Gen: genOf(w)}, cs: s}, nil
	}
	return c.allowSlow(now, scope, s)
}

// Done is DoneAt at c.Now(), or the wall clock if c.Now is nil; it is what
// [Pass.Done] calls. It reads the clock only when the outcome changes
// something, and for one success in a few.
func (c *Circuit) Done(p Pass, out classify.Outcome, err error) {
	if c.owns(p) {
		c.done(time.Time{}, false, &p, out, err)
	}
}

// DoneAt settles p, a pass c handed out, with the outcome of its attempt as
// of now, as [Pass.Done] describes. A success of an attempt let through
// while closed takes no lock and costs a few atomic operations. Passes of
// another Breaker, and of a scope evicted since, are ignored.
func (c *Circuit) DoneAt(now time.Time, p Pass, out classify.Outcome, err error) {
	if c.owns(p) {
		c.done(now, true, &p, out, err)
	}
}

// owns reports whether c handed p out: passes of another Breaker, and
// NewPass's, are ignored.
func (c *Circuit) owns(p Pass) bool { return p.s == Settler(c) && p.cs != nil }

// done is Done of p, one of c's passes, at now if haveNow and otherwise
// at c.now() if it needs the time.
func (c *Circuit) done(now time.Time, haveNow bool, p *Pass, out classify.Outcome, err error) {
	s := p.cs
	v := c.verdict(out, err)
	if v == dropped && !p.probe {
		return
	}
	if v == succeeded {
		if s.oks.Due() {
			if !haveNow {
				now, haveNow = c.now(), true
			}
			s.oks.Stamp(now)
		}
		if !p.probe && s.word.Load() == word(p.ticket.Gen, Closed) && s.streak.Load() == 0 {
			return // nothing counted to reset
		}
	}
	if !haveNow {
		now = c.now()
	}
	c.settle(now, *p, s, v, out, err)
}

// Drop is DropAt at c.Now(), or the wall clock if c.Now is nil; it is what
// [Pass.Drop] calls. It reads the clock only for a probe.
func (c *Circuit) Drop(p Pass) {
	if p.probe {
		c.DropAt(c.now(), p)
	}
}

// DropAt settles p, a pass c handed out whose attempt was not sent or was
// given up, as of now: a probe's slot is freed; any other pass needs
// nothing.
func (c *Circuit) DropAt(now time.Time, p Pass) {
	if c.owns(p) && p.probe {
		c.settle(now, p, p.cs, dropped, classify.Outcome{}, nil)
	}
}

// State is StateAt at c.Now(), or the wall clock if c.Now is nil.
func (c *Circuit) State(scope string) State { return c.StateAt(c.now(), scope) }

// StateAt returns what c knows of scope's circuit as of now, without
// counting as a use of the scope; the zero State if c does not store it.
func (c *Circuit) StateAt(now time.Time, scope string) State {
	s := c.scopes.Peek(scope)
	if s == nil {
		return State{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked(now)
}

// verdict is what out says of the server, to the circuit.
type verdict uint8

const (
	dropped   verdict = iota // nothing: a Throttle, a Fatal outcome, an outcome Trips does not count, a Drop
	succeeded                // it answers
	failed                   // it is in trouble
)

// verdict returns what out, with err the attempt's error (nil when a
// response came), counts as.
func (c *Circuit) verdict(out classify.Outcome, err error) verdict {
	switch {
	case out.Kind == classify.Success:
		return succeeded
	case c.Failure(out, err):
		return failed
	}
	return dropped
}

// Failure reports whether an attempt whose outcome is out, with err its
// error (nil when a response came), counts as a failure of its server
// under c's Trips: with Trips, a Transient or Timeout outcome it says
// counts; without, a Timeout, or a Transient outcome without a response
// (a refused or reset connection), since a server that answers, 503 or
// not, is up. Other outcomes never count. A breaker that keeps its state
// elsewhere (module redisretry) counts as c does.
func (c *Circuit) Failure(out classify.Outcome, err error) bool {
	switch {
	case out.Kind != classify.Transient && out.Kind != classify.Timeout:
		return false
	case c.Trips != nil:
		return c.Trips.Trips(out)
	}
	return out.Kind == classify.Timeout || err != nil
}

// scope returns scope's circuit, marked used, creating it closed if
// needed. Finding a stored scope takes no lock.
func (c *Circuit) scope(scope string) *circuitScope {
	if s := c.scopes.Get(scope); s != nil {
		return s
	}
	return c.addScope(scope)
}

// addScope stores scope's circuit, closed, unless another goroutine did
// first, and returns it.
func (c *Circuit) addScope(scope string) *circuitScope {
	return c.scopes.Add(scope, orDefault(c.MaxScopes, DefaultMaxScopes), func(s *circuitScope) {
		s.word.Store(word(c.gens.Add(1), Closed))
	})
}

// params are c's settings with the defaults applied.
type params struct {
	failures, stalls, probes   int
	stallFor, openFor, maxOpen time.Duration
	lease                      time.Duration
}

// params resolves c's zero fields to their defaults.
func (c *Circuit) params() params {
	p := params{
		failures: orDefault(c.Failures, DefaultFailures),
		stalls:   orDefault(c.Stalls, DefaultStalls),
		probes:   orDefault(c.Probes, DefaultProbes),
		stallFor: orDefault(c.StallFor, DefaultStallFor),
		openFor:  orDefault(c.OpenFor, DefaultOpenFor),
		lease:    orDefault(c.ProbeLease, DefaultProbeLease),
	}
	p.maxOpen = max(orDefault(c.MaxOpenFor, 8*p.openFor), p.openFor)
	return p
}

// jittered returns d times a factor uniform in [1-jitter, 1+jitter), drawn
// from c.Rand.
func (c *Circuit) jittered(d time.Duration) time.Duration {
	r := rand.Float64
	if c.Rand != nil {
		r = c.Rand
	}
	u := r()
	if !(u >= 0) { // negative or NaN: a Rand out of its range is held to it
		u = 0
	}
	u = min(u, 1)
	f := float64(d) * (1 - jitter + 2*jitter*u)
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(f)
}

func (c *Circuit) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// orDefault returns v, or def when v is zero or negative.
func orDefault[T int | time.Duration](v, def T) T { return cmp.Or(max(v, 0), def) }
