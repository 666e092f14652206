package redisretry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// TestFixedFleetSharesLimit checks that replicas, each with its own Store
// and client, together send no more than the published limit: the count
// of sends in the run stays within the burst plus the rate times its
// length. redis_rate reads the server's clock, so this runs in real time.
func TestFixedFleetSharesLimit(t *testing.T) {
	srv := startRedis(t)
	prefix := uniquePrefix(t)
	limit := redis_rate.Limit{Rate: 40, Period: time.Second, Burst: 4}
	const replicas, workers = 3, 3
	start := time.Now()
	end := start.Add(time.Second)
	var mu sync.Mutex
	sends := make([]int, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		f := (&redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: time.Second}).Fixed(limit, nil)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					r, wait, ok := f.Reserve(scope)
					if !ok {
						t.Errorf("Reserve refused without FailFast or MaxWait")
						return
					}
					for wait > 0 {
						time.Sleep(wait) // the wait under test
						wait = r.Delay()
					}
					if !time.Now().Before(end) {
						return
					}
					mu.Lock()
					sends[i]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	var total int
	for i, n := range sends {
		if n == 0 {
			t.Errorf("replica %d sent nothing in 1 s; want a share", i)
		}
		total += n
	}
	// Redis allowed every send before end; the most it allows in 1 s is
	// the burst plus the rate, and the fleet keeps it busy.
	if most := limit.Burst + limit.Rate; total > most || total < limit.Rate*3/4 {
		t.Errorf("%d replicas × %d workers sent %d in 1 s at %v; want between %d and %d", replicas, workers, total, limit, limit.Rate*3/4, most)
	}
}

// TestFixedWaitsAndRefusals checks Reserve's three answers: a free token,
// a reservation due after RetryAfter, and a refusal under FailFast or
// MaxWait, which takes nothing.
func TestFixedWaitsAndRefusals(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	limit := redis_rate.PerMinute(1) // one send, then one a minute
	store := &redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: time.Second}
	f := store.Fixed(limit, nil)
	if r, wait, ok := f.Reserve(scope); r != (ratelimit.Reservation{}) || wait != 0 || !ok {
		t.Fatalf("first Reserve = %v, %v, %t; want the zero Reservation, 0, true", r, wait, ok)
	}
	for _, tt := range []struct {
		name string
		f    *redisretry.Fixed
	}{
		{"FailFast", &redisretry.Fixed{Store: store, Limit: limit, FailFast: true}},
		{"MaxWait", &redisretry.Fixed{Store: store, Limit: limit, MaxWait: time.Second}},
	} {
		if _, wait, ok := tt.f.Reserve(scope); ok || wait < 50*time.Second || wait > time.Minute {
			t.Errorf("%s: Reserve with the token taken = %v, %t; want about a minute, false", tt.name, wait, ok)
		}
	}
	r, wait, ok := f.Reserve(scope)
	if !ok || wait < 50*time.Second || wait > time.Minute {
		t.Fatalf("Reserve that must wait = %v, %t; want about a minute, true", wait, ok)
	}
	resetStats(t, adm)
	if d := r.Delay(); d <= 0 || d > wait {
		t.Errorf("Delay before the reservation is due = %v; want within (0, %v]", d, wait)
	}
	if n := scriptCalls(t, adm); n != 0 {
		t.Errorf("Delay before the reservation is due made %d script calls; want 0", n)
	}
}

// TestFixedDelayAsksRedisWhenDue checks that a reservation asks Redis again
// once due: 0 when a token is free by then.
func TestFixedDelayAsksRedisWhenDue(t *testing.T) {
	srv := startRedis(t)
	f := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: time.Second}).
		Fixed(redis_rate.Limit{Rate: 20, Period: time.Second, Burst: 1}, nil)
	f.Reserve(scope)
	r, wait, ok := f.Reserve(scope)
	if !ok || wait <= 0 || wait > 50*time.Millisecond {
		t.Fatalf("second Reserve at 20/s = %v, %t; want within (0, 50ms], true", wait, ok)
	}
	pollUntil(t, time.Second, "Delay of a reservation at 20/s returns 0", func() bool { return r.Delay() == 0 })
	// The token went to r: the next one is 50 ms away.
	if _, wait, _ := f.Reserve(scope); wait <= 0 {
		t.Errorf("Reserve right after a reservation took the token waits %v; want > 0", wait)
	}
}

// TestFixedNoLimit checks that a zero Limit lets everything go without a
// round trip.
func TestFixedNoLimit(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	f := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t)}).Fixed(redis_rate.Limit{}, nil)
	resetStats(t, adm)
	for range 100 {
		if _, wait, ok := f.Reserve(scope); wait != 0 || !ok {
			t.Fatalf("Reserve without a limit = %v, %t; want 0, true", wait, ok)
		}
	}
	if n := scriptCalls(t, adm); n != 0 {
		t.Errorf("100 Reserve calls without a limit made %d script calls; want 0", n)
	}
}

// TestFixedWaitersAskInTurn checks that one replica's waiters ask Redis one
// at a time, a token interval apart, instead of all at once whenever a
// token frees up: about one round trip per attempt, however many wait.
func TestFixedWaitersAskInTurn(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	f := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: time.Second}).
		Fixed(redis_rate.Limit{Rate: 50, Period: time.Second, Burst: 1}, nil)
	resetStats(t, adm)
	const workers = 8
	end := time.Now().Add(600 * time.Millisecond)
	var mu sync.Mutex
	var sent int
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				r, wait, _ := f.Reserve(scope)
				for wait > 0 {
					time.Sleep(wait) // the wait under test
					wait = r.Delay()
				}
				mu.Lock()
				sent++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	calls := scriptCalls(t, adm)
	t.Logf("%d round trips for %d attempts", calls, sent)
	if per := float64(calls) / float64(sent); per > 2 {
		t.Errorf("%d waiters made %d round trips for %d attempts (%.2f each); want at most 2 each", workers, calls, sent, per)
	}
}

// TestFixedQueuesBehindWaiters checks that while a replica's attempts wait
// their turns, a new one queues behind them without a round trip, a token
// interval later, and that cancelling the latest gives its turn back.
func TestFixedQueuesBehindWaiters(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New() // the turns' clock; Redis's own runs on
	f := (&redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: time.Second, Now: clock.Now}).
		Fixed(redis_rate.Limit{Rate: 10, Period: time.Second, Burst: 1}, nil)
	f.Reserve(scope) // the token
	_, w2, _ := f.Reserve(scope)
	resetStats(t, adm)
	r3, w3, _ := f.Reserve(scope)
	if w3 != w2+100*time.Millisecond {
		t.Errorf("Reserve behind a waiter of %v waits %v; want %v, a token interval more", w2, w3, w2+100*time.Millisecond)
	}
	r3.Cancel()
	if _, w4, _ := f.Reserve(scope); w4 != w3 {
		t.Errorf("Reserve after the latest waiter cancelled waits %v; want %v, its turn", w4, w3)
	}
	if n := scriptCalls(t, adm); n != 0 {
		t.Errorf("Reserve behind waiters and Cancel made %d round trips; want 0", n)
	}
}
