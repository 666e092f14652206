package redisretry_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// TestQuotaFallbackKeepsSharedView checks that replicas which drained the
// shared bucket in an outage go on refusing when Redis dies too: each
// decides from its last view of the bucket, not from a full quota of its
// own. With each replica's own Local deciding, they would have 250 tokens
// each left, 50 more retries apiece.
func TestQuotaFallbackKeepsSharedView(t *testing.T) {
	srv := startRedis(t)
	prefix := uniquePrefix(t)
	var qs []*redisretry.Quota
	for range 2 {
		qs = append(qs, (&redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 100 * time.Millisecond}).Quota(nil))
	}
	taken := 0
	for i := 0; ; i++ { // the replicas take turns until the bucket refuses
		if _, _, ok := qs[i%2].Acquire(scope, classify.Transient); !ok {
			break
		}
		taken++
	}
	if taken != 100 {
		t.Fatalf("the fleet took %d retries from the shared quota; want 100", taken)
	}
	srv.Kill()
	for i, q := range qs {
		for range 5 {
			if _, _, ok := q.Acquire(scope, classify.Transient); ok {
				t.Fatalf("replica %d took a retry with Redis down after the shared bucket was drained", i)
			}
		}
		if n := q.Fallbacks(scope); n != 5 {
			t.Errorf("replica %d: Fallbacks = %d; want 5", i, n)
		}
		if l := q.Level(scope); l != 0 {
			t.Errorf("replica %d: Level with Redis down = %v; want 0, the last shared level", i, l)
		}
	}
}

// TestQuotaFallbackSpendsOnlyWhatWasLeft checks that a replica falling
// back spends at most the level of its last answer.
func TestQuotaFallbackSpendsOnlyWhatWasLeft(t *testing.T) {
	srv := startRedis(t)
	q := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: 100 * time.Millisecond}).Quota(&quota.Bucket{Capacity: 20})
	q.Acquire(scope, classify.Transient) // 15 left
	srv.Kill()
	got := 0
	for range 10 {
		if _, _, ok := q.Acquire(scope, classify.Transient); ok {
			got++
		}
	}
	if got != 3 {
		t.Errorf("retries taken from a view of 15 tokens at 5 each with Redis down = %d; want 3", got)
	}
}

// TestSlowCallSendsLaterCallsLocalUntilBackoff checks that one call that
// misses the deadline opens the circuit: the calls after it decide locally
// without asking Redis until Backoff has passed, so that a request that
// has waited on Redis once does not wait again; then one call probes, and
// Redis's answer closes the circuit. The Store's clock moves only when the
// test says.
func TestSlowCallSendsLaterCallsLocalUntilBackoff(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, &redis.Options{ReadTimeout: 5 * time.Second})
	clock := faketime.New()
	const timeout = 20 * time.Millisecond
	s := &redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: timeout, Now: clock.Now}
	q := s.Quota(nil)
	q.Acquire(scope, classify.Transient) // connects
	if err := adm.ClientPause(context.Background(), 150*time.Millisecond).Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	q.Acquire(scope, classify.Transient) // waits out the Timeout
	pollUntil(t, 5*time.Second, "the pause ends", func() bool { return adm.Ping(context.Background()).Err() == nil })
	resetStats(t, adm)
	clock.Advance(redisretry.DefaultBackoff - time.Nanosecond)
	for range 3 {
		q.Acquire(scope, classify.Transient)
	}
	if n := q.Fallbacks(scope); n != 4 {
		t.Errorf("Fallbacks after a slow call and 3 more within Backoff = %d; want 4 (the circuit opened)", n)
	}
	if n := scriptCalls(t, adm); n != 0 {
		t.Errorf("Redis ran %d scripts within Backoff of a slow call; want 0", n)
	}
	clock.Advance(time.Nanosecond)
	for range 2 {
		q.Acquire(scope, classify.Transient) // the probe, then a call on the closed circuit
	}
	if n := q.Fallbacks(scope); n != 4 {
		t.Errorf("Fallbacks after Backoff = %d; want still 4 (the probe closed the circuit)", n)
	}
	if n := scriptCalls(t, adm); n != 2 {
		t.Errorf("Redis ran %d scripts after Backoff; want 2", n)
	}
}

// TestQuotaRepaysOwedAfterSlowCall checks that the tokens a replica owes
// survive a call that misses the deadline: the next call that Redis
// answers, the probe after Backoff, pays them, so no success or refund is
// lost to a slow Redis (and charges the retry the slow call took locally).
func TestQuotaRepaysOwedAfterSlowCall(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, &redis.Options{ReadTimeout: 5 * time.Second})
	clock := faketime.New() // still: successes stay owed, never flushed
	q := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: 20 * time.Millisecond, Now: clock.Now}).Quota(&quota.Bucket{Capacity: 20})
	if _, _, ok := q.Acquire(scope, classify.Transient); !ok { // 15 left
		t.Fatal("Acquire refused on a full bucket")
	}
	for range 3 {
		q.Success(scope) // 3 owed
	}
	if err := adm.ClientPause(context.Background(), 150*time.Millisecond).Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	q.Acquire(scope, classify.Transient) // times out: taken from the view, the 3 still owed
	pollUntil(t, 5*time.Second, "the pause ends", func() bool { return adm.Ping(context.Background()).Err() == nil })
	clock.Advance(redisretry.DefaultBackoff) // the circuit the slow call opened: probe
	if n := q.Fallbacks(scope); n != 1 {
		t.Fatalf("Fallbacks after one slow call = %d; want 1", n)
	}
	if _, _, ok := q.Acquire(scope, classify.Transient); !ok {
		t.Fatal("Acquire refused once Redis answered again")
	}
	// The retry taken locally during the slow call is charged too.
	if got, want := q.Level(scope), 15.0+3-5-5; got != want {
		t.Errorf("Level after 15 tokens, 3 owed and a retry at 5 taken through a slow call, then a retry at 5 = %v; want %v", got, want)
	}
}

// TestQuotaChargesLocalRetriesWhenRedisAnswers checks that the retries a
// replica takes from its view of the shared bucket while Redis does not
// answer are charged to the bucket once it answers again, so that the
// fleet spends one bucket across the fallback, not one bucket plus what
// each replica took from its view meanwhile.
func TestQuotaChargesLocalRetriesWhenRedisAnswers(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, &redis.Options{ReadTimeout: 5 * time.Second})
	clock := faketime.New()
	prefix := uniquePrefix(t)
	replica := func() *redisretry.Quota {
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 20 * time.Millisecond, Now: clock.Now}
		return s.Quota(&quota.Bucket{Capacity: 20, Now: clock.Now})
	}
	a, b := replica(), replica()
	if _, _, ok := a.Acquire(scope, classify.Transient); !ok { // 15 left
		t.Fatal("a.Acquire refused on a full bucket")
	}
	if err := adm.ClientPause(context.Background(), 150*time.Millisecond).Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	for i := range 2 { // from a's view: 15, then 10
		if _, _, ok := a.Acquire(scope, classify.Transient); !ok {
			t.Fatalf("a.Acquire %d with Redis paused refused; want taken from its view of 15 tokens", i+1)
		}
	}
	pollUntil(t, 5*time.Second, "the pause ends", func() bool { return adm.Ping(context.Background()).Err() == nil })
	if n := a.Fallbacks(scope); n != 2 {
		t.Fatalf("a.Fallbacks with Redis paused = %d; want 2", n)
	}
	clock.Advance(redisretry.DefaultBackoff) // past any open circuit

	// b takes 5 of the 15 in Redis; a's next call charges its 10, which
	// empties the bucket: the fleet has had its 20 tokens.
	if _, _, ok := b.Acquire(scope, classify.Transient); !ok {
		t.Fatal("b.Acquire refused on a bucket of 15 in Redis")
	}
	if _, _, ok := a.Acquire(scope, classify.Transient); ok {
		t.Error("a.Acquire allowed after a took 10 of 20 tokens locally and b 5 from Redis; want refused (its 10 charged)")
	}
	if _, _, ok := b.Acquire(scope, classify.Transient); ok {
		t.Error("b.Acquire allowed after the fleet took 20 tokens of 20; want refused")
	}
	if got := a.Level(scope); got != 0 {
		t.Errorf("a.Level after the fleet took 20 tokens of 20 = %v; want 0", got)
	}
}

// TestQuotaChargesLocalDecisionsWhenRedisAnswers checks that the retries
// Local allows for a scope that Redis has not answered for yet, so with no
// view of the shared bucket, are charged to the bucket too once Redis
// answers again.
func TestQuotaChargesLocalDecisionsWhenRedisAnswers(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, &redis.Options{ReadTimeout: 5 * time.Second})
	clock := faketime.New()
	prefix := uniquePrefix(t)
	replica := func() *redisretry.Quota {
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 20 * time.Millisecond, Now: clock.Now}
		return s.Quota(&quota.Bucket{Capacity: 20, Now: clock.Now})
	}
	a, b := replica(), replica()
	a.Acquire("warm.example.com", classify.Transient) // connects and loads the script
	if err := adm.ClientPause(context.Background(), 150*time.Millisecond).Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	for i := range 2 { // from Local: 15, then 10
		if _, _, ok := a.Acquire(scope, classify.Transient); !ok {
			t.Fatalf("a.Acquire %d with Redis paused refused; want allowed by Local", i+1)
		}
	}
	pollUntil(t, 5*time.Second, "the pause ends", func() bool { return adm.Ping(context.Background()).Err() == nil })
	if n := a.Fallbacks(scope); n != 2 {
		t.Fatalf("a.Fallbacks with Redis paused = %d; want 2", n)
	}
	clock.Advance(redisretry.DefaultBackoff) // past the open circuit

	// b takes 5 of 20; a's next call charges Local's 10 and takes 5 more.
	if _, _, ok := b.Acquire(scope, classify.Transient); !ok {
		t.Fatal("b.Acquire refused on a full bucket in Redis")
	}
	if _, _, ok := a.Acquire(scope, classify.Transient); !ok {
		t.Fatal("a.Acquire refused on a bucket of 15 in Redis, 10 owed; want allowed")
	}
	if got := a.Level(scope); got != 0 {
		t.Errorf("a.Level after the fleet took 20 tokens of 20, 10 of them by Local = %v; want 0", got)
	}
	if _, _, ok := b.Acquire(scope, classify.Transient); ok {
		t.Error("b.Acquire allowed after the fleet took 20 tokens of 20; want refused")
	}
}
