package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/redisretry"
)

// The fleet on Redis: fleetClients replicas, each a separate Transport
// with its own Redis client as separate processes would have, keep their
// retry quota and rate limiter either in process, each its own, or in one
// redis-server that the scenario starts, shared through module redisretry.

// redisFleet is what the fleet-redis tables share: the redis-server, and
// the clients and transports of the replicas of the run in progress.
type redisFleet struct {
	srv   *redisServer
	adm   *redis.Client // the scenario's own client: FLUSHALL, INFO
	trips roundTrips    // of every replica's client

	mu         sync.Mutex
	clients    []*redis.Client             // of the run in progress
	transports []*retrytransport.Transport // of the run in progress
}

// fleetReplica is a contender of the fleet-redis tables, as one replica.
type fleetReplica struct {
	name  string
	goals bool // the table's goals are checked for it
	// newReplica returns the policy of a new replica, whose shared state,
	// if any, goes in store: the replica's own, with its own client.
	newReplica func(store *redisretry.Store) policy.Policy
}

// contender returns c as a contender whose every wrap is a new replica of
// f's run in progress, with a new Redis client.
func (f *redisFleet) contender(c fleetReplica) contender {
	return contender{c.name, kindOurs, func(base http.RoundTripper) http.RoundTripper {
		return f.replica(c, base)
	}}
}

// replica returns a new replica of c around base, with a new Redis client
// whose pool holds fleetWorkers open connections, as that of a replica
// that has been running for a while would, and records both for f.endRun.
func (f *redisFleet) replica(c fleetReplica, base http.RoundTripper) *retrytransport.Transport {
	rdb := redis.NewClient(&redis.Options{Addr: f.srv.addr, Dialer: f.trips.dial})
	f.trips.warm(rdb, fleetWorkers) // replicas are made before their run starts
	t := retrytransport.New(base, retrytransport.WithPolicy(c.newReplica(&redisretry.Store{Client: rdb})))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clients = append(f.clients, rdb)
	f.transports = append(f.transports, t)
	return t
}

// beginRun empties Redis, so that no run inherits another's state, and
// returns the round trips the replicas' clients have made so far.
func (f *redisFleet) beginRun() (roundTrips int64, err error) {
	if err := f.adm.FlushAll(context.Background()).Err(); err != nil {
		return 0, fmt.Errorf("FLUSHALL: %w", err)
	}
	return f.trips.count(), nil
}

// warm opens n connections of c, a client dialled through rt, and puts
// them back in its pool; count leaves their round trips out, so warm must
// not run while other clients of rt make theirs. A failure is left for
// the run to meet.
func (rt *roundTrips) warm(c *redis.Client, n int) {
	before := rt.n.Load()
	defer func() { rt.warming.Add(rt.n.Load() - before) }()
	ctx := context.Background()
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = c.Conn()
		_ = conns[i].Ping(ctx).Err()
	}
	for _, cn := range conns {
		_ = cn.Close()
	}
}

// replicaStats is what a run's transports counted, summed over the
// replicas and their scopes.
type replicaStats struct {
	fallbacks, quotaRefusals uint64
}

// endRun closes the run's Redis clients and returns what its transports
// counted.
func (f *redisFleet) endRun() replicaStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	var st replicaStats
	for _, t := range f.transports {
		for _, s := range t.Snapshot() {
			st.fallbacks += s.Fallbacks
			st.quotaRefusals += s.QuotaRefusals
		}
	}
	for _, c := range f.clients {
		_ = c.Close()
	}
	f.clients, f.transports = nil, nil
	return st
}

// roundTrips counts the round trips of the replicas' Redis clients as the
// writes on their connections: a command, a pipeline or a handshake is one
// write; a script's EVALSHA and, after NOSCRIPT, its EVAL are two. It
// counts below go-redis, whose hooks a Store's WithTimeout clone of the
// client does not keep.
type roundTrips struct {
	n       atomic.Int64 // writes
	warming atomic.Int64 // of them, the warm-ups'
}

// count returns the round trips so far, the warm-ups' left out.
func (rt *roundTrips) count() int64 { return rt.n.Load() - rt.warming.Load() }

// dial is a redis.Options.Dialer whose connections count their writes.
func (rt *roundTrips) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &rt.n}, nil
}

// countingConn is a net.Conn that counts its writes.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// runFleetRedis starts a redis-server and prints the fleet-on-Redis
// tables: the outage, the throttled fleet, the cost of a call to Redis and
// the happy path's overhead.
func runFleetRedis(w io.Writer, cfg config, _ []contender) error {
	f, err := startRedisFleet()
	if err != nil {
		return err
	}
	defer f.close()
	srv := f.srv
	fmt.Fprintf(w, "\nredis-server %s on %s (no persistence), started by the bench and emptied before every run. Each replica has its own "+
		"go-redis client, whose pool starts with %d open connections, and a redisretry.Store with the defaults (Timeout %v: a call "+
		"that takes longer is decided from the replica's own state, a fallback, and keeps its calls local for the next %v); the scripts "+
		"are loaded before the first run, as a long-running deployment has them.\n",
		redisVersion(f.adm), srv.addr, fleetWorkers, redisretry.DefaultTimeout, redisretry.DefaultBackoff)
	for _, part := range []func(io.Writer, config, *redisFleet) error{
		runRedisOutage, runRedisThrottled, runRedisCost, runRedisOverhead,
	} {
		if err := part(w, cfg, f); err != nil {
			return err
		}
	}
	return nil
}

// startRedisFleet starts a redis-server for a table's replicas to share,
// with the scenario's own client to it and the scripts loaded, as a
// long-running deployment has them; close stops both.
func startRedisFleet() (*redisFleet, error) {
	srv, err := startRedis()
	if err != nil {
		return nil, err
	}
	f := &redisFleet{srv: srv, adm: redis.NewClient(&redis.Options{Addr: srv.addr})}
	loadScripts(f.adm)
	return f, nil
}

// close closes the scenario's client and stops the redis-server.
func (f *redisFleet) close() {
	f.adm.Close()
	f.srv.stop()
}

// loadScripts has redisretry's scripts loaded into the server, where the
// replicas of a deployment that has been running for a while would find
// them, by a call of each kind on a scope of its own. FLUSHALL, which each
// run starts with, keeps them.
func loadScripts(c *redis.Client) {
	const scope = "bench-warm-up"
	s := &redisretry.Store{Client: c, Timeout: time.Second}
	s.Quota(nil).Acquire(scope, classify.Transient)
	a := s.Adaptive(nil)
	a.Record(scope, classify.Throttle)
	a.Reserve(scope)
	s.Fixed(redis_rate.PerSecond(1), nil).Reserve(scope)
}

// redisVersion returns the server's redis_version, or "(version unknown)".
func redisVersion(c *redis.Client) string {
	info, err := c.Info(context.Background(), "server").Result()
	if err == nil {
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				return v
			}
		}
	}
	return "(version unknown)"
}
