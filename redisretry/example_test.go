package redisretry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// exampleTimeout replaces the Store's default 5 ms in the examples, so
// that their output does not depend on how busy the machine is: a new
// client's first call, which dials, can take longer under the race
// detector, and would then be decided locally.
const exampleTimeout = time.Second

// A fleet shares its retry quota and send rate through one Redis: every
// replica builds its policy this way, with its own client. The server
// here fails once; the retry pays 5 tokens from the shared bucket, and its
// success gives them back.
func ExampleStore() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer rdb.Close()

	s := &redisretry.Store{Client: rdb, Timeout: exampleTimeout}
	p := policy.Adaptive()
	p.Quota = s.Quota(nil)
	p.Limiter = s.Adaptive(nil)
	p.Backoff = backoff.FullJitter{Base: time.Millisecond} // short waits, for the example

	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()
	t := retrytransport.New(nil, retrytransport.WithPolicy(p))
	defer t.CloseIdleConnections()
	resp, err := (&http.Client{Transport: t}).Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "after", calls.Load(), "attempts")
	for _, st := range t.Snapshot() {
		fmt.Println("quota:", st.Quota, "fallbacks:", st.Fallbacks)
	}
	// Output:
	// 200 OK after 2 attempts
	// quota: 500 fallbacks: 0
}

// Two replicas, each with its own Store and client, drain one bucket of 10
// tokens: two retries after transient failures, whichever replica makes
// them.
func ExampleQuota() {
	ctx := context.Background()
	a := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer b.Close()

	local := &quota.Bucket{Capacity: 10} // the parameters, and the fallback
	qa := &redisretry.Quota{Store: &redisretry.Store{Client: a, Prefix: "example:", Timeout: exampleTimeout}, Local: local}
	qb := &redisretry.Quota{Store: &redisretry.Store{Client: b, Prefix: "example:", Timeout: exampleTimeout}, Local: local}
	_, _, ok1 := qa.Acquire("api.example.com", classify.Transient)
	_, _, ok2 := qb.Acquire("api.example.com", classify.Transient)
	_, _, ok3 := qa.Acquire("api.example.com", classify.Transient)
	fmt.Println(ok1, ok2, ok3)
	fmt.Println("level seen by b:", qb.Level("api.example.com"))

	// The bucket's key; the scope in braces is its Cluster hash tag.
	fmt.Println(a.Del(ctx, "example:{api.example.com}:quota").Val())
	// Output:
	// true true false
	// level seen by b: 0
	// 1
}

// A throttle that one replica records limits the others: the fleet's
// attempts take their turns in one queue. The clock is fixed here, so that
// the waits are exact.
func ExampleAdaptive() {
	ctx := context.Background()
	a := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer b.Close()
	now := func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }

	local := func() *ratelimit.Adaptive { return &ratelimit.Adaptive{Beta: redisretry.DefaultBeta, MinFillRate: 10} }
	ra := &redisretry.Adaptive{Store: &redisretry.Store{Client: a, Prefix: "example:", Now: now, Timeout: exampleTimeout}, Local: local()}
	rb := &redisretry.Adaptive{Store: &redisretry.Store{Client: b, Prefix: "example:", Now: now, Timeout: exampleTimeout}, Local: local()}

	ra.Record("api.example.com", classify.Throttle) // nothing measured yet: 10 req/s
	for range 3 {
		_, wait, _ := rb.Reserve("api.example.com")
		fmt.Println("b waits", wait)
	}
	_, wait, _ := ra.Reserve("api.example.com")
	fmt.Println("a waits", wait)
	fmt.Printf("%+v\n", rb.State("api.example.com").Enabled)

	fmt.Println(a.Del(ctx, "example:{api.example.com}:adaptive").Val())
	// Output:
	// b waits 100ms
	// b waits 200ms
	// b waits 300ms
	// a waits 400ms
	// true
	// 1
}

// Fixed publishes one limit for the whole fleet: here 10 attempts a
// second, in bursts of 2, whichever replica sends them.
func ExampleFixed() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer rdb.Close()

	s := &redisretry.Store{Client: rdb, Prefix: "example:", Timeout: exampleTimeout}
	f := s.Fixed(redis_rate.Limit{Rate: 10, Period: time.Second, Burst: 2}, nil)
	for range 3 {
		_, wait, ok := f.Reserve("api.example.com")
		fmt.Println(ok, wait > 0 && wait <= 100*time.Millisecond)
	}

	// redis_rate puts "rate:" before the key.
	fmt.Println(rdb.Del(ctx, "rate:example:{api.example.com}:fixed").Val())
	// Output:
	// true false
	// true false
	// true true
	// 1
}

// One replica's failures open the circuit for the fleet: the other
// replica refuses the scope's attempts from its next read of the shared
// circuit on, with the failure that opened it. The clock is fixed here, so
// that the open time is exact.
func ExampleBreaker() {
	ctx := context.Background()
	a := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer b.Close()
	now := func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }

	// The parameters, and each replica's own circuit; Rand 0.5: no jitter.
	local := func() *breaker.Circuit { return &breaker.Circuit{Now: now, Rand: func() float64 { return 0.5 }} }
	ba := (&redisretry.Store{Client: a, Prefix: "example:", Now: now, Timeout: exampleTimeout}).Breaker(local())
	bb := (&redisretry.Store{Client: b, Prefix: "example:", Now: now, Timeout: exampleTimeout}).Breaker(local())

	refused := errors.New("dial tcp 192.0.2.7:443: connect: connection refused")
	for range breaker.DefaultFailures { // 5 failures in a row on a
		p, _ := ba.Allow("api.example.com")
		p.Done(classify.Outcome{Kind: classify.Transient, Reason: "connection refused"}, refused)
	}
	_, err := bb.Allow("api.example.com")
	fmt.Println(err)
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println("open for", oe.Until.Sub(now()))
	}
	fmt.Println(bb.State("api.example.com").Phase)

	fmt.Println(a.Del(ctx, "example:{api.example.com}:breaker").Val())
	// Output:
	// breaker: circuit open for scope "api.example.com": dial tcp 192.0.2.7:443: connect: connection refused
	// open for 1.5s
	// open
	// 1
}
