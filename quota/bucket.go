package quota

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// The retry quota's defaults, from docs/aws.md. Counts are tokens.
const (
	DefaultQuotaCapacity    = 500   // bucket size (maxCapacity)
	DefaultRetryCost        = 5     // a retry after a Transient outcome (retryCost)
	DefaultTimeoutCost      = 10    // a retry after a Timeout or Throttle outcome (timeoutRetryCost)
	DefaultSuccessIncrement = 1     // added when a first attempt succeeds (initialTrySuccessIncrement)
	DefaultMaxScopes        = 10000 // most scopes a Quota stores at once
)

// ErrQuotaExceeded records that a retry quota refused a retry: the bucket of
// the request's scope could not pay. The transport returns it, wrapped, as the
// reason it stopped retrying; match it with errors.Is. [Quota.AcquireAt]
// itself reports a refusal with ok false, not an error.
var ErrQuotaExceeded = errors.New("ratelimit: retry quota exceeded")

// Quota is a retry quota: one token bucket per scope that a client pays from
// before each retry, so that it stops retrying when most of its attempts
// fail. It is AWS standard mode's circuit breaker (docs/aws.md).
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
// with [ErrQuotaExceeded] as the reason, without another attempt. With Wait,
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
// zero. The zero value is ready to use with the defaults above. A Quota is
// safe for concurrent use; it never sleeps and holds its mutex only for
// arithmetic. It must not be copied, nor its fields changed, after first
// use. Two transports share retry capacity only if given the same *Quota.
type Quota struct {
	Capacity         int              // bucket size, tokens; zero means DefaultQuotaCapacity
	RetryCost        int              // tokens a retry after Transient costs; zero means DefaultRetryCost
	TimeoutCost      int              // tokens a retry after Timeout (and Throttle, unless ThrottleCost is set) costs; zero means DefaultTimeoutCost
	ThrottleCost     int              // tokens a retry after Throttle costs; zero means TimeoutCost (the newer SDKs of docs/aws.md: 5, with RetryCost 14)
	SuccessIncrement int              // tokens a first-attempt success adds; zero means DefaultSuccessIncrement
	RefillPerSecond  float64          // tokens regained per second of elapsed time; zero means none (only successes refill)
	Wait             bool             // take the cost when short and report the wait, instead of refusing; needs RefillPerSecond > 0
	MaxScopes        int              // most scopes stored at once; zero means DefaultMaxScopes
	Now              func() time.Time // clock of the methods without an At suffix; nil means time.Now

	mu      sync.Mutex
	buckets map[string]*bucket // guarded by mu; holds only buckets below capacity
	tracked atomic.Int64       // len(buckets), readable without mu
}

// bucket is one scope's tokens, guarded by its Quota's mutex.
type bucket struct {
	tokens float64   // below capacity; negative only in Wait mode
	last   time.Time // instant refill was computed to; never moves backwards
}

// refill adds the tokens earned from b.last to now, up to capacity. A clock
// going backwards adds nothing and leaves b.last, so no interval pays twice.
func (b *bucket) refill(now time.Time, rate, capacity float64) {
	if !now.After(b.last) {
		return
	}
	if rate > 0 {
		b.tokens = math.Min(b.tokens+now.Sub(b.last).Seconds()*rate, capacity)
	}
	b.last = now
}

// AcquireAt takes from scope's bucket, as of now, the cost of a retry after
// an outcome of kind k: RetryCost after Transient, TimeoutCost after Timeout,
// ThrottleCost (by default TimeoutCost) after Throttle. It returns the tokens taken, to pass to RefundAt if the retry
// succeeds, and how long to wait before the retry: zero unless Wait is in
// effect and the bucket was short. With ok false nothing was taken and the
// retry must not happen: the bucket could not pay in circuit-breaker mode,
// the cost exceeds Capacity, or k is not retryable (Success, Fatal).
func (q *Quota) AcquireAt(now time.Time, scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	switch k {
	case classify.Transient:
		cost = orDefault(q.RetryCost, DefaultRetryCost)
	case classify.Timeout:
		cost = orDefault(q.TimeoutCost, DefaultTimeoutCost)
	case classify.Throttle:
		cost = orDefault(q.ThrottleCost, orDefault(q.TimeoutCost, DefaultTimeoutCost))
	default:
		return 0, 0, false
	}
	capacity, rate := q.capacity(), q.refillRate()
	if float64(cost) > capacity {
		return 0, 0, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b, found := q.buckets[scope]
	if !found {
		// An untracked scope is full, and cost <= capacity, so it can pay.
		q.insertLocked(now, scope, &bucket{tokens: capacity - float64(cost), last: now})
		return cost, 0, true
	}
	b.refill(now, rate, capacity)
	if b.tokens >= float64(cost) {
		b.tokens -= float64(cost)
		return cost, 0, true
	}
	if !q.Wait || rate == 0 {
		return 0, 0, false
	}
	b.tokens -= float64(cost)
	return cost, seconds(-b.tokens / rate), true
}

// Acquire is AcquireAt at q.Now(), or the wall clock if q.Now is nil.
func (q *Quota) Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	return q.AcquireAt(q.now(), scope, k)
}

// RefundAt gives cost tokens back to scope's bucket as of now, never above
// Capacity, after the retry that cost them succeeded or its wait was
// abandoned. A cost <= 0 does nothing, and so does any call while no bucket
// is below capacity, after one atomic load.
func (q *Quota) RefundAt(now time.Time, scope string, cost int) {
	if cost <= 0 || q.tracked.Load() == 0 {
		return
	}
	q.add(now, scope, float64(cost))
}

// Refund is RefundAt at q.Now(), or the wall clock if q.Now is nil.
func (q *Quota) Refund(scope string, cost int) { q.RefundAt(q.now(), scope, cost) }

// SuccessAt records, as of now, that a first attempt to scope succeeded: it
// adds SuccessIncrement tokens to scope's bucket, never above Capacity. When
// no bucket is below capacity it returns after one atomic load, without
// locking or allocating, so a success that races with the first AcquireAt
// of an outage on another goroutine may go unrecorded; that costs at most
// one increment and is harmless.
func (q *Quota) SuccessAt(now time.Time, scope string) {
	if q.tracked.Load() == 0 {
		return
	}
	q.add(now, scope, float64(orDefault(q.SuccessIncrement, DefaultSuccessIncrement)))
}

// Success is SuccessAt at q.Now(), or the wall clock if q.Now is nil. When
// no bucket is below capacity it reads no clock.
func (q *Quota) Success(scope string) {
	if q.tracked.Load() == 0 {
		return
	}
	q.SuccessAt(q.now(), scope)
}

// add puts n tokens into scope's bucket as of now, dropping it once full.
func (q *Quota) add(now time.Time, scope string, n float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, found := q.buckets[scope]
	if !found {
		return
	}
	capacity := q.capacity()
	b.refill(now, q.refillRate(), capacity)
	b.tokens += n
	if b.tokens >= capacity {
		delete(q.buckets, scope)
		q.tracked.Store(int64(len(q.buckets)))
	}
}

// LevelAt returns the tokens in scope's bucket as of now, refill included:
// Capacity for a scope that is not charged (or was evicted), and possibly
// less than zero in Wait mode, while retries wait for the refill.
func (q *Quota) LevelAt(now time.Time, scope string) float64 {
	capacity := q.capacity()
	q.mu.Lock()
	defer q.mu.Unlock()
	b, found := q.buckets[scope]
	if !found {
		return capacity
	}
	c := *b
	c.refill(now, q.refillRate(), capacity)
	return c.tokens
}

// Level is LevelAt at q.Now(), or the wall clock if q.Now is nil. When no
// bucket is below capacity it reads no clock and takes no lock.
func (q *Quota) Level(scope string) float64 {
	if q.tracked.Load() == 0 {
		return q.capacity()
	}
	return q.LevelAt(q.now(), scope)
}

// insertLocked stores b for scope, evicting first if the map is full. The
// caller holds q.mu.
func (q *Quota) insertLocked(now time.Time, scope string, b *bucket) {
	if q.buckets == nil {
		q.buckets = make(map[string]*bucket)
	}
	for len(q.buckets) > 0 && len(q.buckets) >= q.maxScopes() {
		q.evictLocked(now)
	}
	q.buckets[scope] = b
	q.tracked.Store(int64(len(q.buckets)))
}

// evictLocked drops at least one bucket: every bucket that has refilled to
// capacity, which equals a fresh one, or else the sixteenth of them holding
// the most tokens, whose loss forgives the fewest. Dropping a sixteenth at a
// time means a stream of new scopes pays for one O(n log n) pass per n/16
// insertions, not a scan per insertion. The caller holds q.mu and the map
// is not empty.
func (q *Quota) evictLocked(now time.Time) {
	capacity, rate := q.capacity(), q.refillRate()
	levels := make([]float64, 0, len(q.buckets))
	dropped := false
	for scope, b := range q.buckets {
		b.refill(now, rate, capacity)
		if b.tokens >= capacity {
			delete(q.buckets, scope)
			dropped = true
		} else {
			levels = append(levels, b.tokens)
		}
	}
	if dropped {
		return
	}
	slices.Sort(levels)
	k := max(1, len(levels)/16)
	threshold := levels[len(levels)-k]
	for scope, b := range q.buckets {
		if k == 0 {
			break
		}
		if b.tokens >= threshold {
			delete(q.buckets, scope)
			k--
		}
	}
}

func (q *Quota) capacity() float64 { return float64(orDefault(q.Capacity, DefaultQuotaCapacity)) }
func (q *Quota) maxScopes() int    { return orDefault(q.MaxScopes, DefaultMaxScopes) }

// refillRate returns RefillPerSecond, or 0 if it is negative or NaN.
func (q *Quota) refillRate() float64 {
	if q.RefillPerSecond > 0 {
		return q.RefillPerSecond
	}
	return 0
}

func (q *Quota) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// orDefault returns v, or def when v is zero or negative.
func orDefault(v, def int) int { return cmp.Or(max(v, 0), def) }

// seconds converts s >= 0 seconds to a Duration, rounded up so that waiting
// it out repays the whole deficit, and saturated at the largest Duration.
func seconds(s float64) time.Duration {
	if ns := math.Ceil(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}

// roundSeconds converts s >= 0 seconds to the nearest Duration, saturated
// at the largest Duration.
func roundSeconds(s float64) time.Duration {
	if ns := math.Round(s * float64(time.Second)); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}
