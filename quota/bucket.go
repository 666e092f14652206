package quota

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/secs"
)

// The defaults of a [Bucket], from docs/aws.md. Counts are tokens.
const (
	DefaultCapacity         = 500 // bucket size (maxCapacity)
	DefaultRetryCost        = 5   // a retry after a Transient outcome (retryCost)
	DefaultTimeoutCost      = 10  // a retry after a Timeout or Throttle outcome (timeoutRetryCost)
	DefaultSuccessIncrement = 1   // added when a first attempt succeeds (initialTrySuccessIncrement)
)

// DefaultMaxScopes is the most scopes a [Bucket] or a [Budget] stores at
// once when its MaxScopes is zero.
const DefaultMaxScopes = 10000

// ErrExceeded records that a policy's retry quota (its Quota, usually a
// [Bucket]) refused a retry: the bucket of the scope could not pay. The
// transport returns it, wrapped, as the reason it stopped retrying; match
// it with errors.Is. A refusal by the policy's Budget is [ErrOverBudget]
// instead. [Bucket.AcquireAt] itself reports a refusal with ok false,
// not an error.
var ErrExceeded = errors.New("quota: retry quota exceeded")

// Bucket is a retry quota: one token bucket per scope that a client pays
// from before each retry, so that it stops retrying when most of its
// attempts fail. It is AWS standard mode's circuit breaker (docs/aws.md).
//
// Each bucket holds up to Capacity tokens and starts full. A retry after a
// Transient outcome costs RetryCost tokens, a retry after a Timeout or
// Throttle outcome costs TimeoutCost. A first attempt that succeeds adds
// SuccessIncrement, and a retry that succeeds gets its own cost back, never
// above Capacity. With RefillPerSecond set, a bucket also regains that many
// tokens per second of elapsed time. First attempts cost nothing, so the
// quota never delays or refuses them.
//
// When a bucket cannot pay, the Wait field picks one of two behaviours.
// Without Wait (the default, the SDKs' circuit-breaker mode) AcquireAt
// refuses at once and takes nothing: the caller returns its last failure,
// with [ErrExceeded] as the reason, without another attempt. With Wait,
// like rate.Limiter's Reserve, AcquireAt takes the cost anyway, so the bucket
// goes below zero, and reports how long the refill needs to repay the
// deficit; the caller waits that long or, if it gives up, hands the cost back
// with RefundAt. A deficit is repaid only by refill, so Wait without
// RefillPerSecond behaves as the circuit breaker.
//
// # Defaults (docs/aws.md)
//
//	field             zero means   the SDKs' name
//	Capacity          500 tokens   maxCapacity
//	RetryCost         5 tokens     retryCost
//	TimeoutCost       10 tokens    timeoutRetryCost
//	SuccessIncrement  1 token      initialTrySuccessIncrement
//	RefillPerSecond   no refill    refillUnitsPerSecond = 0
//	Wait              false        useCircuitBreakerMode = true
//
// # A worked sequence
//
// With the defaults, a healthy client's buckets stay at 500. During an outage
// of host A, each failing request pays 5 tokens per retry (10 after a timeout
// or a throttle) and a final failure gives nothing back, so after 100 retries
// after transient outcomes A's bucket is empty and every later retry to A is
// refused at once. Retries to host B, another scope, still draw on B's full
// bucket: an outage of one host does not stop retries to another. Once A
// recovers, each first-attempt success adds 1, each successful retry refunds
// its 5, and A's bucket fills again.
//
// # Memory and concurrency
//
// Only buckets below Capacity are stored: one that is full again equals a
// fresh one and is dropped. A healthy client stores nothing, and SuccessAt
// and RefundAt then cost one atomic load and no allocation. At most MaxScopes
// buckets are stored; a new scope beyond that first drops every bucket that
// has refilled to Capacity or, if none has, the one with the most tokens.
// An evicted scope starts full again when next charged: that leniency is the
// price of bounded memory, and only this overflow path scans the buckets.
//
// A negative int field, or a negative or NaN RefillPerSecond, is treated as
// zero. The zero value is ready to use with the defaults above. A Bucket is
// safe for concurrent use; it never sleeps and holds its mutex only for
// arithmetic. It must not be copied, nor its fields changed, after first
// use. Two transports share retry capacity only if given the same *Bucket.
type Bucket struct {
	Capacity         int              // bucket size, tokens; zero means DefaultCapacity
	RetryCost        int              // tokens a retry after Transient costs; zero means DefaultRetryCost
	TimeoutCost      int              // tokens a retry after Timeout (and Throttle, unless ThrottleCost is set) costs; zero means DefaultTimeoutCost
	ThrottleCost     int              // tokens a retry after Throttle costs; zero means TimeoutCost (the newer SDKs of docs/aws.md: 5, with RetryCost 14)
	SuccessIncrement int              // tokens a first-attempt success adds; zero means DefaultSuccessIncrement
	RefillPerSecond  float64          // tokens regained per second of elapsed time; zero means none (only successes refill)
	Wait             bool             // take the cost when short and report the wait, instead of refusing; needs RefillPerSecond > 0
	MaxScopes        int              // most scopes stored at once; zero means DefaultMaxScopes
	Now              func() time.Time // clock of the methods without an At suffix; nil means time.Now

	mu      sync.Mutex
	buckets map[string]*scopeBucket // guarded by mu; holds only buckets below capacity
	tracked atomic.Int64            // len(buckets), readable without mu
}

// scopeBucket is one scope's tokens, guarded by its Bucket's mutex.
type scopeBucket struct {
	tokens float64   // below capacity; negative only in Wait mode
	last   time.Time // instant refill was computed to; never moves backwards
}

// refill adds the tokens earned from s.last to now, up to capacity. A clock
// going backwards adds nothing and leaves s.last, so no interval pays twice.
func (s *scopeBucket) refill(now time.Time, rate, capacity float64) {
	if !now.After(s.last) {
		return
	}
	if rate > 0 {
		s.tokens = math.Min(s.tokens+now.Sub(s.last).Seconds()*rate, capacity)
	}
	s.last = now
}

// AcquireAt takes from scope's bucket, as of now, the cost of a retry after
// an outcome of kind k: RetryCost after Transient, TimeoutCost after
// Timeout, ThrottleCost (by default TimeoutCost) after Throttle. It returns
// the tokens taken, to pass to RefundAt if the retry succeeds, and how long
// to wait before the retry: zero unless Wait is in effect and the bucket
// was short. With ok false nothing was taken and the retry must not happen:
// the bucket could not pay in circuit-breaker mode, the cost exceeds
// Capacity, or k is not retryable (Success, Fatal).
func (b *Bucket) AcquireAt(now time.Time, scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	switch k {
	case classify.Transient:
		cost = orDefault(b.RetryCost, DefaultRetryCost)
	case classify.Timeout:
		cost = orDefault(b.TimeoutCost, DefaultTimeoutCost)
	case classify.Throttle:
		cost = orDefault(b.ThrottleCost, orDefault(b.TimeoutCost, DefaultTimeoutCost))
	default:
		return 0, 0, false
	}
	capacity, rate := b.capacity(), b.refillRate()
	if float64(cost) > capacity {
		return 0, 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, found := b.buckets[scope]
	if !found {
		// An untracked scope is full, and cost <= capacity, so it can pay.
		b.insertLocked(now, scope, &scopeBucket{tokens: capacity - float64(cost), last: now})
		return cost, 0, true
	}
	s.refill(now, rate, capacity)
	if s.tokens >= float64(cost) {
		s.tokens -= float64(cost)
		return cost, 0, true
	}
	if !b.Wait || rate == 0 {
		return 0, 0, false
	}
	s.tokens -= float64(cost)
	return cost, secs.Ceil(-s.tokens / rate), true
}

// Acquire is AcquireAt at b.Now(), or the wall clock if b.Now is nil.
func (b *Bucket) Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	return b.AcquireAt(b.now(), scope, k)
}

// RefundAt gives cost tokens back to scope's bucket as of now, never above
// Capacity, after the retry that cost them succeeded or its wait was
// abandoned. A cost <= 0 does nothing, and so does any call while no bucket
// is below capacity, after one atomic load.
func (b *Bucket) RefundAt(now time.Time, scope string, cost int) {
	if cost <= 0 || b.tracked.Load() == 0 {
		return
	}
	b.add(now, scope, float64(cost))
}

// Refund is RefundAt at b.Now(), or the wall clock if b.Now is nil.
func (b *Bucket) Refund(scope string, cost int) { b.RefundAt(b.now(), scope, cost) }

// SuccessAt records, as of now, that a first attempt to scope succeeded: it
// adds SuccessIncrement tokens to scope's bucket, never above Capacity. When
// no bucket is below capacity it returns after one atomic load, without
// locking or allocating, so a success that races with the first AcquireAt
// of an outage on another goroutine may go unrecorded; that costs at most
// one increment and is harmless.
func (b *Bucket) SuccessAt(now time.Time, scope string) {
	if b.tracked.Load() == 0 {
		return
	}
	b.add(now, scope, float64(orDefault(b.SuccessIncrement, DefaultSuccessIncrement)))
}

// Success is SuccessAt at b.Now(), or the wall clock if b.Now is nil. When
// no bucket is below capacity it reads no clock.
func (b *Bucket) Success(scope string) {
	if b.tracked.Load() == 0 {
		return
	}
	b.SuccessAt(b.now(), scope)
}

// add puts n tokens into scope's bucket as of now, dropping it once full.
func (b *Bucket) add(now time.Time, scope string, n float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, found := b.buckets[scope]
	if !found {
		return
	}
	capacity := b.capacity()
	s.refill(now, b.refillRate(), capacity)
	s.tokens += n
	if s.tokens >= capacity {
		delete(b.buckets, scope)
		b.tracked.Store(int64(len(b.buckets)))
	}
}

// LevelAt returns the tokens in scope's bucket as of now, refill included:
// Capacity for a scope that is not charged (or was evicted), and possibly
// less than zero in Wait mode, while retries wait for the refill.
func (b *Bucket) LevelAt(now time.Time, scope string) float64 {
	capacity := b.capacity()
	b.mu.Lock()
	defer b.mu.Unlock()
	s, found := b.buckets[scope]
	if !found {
		return capacity
	}
	c := *s
	c.refill(now, b.refillRate(), capacity)
	return c.tokens
}

// Level is LevelAt at b.Now(), or the wall clock if b.Now is nil. When no
// bucket is below capacity it reads no clock and takes no lock.
func (b *Bucket) Level(scope string) float64 {
	if b.tracked.Load() == 0 {
		return b.capacity()
	}
	return b.LevelAt(b.now(), scope)
}

// insertLocked stores s for scope, evicting first if the map is full. The
// caller holds b.mu.
func (b *Bucket) insertLocked(now time.Time, scope string, s *scopeBucket) {
	if b.buckets == nil {
		b.buckets = make(map[string]*scopeBucket)
	}
	for len(b.buckets) > 0 && len(b.buckets) >= b.maxScopes() {
		b.evictLocked(now)
	}
	b.buckets[scope] = s
	b.tracked.Store(int64(len(b.buckets)))
}

// evictLocked drops at least one bucket: every bucket that has refilled to
// capacity, which equals a fresh one, or else the sixteenth of them holding
// the most tokens, whose loss forgives the fewest. Dropping a sixteenth at a
// time means a stream of new scopes pays for one O(n log n) pass per n/16
// insertions, not a scan per insertion. The caller holds b.mu and the map
// is not empty.
func (b *Bucket) evictLocked(now time.Time) {
	capacity, rate := b.capacity(), b.refillRate()
	levels := make([]float64, 0, len(b.buckets))
	dropped := false
	for scope, s := range b.buckets {
		s.refill(now, rate, capacity)
		if s.tokens >= capacity {
			delete(b.buckets, scope)
			dropped = true
		} else {
			levels = append(levels, s.tokens)
		}
	}
	if dropped {
		return
	}
	slices.Sort(levels)
	k := max(1, len(levels)/16)
	threshold := levels[len(levels)-k]
	for scope, s := range b.buckets {
		if k == 0 {
			break
		}
		if s.tokens >= threshold {
			delete(b.buckets, scope)
			k--
		}
	}
}

func (b *Bucket) capacity() float64 { return float64(orDefault(b.Capacity, DefaultCapacity)) }
func (b *Bucket) maxScopes() int    { return orDefault(b.MaxScopes, DefaultMaxScopes) }

// refillRate returns RefillPerSecond, or 0 if it is negative or NaN.
func (b *Bucket) refillRate() float64 {
	if b.RefillPerSecond > 0 {
		return b.RefillPerSecond
	}
	return 0
}

func (b *Bucket) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}
