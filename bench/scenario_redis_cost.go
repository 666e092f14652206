package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

// costScope is the scope of the cost table's calls.
const costScope = "cost.example:443"

// costOp is one call of the cost table, timed each time it is made.
type costOp struct {
	name  string
	call  func() bool     // makes the call once; false if it was refused
	d     []time.Duration // every call's duration
	ok    int             // calls not refused
	trips int64           // round trips to Redis, of all calls
}

// runRedisCost times, call by call, what a retrying attempt asks of the
// shared quota and limiter: Acquire and Refund on the quota; Reserve,
// Delay, Cancel and Record on an adaptive limiter whose scope is enabled
// (throttled once), so that it paces; next to the same calls in process
// and a bare PING, the round trip's floor. The calls are interleaved, one
// of each per iteration, so that the machine's drift hits all alike.
func runRedisCost(w io.Writer, cfg config, f *redisFleet) error {
	if _, err := f.beginRun(); err != nil {
		return err
	}
	var rt roundTrips
	rdb := redis.NewClient(&redis.Options{Addr: f.srv.addr, Dialer: rt.dial})
	defer rdb.Close()
	rt.warm(rdb, 1)
	store := &redisretry.Store{Client: rdb}
	sq, sa := store.Quota(nil), store.Adaptive(nil)
	lq, la := &quota.Bucket{}, &ratelimit.Adaptive{}
	ctx := context.Background()

	var ops []*costOp
	add := func(name string, call func() bool) *costOp {
		op := &costOp{name: name, call: call}
		ops = append(ops, op)
		return op
	}
	// The calls of the goal, and PING, the unit of "× PING".
	goalOps := map[string]*costOp{}
	goalOps["PING"] = add("PING (go-redis, one round trip)", func() bool { return rdb.Ping(ctx).Err() == nil })
	for _, q := range []struct {
		name string
		q    quota.Quota
	}{{"redisretry.Quota", sq}, {"quota.Bucket", lq}} {
		// Acquire after a 503, and the Refund of a retry that succeeded,
		// so that the bucket stays full less one retry.
		var cost int
		goalOps[q.name+".Acquire"] = add(q.name+".Acquire", func() bool {
			var ok bool
			cost, _, ok = q.q.Acquire(costScope, classify.Transient)
			return ok
		})
		add(q.name+".Refund", func() bool { q.q.Refund(costScope, cost); return true })
	}
	for _, l := range []struct {
		name string
		l    interface {
			ratelimit.Limiter
			ratelimit.Recorder
		}
	}{{"redisretry.Adaptive", sa}, {"ratelimit.Adaptive", la}} {
		// A throttle enables the scope's bucket; every iteration then takes
		// a reservation, asks its delay and gives it back, so that the
		// queue stays short, and records a success.
		l.l.Record(costScope, classify.Throttle)
		var r ratelimit.Reservation
		goalOps[l.name+".Reserve"] = add(l.name+".Reserve", func() bool {
			var ok bool
			r, _, ok = l.l.Reserve(costScope)
			return ok
		})
		add("Reservation.Delay ("+l.name+")", func() bool { r.Delay(); return true })
		add("Reservation.Cancel ("+l.name+")", func() bool { r.Cancel(); return true })
		add(l.name+".Record (Success)", func() bool { l.l.Record(costScope, classify.Success); return true })
	}

	for _, op := range ops {
		op.d = make([]time.Duration, 0, cfg.redisCalls)
	}
	for range cfg.redisCalls {
		for _, op := range ops {
			trips, start := rt.count(), time.Now()
			ok := op.call()
			op.d = append(op.d, time.Since(start))
			op.trips += rt.count() - trips
			if ok {
				op.ok++
			}
		}
	}

	for _, op := range ops {
		slices.Sort(op.d) // for quantile; nothing below needs the call order
	}
	ping := quantile(goalOps["PING"].d, 0.50)
	t := &table{
		title: fmt.Sprintf("fleet-redis, cost per call: %d calls of each, interleaved, one goroutine, loopback redis-server", cfg.redisCalls),
		notes: []string{"What an attempt asks of the quota and the limiter, each call timed alone: redisretry's calls on a Store with the " +
			"defaults, each with its in-process counterpart (ratelimit), and a bare PING through the same kind of client, the floor of a " +
			"round trip. The limiters' scope was throttled once first, so that it paces; each iteration reserves, asks the " +
			"reservation's delay, cancels it and records a success. max: the slowest call (the Store's Timeout bounds a call to " +
			"Redis). \"× PING\" is the call's p50 over PING's. granted: calls not refused (Acquire: the bucket paid; Reserve: a " +
			"send token was given). trips/call: round trips to Redis per call, counted on the client's connection."},
		cols: []string{"call", "p50", "p99", "p99.9", "max", "mean", "× PING", "granted", "trips/call"},
	}
	for _, op := range ops {
		p50 := quantile(op.d, 0.50)
		t.add(op.name, micros(p50), micros(quantile(op.d, 0.99)), micros(quantile(op.d, 0.999)), micros(slices.Max(op.d)),
			micros(time.Duration(meanOf(op.d))), twoPlaces(float64(p50)/float64(ping)),
			percent(float64(op.ok)/float64(len(op.d))), tripsPerCall(op))
	}
	t.write(w)
	// redisretry's doc promises one round trip per Acquire, and per Reserve
	// on a scope that is limited.
	acq, res := goalOps["redisretry.Quota.Acquire"], goalOps["redisretry.Adaptive.Reserve"]
	writeGoals(w, []goal{{acq.trips == int64(len(acq.d)) && res.trips == int64(len(res.d)),
		fmt.Sprintf("redisretry's Quota.Acquire and Adaptive.Reserve (scope limited) one round trip per call: %s and %s round trips per call; "+
			"calls decided locally, which make none while the Store's circuit is open (a call slower than its Timeout, %v, less than %v ago): %d and %d",
			tripsPerCall(acq), tripsPerCall(res), redisretry.DefaultTimeout, redisretry.DefaultBackoff,
			sq.Fallbacks(costScope), sa.Fallbacks(costScope))}})
	return nil
}

// tripsPerCall formats op's round trips per call.
func tripsPerCall(op *costOp) string {
	return fmt.Sprintf("%.3f", float64(op.trips)/float64(max(len(op.d), 1)))
}

// micros formats d in microseconds.
func micros(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/1e3) }
