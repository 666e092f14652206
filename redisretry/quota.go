package redisretry

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
)

// The Quota's defaults.
const (
	// DefaultQuotaFlush is how often a replica pays the tokens it owes a
	// bucket: the successes and refunds it has recorded since.
	DefaultQuotaFlush = 100 * time.Millisecond
	// DefaultQuotaRefresh is how long a replica believes an answer that a
	// bucket is full, dropping its successes meanwhile.
	DefaultQuotaRefresh = time.Second
)

//go:embed quota.lua
var quotaSource string

var quotaScript = redis.NewScript(quotaSource)

// Quota is a retry quota ([quota.Quota]) whose buckets live in
// Redis, so that a fleet of replicas shares one bucket per scope: during
// an outage the whole fleet stops retrying after one bucket's worth of
// retries, however many replicas there are. Its arithmetic is
// quota.Bucket's, parameters included (Capacity, the costs,
// SuccessIncrement, RefillPerSecond, Wait), read from Local; a full bucket
// is not stored. Like a Bucket's, its refusals are [quota.ErrExceeded].
// Quota implements [ratelimit.FallbackCounter].
//
// # Round trips
//
// Acquire, called before each retry, is one round trip: a Lua script that
// adds the tokens the replica owes, refills the bucket from the elapsed
// time and takes the retry's cost, atomically. Success and Refund, called
// on the happy path, make no round trip of their own as a rule: the tokens
// they add are owed, kept in the replica, and paid by the next Acquire of
// the scope or, once Flush has passed since the last payment, by the
// Success or Refund itself (one round trip, within the Store's Timeout).
// When the last answer said the bucket was full, less than Refresh ago, a
// Success or Refund adds nothing, as it would add nothing to a full
// bucket. So a healthy replica makes one round trip per scope per Refresh
// (1 s), and one retrying during an outage at most one per Acquire plus
// one per Flush (100 ms). Level makes none: it returns the level of the
// last answer, refilled to now, plus what is owed, capped at Capacity.
//
// # A worked sequence
//
// With the defaults, four replicas call a host that fails. Each retry of
// any replica pays 5 tokens from the scope's one bucket of 500, so the
// fleet makes 100 retries in all, where four quota.Bucket values would
// allow 400; after that every replica's retries are refused, each after
// one round trip. Once the host recovers, each replica's successes are
// owed and paid within Flush, 1 token each, and the bucket fills again;
// once full it is deleted, and the replicas learn so within Refresh.
//
// # Time
//
// The refill is computed from the clock of the Redis server (TIME) or,
// when the Store's Now is set, from that clock, passed in microseconds to
// the script. With replicas' clocks passed, a replica whose clock is
// behind the bucket's last refill adds nothing, and one whose clock is
// ahead moves the last refill forward, so that the others add nothing
// until their clocks pass it: skew delays the refill but never pays an
// interval twice.
//
// # Failures
//
// When Redis fails (see [Store]), Acquire counts a fallback and decides
// from the replica's view of the shared bucket: the level of the last
// answer, refilled to now, plus the tokens owed, less the retries the
// replica has taken since. So a fleet whose Redis fails in the middle of
// an outage does not start over with a full quota per replica: each can
// spend at most what the bucket held when it last heard. A scope with no
// answer yet, or a quota in Wait mode, is decided by Local, to which
// every call is also applied. Owed tokens wait for Redis to answer again,
// and so do the retries decided locally: the next call that Redis answers
// pays the one and takes the other from the shared bucket, never below
// empty. So the fleet spends one bucket across a fallback, except what
// replicas deciding locally take beyond what it had left before they hear
// from Redis again.
// Level returns the same view, without a round trip. A bucket not written to
// for the Store's TTL expires and starts full again, a leniency that
// quota.Bucket does not have.
//
// A Quota is safe for concurrent use and starts no goroutine. It must not
// be copied, nor its fields changed, after first use.
type Quota struct {
	// Store is where the buckets live; nil means a Store without a
	// client, so that Local makes every decision.
	Store *Store
	// Local holds the parameters and this replica's fallback state; nil
	// means a quota.Bucket with its defaults.
	Local *quota.Bucket
	// Flush is the least time between two payments of owed tokens by
	// Success or Refund; zero means DefaultQuotaFlush (100 ms).
	Flush time.Duration
	// Refresh is how long an answer that the bucket is full is believed;
	// zero means DefaultQuotaRefresh (1 s).
	Refresh time.Duration

	defOnce  sync.Once
	defLocal *quota.Bucket

	mu     sync.Mutex
	scopes map[string]*quotaScope // guarded by mu

	fb   fallbacks
	none noStore
}

// quotaScope is what a replica knows of one scope's bucket, guarded by
// its Quota's mutex.
type quotaScope struct {
	level    float64   // tokens at the last answer
	full     bool      // the last answer said the bucket was full
	at       time.Time // when that answer came; zero if none yet
	owed     float64   // tokens added here and not yet paid to Redis
	spent    float64   // tokens of retries taken here while Redis did not answer, not yet charged to it
	paid     time.Time // when owed tokens were last taken out to be paid
	flushing bool      // a Success or Refund is paying them
}

// quotaParams are a quota.Bucket's parameters with defaults resolved.
type quotaParams struct {
	capacity, rate           float64
	retry, timeout, throttle int
	wait                     bool
}

func paramsOf(l *quota.Bucket) quotaParams {
	p := quotaParams{
		capacity: float64(orDefault(l.Capacity, quota.DefaultCapacity)),
		retry:    orDefault(l.RetryCost, quota.DefaultRetryCost),
		timeout:  orDefault(l.TimeoutCost, quota.DefaultTimeoutCost),
		wait:     l.Wait,
	}
	p.throttle = orDefault(l.ThrottleCost, p.timeout)
	if l.RefillPerSecond > 0 {
		p.rate = l.RefillPerSecond
	}
	return p
}

// cost is the tokens a retry after k costs, or 0 if k is not retryable.
func (p *quotaParams) cost(k classify.Kind) int {
	switch k {
	case classify.Transient:
		return p.retry
	case classify.Timeout:
		return p.timeout
	case classify.Throttle:
		return p.throttle
	}
	return 0
}

// Acquire takes from scope's shared bucket the cost of a retry after an
// outcome of kind k, in one round trip, as quota.Bucket.AcquireAt does
// in process: it returns the tokens taken and, in Wait mode, how long the
// refill needs to repay a deficit. With ok false nothing was taken: the
// bucket could not pay, the cost exceeds Capacity, or k is not retryable
// (the last two without a round trip). When Redis fails, the replica's
// last view of the shared bucket decides (see Failures), or Local if it
// has none.
func (q *Quota) Acquire(scope string, k classify.Kind) (cost int, wait time.Duration, ok bool) {
	l := q.local()
	p := paramsOf(l)
	cost = p.cost(k)
	if cost == 0 || float64(cost) > p.capacity {
		return 0, 0, false
	}
	now := q.store().now()
	owed, spent := q.takeOwed(now, scope)
	taken, tokens, full, err := q.run(now, scope, &p, cost, owed, spent)
	if err != nil {
		q.repay(scope, owed, spent)
		q.store().fallback(&q.fb, scope, err)
		if ok, known := q.takeFromView(now, scope, &p, cost); known {
			if !ok {
				return 0, 0, false
			}
			l.AcquireAt(now, scope, k)
			return cost, 0, true
		}
		cost, wait, ok = l.AcquireAt(now, scope, k)
		if ok {
			q.charge(scope, cost)
		}
		return cost, wait, ok
	}
	q.answer(now, scope, tokens, full)
	if !taken {
		return 0, 0, false
	}
	l.AcquireAt(now, scope, k) // the fallback's own view of this replica's retries
	if tokens < 0 {
		wait = seconds(-tokens / p.rate)
	}
	return cost, wait, true
}

// Refund gives cost tokens back to scope's bucket, never above Capacity,
// after the retry that cost them succeeded or was not sent: they are owed,
// and paid as Quota describes. A cost <= 0 does nothing.
func (q *Quota) Refund(scope string, cost int) {
	if cost <= 0 {
		return
	}
	now := q.store().now()
	l := q.local()
	l.RefundAt(now, scope, cost)
	q.owe(now, scope, float64(cost), l)
}

// Success records that a first attempt to scope succeeded: SuccessIncrement
// tokens are owed to scope's bucket, unless the last answer, less than
// Refresh ago, said it was full. It makes a round trip only to pay what is
// owed, at most once per Flush.
func (q *Quota) Success(scope string) {
	now := q.store().now()
	l := q.local()
	l.SuccessAt(now, scope)
	q.owe(now, scope, float64(orDefault(l.SuccessIncrement, quota.DefaultSuccessIncrement)), l)
}

// Level returns the tokens in scope's bucket as best known, without a
// round trip: the level of the last answer, refilled to now, plus the
// tokens owed, less the retries decided locally since, capped at Capacity;
// Local's level if no answer came yet.
func (q *Quota) Level(scope string) float64 {
	now := q.store().now()
	l := q.local()
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.scopes[scope]
	if st == nil || st.at.IsZero() {
		return l.LevelAt(now, scope) // no answer yet: the replica's own view
	}
	p := paramsOf(l)
	return st.view(now, &p)
}

// view returns the replica's view of the bucket as of now: the level of
// the last answer, refilled to now, plus the tokens owed, capped at
// Capacity. The caller holds the Quota's mutex.
func (st *quotaScope) view(now time.Time, p *quotaParams) float64 {
	if st.full {
		return p.capacity
	}
	level := st.level
	if p.rate > 0 && now.After(st.at) {
		level = math.Min(level+now.Sub(st.at).Seconds()*p.rate, p.capacity)
	}
	return math.Min(level+st.owed, p.capacity)
}

// takeFromView decides a retry of the given cost locally, from the
// replica's view of scope's shared bucket, when Redis did not answer:
// known false if the replica has no answer for the scope yet (or the
// quota waits, which Local then decides). A retry it allows is taken from
// the view, so that the replica spends at most what the bucket held.
func (q *Quota) takeFromView(now time.Time, scope string, p *quotaParams, cost int) (ok, known bool) {
	if p.wait {
		return false, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.scopes[scope]
	if st == nil || st.at.IsZero() {
		return false, false
	}
	v := st.view(now, p)
	if v < float64(cost) {
		return false, true
	}
	// The view after is v - cost: the owed tokens stay owed to Redis, and
	// the cost is charged to it once it answers.
	st.level, st.full, st.at = v-float64(cost)-st.owed, false, now
	st.spent += float64(cost)
	return true, true
}

// charge records that a retry of the given cost was taken locally, by
// Local, while Redis did not answer: the next call that Redis answers
// takes it from the shared bucket.
func (q *Quota) charge(scope string, cost int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if st := q.scopes[scope]; st != nil {
		st.spent += float64(cost)
	}
}

// Fallbacks returns how many of scope's Acquire calls Local decided
// because Redis did not answer in time (see [Store]).
func (q *Quota) Fallbacks(scope string) uint64 { return q.fb.get(scope) }

// owe adds n tokens owed to scope's bucket and pays them if Flush has
// passed since the last payment, unless the bucket is known to be full.
func (q *Quota) owe(now time.Time, scope string, n float64, l *quota.Bucket) {
	q.mu.Lock()
	st := q.scopeLocked(scope)
	if st.full && now.Sub(st.at) < positive(q.Refresh, DefaultQuotaRefresh) {
		q.mu.Unlock()
		return
	}
	st.owed += n
	if st.flushing || now.Sub(st.paid) < positive(q.Flush, DefaultQuotaFlush) {
		q.mu.Unlock()
		return
	}
	owed, spent := st.owed, st.spent
	st.owed, st.spent, st.paid, st.flushing = 0, 0, now, true
	q.mu.Unlock()

	p := paramsOf(l)
	_, tokens, full, err := q.run(now, scope, &p, 0, owed, spent)
	q.mu.Lock()
	st.flushing = false
	q.mu.Unlock()
	if err != nil {
		q.repay(scope, owed, spent)
		q.store().failed(err, false)
		return
	}
	q.answer(now, scope, tokens, full)
}

// takeOwed takes out the tokens owed to scope's bucket and those spent
// locally, to be paid and charged by a call at now, creating the scope's
// record if needed.
func (q *Quota) takeOwed(now time.Time, scope string) (owed, spent float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.scopeLocked(scope)
	owed, spent = st.owed, st.spent
	st.owed, st.spent, st.paid = 0, 0, now
	return owed, spent
}

// repay puts back the owed and spent tokens that a failed call did not
// pay or charge.
func (q *Quota) repay(scope string, owed, spent float64) {
	if owed == 0 && spent == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if st := q.scopes[scope]; st != nil {
		st.owed += owed
		st.spent += spent
	}
}

// answer records what Redis answered at now of scope's bucket.
func (q *Quota) answer(now time.Time, scope string, tokens float64, full bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if st := q.scopes[scope]; st != nil && !now.Before(st.at) {
		st.level, st.full, st.at = tokens, full, now
	}
}

// scopeLocked returns scope's record, creating it (see record). The
// caller holds q.mu.
func (q *Quota) scopeLocked(scope string) *quotaScope {
	return record(&q.scopes, scope, q.store().maxScopes())
}

// run calls the quota script for scope at now: it adds owed, takes spent
// (never below an empty bucket), then takes cost unless cost is 0. It
// returns whether the cost was taken, the level after and whether the
// bucket is full.
func (q *Quota) run(now time.Time, scope string, p *quotaParams, cost int, owed, spent float64) (taken bool, tokens float64, full bool, err error) {
	wait := "0"
	if p.wait {
		wait = "1"
	}
	err = q.store().do(func(ctx context.Context, c redis.UniversalClient) error {
		v, err := quotaScript.Run(ctx, c, []string{q.store().key(scope, "quota")},
			q.store().clockArg(now), p.capacity, p.rate, cost, wait, owed, q.store().ttlMillis(), spent).Slice()
		if err != nil {
			return err
		}
		if len(v) != 3 {
			return fmt.Errorf("redisretry: quota script returned %d values, want 3", len(v))
		}
		s, _ := v[1].(string)
		if tokens, err = strconv.ParseFloat(s, 64); err != nil {
			return fmt.Errorf("redisretry: quota script returned level %q: %w", s, err)
		}
		taken, full = v[0] == int64(1), v[2] == int64(1)
		return nil
	})
	return taken, tokens, full, err
}

// local returns Local, or a quota.Bucket with the defaults.
func (q *Quota) local() *quota.Bucket {
	if q.Local != nil {
		return q.Local
	}
	q.defOnce.Do(func() { q.defLocal = &quota.Bucket{MaxScopes: q.store().maxScopes(), Now: q.store().Now} })
	return q.defLocal
}

// orDefault returns v, or def when v is zero or negative, as package
// quota resolves a Bucket's int fields.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// seconds converts s seconds to a Duration, as package quota converts a
// Bucket's waits: see nanos.
func seconds(s float64) time.Duration { return nanos(s * float64(time.Second)) }

// micros converts us microseconds, the scripts' unit, to a Duration: see
// nanos.
func micros(us float64) time.Duration { return nanos(us * float64(time.Microsecond)) }

// nanos converts ns nanoseconds to a Duration, rounded up so that waiting
// it out repays the whole deficit, at least 0 and saturated at the largest
// Duration.
func nanos(ns float64) time.Duration {
	if ns = math.Ceil(ns); ns < math.MaxInt64 {
		return time.Duration(max(ns, 0))
	}
	return math.MaxInt64
}

// store returns Store, or a Store without a client if Store is nil.
func (q *Quota) store() *Store { return q.none.or(q.Store) }
