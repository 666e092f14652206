package quota

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/scopemap"
)

// The retry budget's defaults, Finagle's (docs/budget.md).
const (
	DefaultBudgetRatio        = 0.2              // retries per request
	DefaultBudgetMinPerSecond = 10               // retries per second allowed whatever the traffic
	DefaultBudgetWindow       = 10 * time.Second // how far back requests and retries count
)

// ErrOverBudget records that a policy's retry budget (its Budget, usually
// a [Budget]) refused a retry: the retries of the scope's window already
// reached its share of the requests, or its floor. The transport returns
// it, wrapped, as the reason it stopped retrying, where a refusal by the
// policy's Quota gives [ErrExceeded]; match it with errors.Is.
// [Budget.AcquireAt] itself reports a refusal with ok false, not an error.
var ErrOverBudget = errors.New("quota: retry budget exceeded")

// budgetSlots is how many slices the window is kept in: requests and
// retries leave the window a tenth of it at a time.
const budgetSlots = 10

// Budget is a retry budget: per scope, the retries of the last Window may
// be at most Ratio of the requests of the same Window, or, when that is
// less, MinPerSecond for each second of it, a floor that lets a client with
// little traffic still retry. The same holds within each tenth of the
// Window, so that the budget left unspent while all was well cannot be
// spent in a burst when an outage begins. It is the budget of Finagle,
// Envoy and gRPC's proposals (docs/budget.md): unlike [Bucket], whose bucket
// lets a burst of retries through before it drains, it bounds the retries
// at every moment, so that a client whose traffic is above the floor never
// sends more than 1 + Ratio times its requests, whatever the failure
// rate.
//
// The transport counts each request with Request, through the
// [RequestCounter] interface, before its first attempt, and asks Acquire
// before each retry. A retry counts once it is granted, whether it is
// sent and succeeds or not: Refund and Success do nothing, since a retry
// that succeeded still cost the server what the budget bounds. A retry
// that was granted and then not sent is given back with Cancel.
//
// Counts are kept in ten slices of Window each, so they leave the window
// a tenth of it at a time. A slice is a whole number of nanoseconds, at
// least one, so a Window under 10 ns counts as 10 ns. At most MaxScopes
// scopes are stored; a new scope beyond that evicts the least recently
// used one, whose counts start again from zero.
//
// The zero value is ready to use with the defaults. A Ratio, MinPerSecond
// or Window that is zero means its default, and so does a NaN Ratio or
// MinPerSecond, and a negative Window; a negative MinPerSecond means no
// floor, and a negative Ratio none of the requests. A Budget is safe
// for concurrent use; it never sleeps and starts no goroutine. It must
// not be copied, nor its fields changed, after first use.
type Budget struct {
	Ratio        float64          // retries per request in the window; zero means DefaultBudgetRatio
	MinPerSecond float64          // retries per second of the window allowed anyway; zero means DefaultBudgetMinPerSecond
	Window       time.Duration    // how far back requests and retries count; zero or negative means DefaultBudgetWindow; under 10 ns means 10 ns
	MaxScopes    int              // most scopes stored at once; zero means DefaultMaxScopes
	Now          func() time.Time // clock of the methods without an At suffix; nil means time.Now

	mu     sync.Mutex
	scopes scopemap.Map[budgetScope] // guarded by mu
}

// budgetScope is one scope's counts, in a ring of slices.
type budgetScope struct {
	requests, retries [budgetSlots]float64
	head              int       // the current slice
	start             time.Time // when the current slice began
}

// advance moves s's current slice to the one that holds now, emptying the
// slices it passes; a clock going backwards stays in the current one.
func (s *budgetScope) advance(now time.Time, slice time.Duration) {
	n := now.Sub(s.start) / slice
	if n <= 0 {
		return
	}
	if n >= budgetSlots {
		s.requests, s.retries = [budgetSlots]float64{}, [budgetSlots]float64{}
		s.start = now
		return
	}
	for range n {
		s.head = (s.head + 1) % budgetSlots
		s.requests[s.head], s.retries[s.head] = 0, 0
	}
	s.start = s.start.Add(n * slice)
}

// left returns how many more retries s allows: what the window allows,
// and no more than the current slice does, so that what went unspent
// while all was well cannot be spent at once when an outage begins.
func (s *budgetScope) left(p budgetParams) float64 {
	var requests, retries float64
	for i := range budgetSlots {
		requests += s.requests[i]
		retries += s.retries[i]
	}
	window := max(p.ratio*requests, p.floor) - retries
	slice := max(p.ratio*s.requests[s.head], p.floor/budgetSlots) - s.retries[s.head]
	return min(window, slice)
}

// budgetParams are a Budget's settings with defaults resolved.
type budgetParams struct {
	ratio, floor float64
	slice        time.Duration
}

func (b *Budget) params() budgetParams {
	p := budgetParams{ratio: b.Ratio, slice: b.Window / budgetSlots}
	switch {
	case b.Ratio == 0 || math.IsNaN(b.Ratio):
		p.ratio = DefaultBudgetRatio
	case b.Ratio < 0:
		p.ratio = 0
	}
	if b.Window <= 0 {
		p.slice = DefaultBudgetWindow / budgetSlots
	}
	p.slice = max(p.slice, 1) // the divisor of every step of the ring
	perSecond := b.MinPerSecond
	switch {
	case perSecond == 0 || math.IsNaN(perSecond):
		perSecond = DefaultBudgetMinPerSecond
	case perSecond < 0:
		perSecond = 0
	}
	p.floor = perSecond * (p.slice * budgetSlots).Seconds()
	return p
}

// scopeLocked returns scope's counts advanced to now, storing them if
// needed. The caller holds b.mu.
func (b *Budget) scopeLocked(now time.Time, scope string, p budgetParams) *budgetScope {
	s := b.scopes.Get(scope)
	if s == nil {
		s = b.scopes.Add(scope, orDefault(b.MaxScopes, DefaultMaxScopes))
		s.start = now
	}
	s.advance(now, p.slice)
	return s
}

// RequestAt counts, as of now, a request to scope: it adds Ratio to the
// retries the scope's budget allows for the next Window.
func (b *Budget) RequestAt(now time.Time, scope string) {
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopeLocked(now, scope, p)
	s.requests[s.head]++
}

// Request is RequestAt at b.Now(), or the wall clock if b.Now is nil. It
// is what the transport calls before each request's first attempt.
func (b *Budget) Request(scope string) { b.RequestAt(b.now(), scope) }

// AcquireAt grants, as of now, a retry to scope after an outcome of kind
// k if the scope's budget allows one more, and counts it: cost 1 and no
// wait. With ok false nothing was counted and the retry must not happen:
// the budget is spent, or k is not retryable (Success, Fatal). The
// transport then stops with [ErrOverBudget].
func (b *Budget) AcquireAt(now time.Time, scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	switch k {
	case classify.Transient, classify.Timeout, classify.Throttle:
	default:
		return 0, 0, false
	}
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopeLocked(now, scope, p)
	if s.left(p) < 1 {
		return 0, 0, false
	}
	s.retries[s.head]++
	return 1, 0, true
}

// Acquire is AcquireAt at b.Now(), or the wall clock if b.Now is nil.
func (b *Budget) Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	return b.AcquireAt(b.now(), scope, k)
}

// Refund does nothing: a retry the budget granted and that was sent
// counts whether it succeeded or not (see Budget).
func (b *Budget) Refund(scope string, cost int) {}

// CancelAt gives back, as of now, cost retries that scope's budget granted
// and that were not sent after all, from the most recent slices that
// counted any.
func (b *Budget) CancelAt(now time.Time, scope string, cost int) {
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes.Peek(scope)
	if s == nil {
		return
	}
	s.advance(now, p.slice)
	for i := 0; i < budgetSlots && cost > 0; i++ {
		k := (s.head - i + budgetSlots) % budgetSlots
		n := min(s.retries[k], float64(cost))
		s.retries[k] -= n
		cost -= int(n)
	}
}

// Cancel is CancelAt at b.Now(), or the wall clock if b.Now is nil. The
// transport calls it for a retry or hedge it paid for and did not send.
func (b *Budget) Cancel(scope string, cost int) { b.CancelAt(b.now(), scope, cost) }

// Success does nothing: requests are counted by Request, successful or
// not.
func (b *Budget) Success(scope string) {}

// LevelAt returns how many more retries scope's budget allows as of now:
// the larger of the floor and Ratio of the window's requests, less its
// retries, and no more than the current tenth of the window allows.
func (b *Budget) LevelAt(now time.Time, scope string) float64 {
	p := b.params()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes.Peek(scope)
	if s == nil {
		return p.floor / budgetSlots
	}
	c := *s // a copy, so that looking changes nothing
	c.advance(now, p.slice)
	return c.left(p)
}

// Level is LevelAt at b.Now(), or the wall clock if b.Now is nil.
func (b *Budget) Level(scope string) float64 { return b.LevelAt(b.now(), scope) }

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}
