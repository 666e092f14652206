package redisretry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/childproc"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
	"github.com/retrytransport/retrytransport/redisretry/internal/redisproc"
)

// clusterStart bounds how long redis-cli has to create a cluster, and then
// the cluster to report cluster_state:ok on every node.
const clusterStart = 10 * time.Second

// redisCluster is a Redis Cluster of the tests: three masters without
// replicas on loopback ports, without persistence, killed when the test
// ends.
type redisCluster struct {
	nodes []*redisServer
}

// startCluster starts a cluster of three masters for t, creates it with
// redis-cli --cluster create and waits until every node reports
// cluster_state:ok. redis-server and redis-cli must be on PATH (CI
// installs redis-server, which brings redis-cli): without them the test
// fails, it does not skip.
func startCluster(t *testing.T) *redisCluster {
	t.Helper()
	c := &redisCluster{}
	for range 3 {
		c.nodes = append(c.nodes, startClusterNode(t))
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli is not on PATH: the Cluster tests create the cluster with redis-cli --cluster create " +
			"(apt-get install redis-tools; redis-server depends on it)")
	}
	args := append([]string{"--cluster", "create"}, c.addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	deadline := time.Now().Add(clusterStart)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.SysProcAttr = childproc.SysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, n := range c.nodes {
		adm := n.client(t, nil)
		pollUntil(t, time.Until(deadline), "node "+n.Addr+" reports cluster_state:ok", func() bool {
			info, err := adm.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
	}
	return c
}

// startClusterNode starts a redis-server in cluster mode for t, in a
// directory of its own, on a free loopback port and with a free port for
// the cluster bus (the default, port + 10000, may be taken or too high),
// and kills it when t ends. A node timeout of 1 s, not 15, makes the nodes
// ping each other twice a second, so that they meet within about a second
// of redis-cli's CLUSTER MEET rather than up to four. A bus port taken
// meanwhile, or equal to the port, makes redis-server exit with "Address
// already in use", and redisproc.Start tries other ports.
func startClusterNode(t *testing.T) *redisServer {
	t.Helper()
	dir := t.TempDir() // removed after the kill below: cleanups run last first
	return startServer(t, "a cluster node", func(port int) ([]string, error) {
		bus, err := redisproc.FreePort()
		if err != nil {
			return nil, err
		}
		p := strconv.Itoa(port)
		return []string{
			"--bind", "127.0.0.1", "--port", p, "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "1000",
			"--cluster-config-file", filepath.Join(dir, "nodes-"+p+".conf"),
			"--save", "", "--appendonly", "no",
		}, nil
	})
}

// addrs returns the nodes' addresses.
func (c *redisCluster) addrs() []string {
	var as []string
	for _, n := range c.nodes {
		as = append(as, n.Addr)
	}
	return as
}

// client returns a new Cluster client of c with ContextTimeoutEnabled, as
// a Store requires, closed when t ends.
func (c *redisCluster) client(t *testing.T) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// scopesOnNodes returns one scope per node of c, each scope's hash slot
// (its keys' slot, as the scope is their hash tag) served by that node,
// and the node's address by scope.
func (c *redisCluster) scopesOnNodes(t *testing.T) (scopes []string, owner map[string]string) {
	t.Helper()
	ctx := context.Background()
	adm := c.nodes[0].client(t, nil)
	shards, err := adm.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	// ownerOf returns the address of the master that serves slot.
	ownerOf := func(slot int64) string {
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start <= slot && slot <= r.End {
					for _, n := range sh.Nodes {
						if n.Role == "master" {
							return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
						}
					}
				}
			}
		}
		return ""
	}
	owner = make(map[string]string)
	taken := make(map[string]bool)
	for i := 0; len(scopes) < len(c.nodes) && i < 1000; i++ {
		scope := fmt.Sprintf("api%d.example.com", i)
		slot, err := adm.ClusterKeySlot(ctx, scope).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", scope, err)
		}
		if addr := ownerOf(slot); addr != "" && !taken[addr] {
			taken[addr] = true
			scopes = append(scopes, scope)
			owner[scope] = addr
		}
	}
	if len(scopes) < len(c.nodes) {
		t.Fatalf("found scopes on %d of %d nodes (shards %+v); want one on each", len(scopes), len(c.nodes), shards)
	}
	return scopes, owner
}

// clusterReplica is one process of a fleet on the cluster: its Store, with
// its own Cluster client and log.
type clusterReplica struct {
	store *redisretry.Store
	log   *countingHandler
}

func newClusterReplicas(t *testing.T, c *redisCluster, n int, clock *faketime.Clock) []clusterReplica {
	t.Helper()
	prefix := uniquePrefix(t)
	rs := make([]clusterReplica, n)
	for i := range rs {
		rs[i].log = &countingHandler{}
		rs[i].store = &redisretry.Store{Client: c.client(t), Prefix: prefix, Timeout: 5 * time.Second, Logger: slog.New(rs[i].log)}
		if clock != nil {
			rs[i].store.Now = clock.Now
		}
	}
	return rs
}

// checkNoFailure fails t if a replica logged a failed call to Redis: an
// error such as CROSSSLOT or MOVED that the client did not follow.
func checkNoFailure(t *testing.T, rs []clusterReplica) {
	t.Helper()
	for i, r := range rs {
		if n := r.log.count(slog.LevelWarn); n != 0 {
			t.Errorf("replica %d logged %d failed calls to the cluster %q; want none", i, n, r.log.messages())
		}
	}
}

// checkKeysOnOwners fails t unless each scope's key of kind is on the node
// that serves the scope's slot.
func checkKeysOnOwners(t *testing.T, c *redisCluster, owner map[string]string, key func(scope string) string) {
	t.Helper()
	for scope, addr := range owner {
		i := slices.IndexFunc(c.nodes, func(n *redisServer) bool { return n.Addr == addr })
		if i < 0 {
			t.Fatalf("scope %s is served by %s, not a node of the cluster %v", scope, addr, c.addrs())
		}
		if !exists(t, c.nodes[i].client(t, nil), key(scope)) {
			t.Errorf("key %s is not on %s, the node that serves scope %s", key(scope), addr, scope)
		}
	}
}

// TestCluster runs a fleet's Quota, Adaptive and Fixed on a Redis Cluster
// of three masters, with scopes served by different nodes: each scope's
// state is shared by the replicas, lives on the node that serves its slot,
// and every call is answered (no fallback, no error such as CROSSSLOT).
// TestClusterClientNeedsDeadlines covers the Cluster client that a Store
// refuses.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	scopes, owner := c.scopesOnNodes(t)

	t.Run("QuotaSharedByFleet", func(t *testing.T) {
		const replicas, workers = 3, 3
		rs := newClusterReplicas(t, c, replicas, nil)
		taken := make([]atomic.Int64, len(scopes))
		var qs []*redisretry.Quota
		var wg sync.WaitGroup
		for _, r := range rs {
			q := r.store.Quota(nil)
			qs = append(qs, q)
			for i, scope := range scopes {
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							if _, _, ok := q.Acquire(scope, classify.Transient); !ok {
								return
							}
							taken[i].Add(1)
						}
					}()
				}
			}
		}
		wg.Wait()
		// 500 tokens at 5 a retry: 100 retries for the fleet, per scope.
		want := int64(quota.DefaultCapacity / quota.DefaultRetryCost)
		for i, scope := range scopes {
			if got := taken[i].Load(); got != want {
				t.Errorf("%d replicas took %d retries of %s (node %s) from one shared quota; want %d",
					replicas, got, scope, owner[scope], want)
			}
			for j, q := range qs {
				if n := q.Fallbacks(scope); n != 0 {
					t.Errorf("replica %d: Quota.Fallbacks(%q) = %d on a healthy cluster; want 0", j, scope, n)
				}
			}
		}
		checkNoFailure(t, rs)
		checkKeysOnOwners(t, c, owner, func(scope string) string { return rs[0].store.Prefix + "{" + scope + "}:quota" })
	})

	t.Run("AdaptiveThrottleSlowsOtherReplicas", func(t *testing.T) {
		clock := faketime.New()
		rs := newClusterReplicas(t, c, 2, clock)
		a, b := rs[0].store.Adaptive(nil), rs[1].store.Adaptive(nil)
		for _, scope := range scopes {
			a.Record(scope, classify.Throttle)
			if st := a.State(scope); !st.Enabled {
				t.Fatalf("a.State(%q) after a's throttle = %+v; want enabled", scope, st)
			}
		}
		clock.Advance(redisretry.DefaultAdaptiveRefresh)
		for _, scope := range scopes {
			// b has not recorded a throttle: only the shared state limits it.
			var waits []time.Duration
			for range 4 {
				for _, x := range []*redisretry.Adaptive{b, a} {
					_, wait, ok := x.Reserve(scope)
					if !ok {
						t.Fatalf("Reserve(%q) refused without FailFast or MaxWait", scope)
					}
					waits = append(waits, wait)
				}
			}
			st := b.State(scope)
			if !st.Enabled || st.LastMax != a.State(scope).LastMax {
				t.Errorf("b.State(%q) after a's throttle = %+v; want enabled, with a's LastMax %v", scope, st, a.State(scope).LastMax)
			}
			// One queue for both: past the burst, every slot is later
			// than the one before, whichever replica took it.
			burst := int(max(st.FillRate*0.1, 1))
			for i := burst + 1; i < len(waits); i++ {
				if waits[i] <= waits[i-1] {
					t.Errorf("waits of Reserve(%q) by b and a in turn = %v; want them to grow past the burst of %d", scope, waits, burst)
					break
				}
			}
			if n := a.Fallbacks(scope) + b.Fallbacks(scope); n != 0 {
				t.Errorf("Adaptive.Fallbacks(%q) = %d on a healthy cluster; want 0", scope, n)
			}
		}
		checkNoFailure(t, rs)
		checkKeysOnOwners(t, c, owner, func(scope string) string { return rs[0].store.Prefix + "{" + scope + "}:adaptive" })
	})

	t.Run("FixedFleetSharesLimit", func(t *testing.T) {
		// 10 a minute in a burst of 10: no token frees up during the test,
		// so the fleet gets exactly 10 per scope.
		limit := redis_rate.Limit{Rate: 10, Period: time.Minute, Burst: 10}
		const replicas, calls = 3, 8
		rs := newClusterReplicas(t, c, replicas, nil)
		allowed := make([]atomic.Int64, len(scopes))
		var fs []*redisretry.Fixed
		var wg sync.WaitGroup
		for _, r := range rs {
			f := r.store.Fixed(limit, nil)
			f.FailFast = true
			fs = append(fs, f)
			for i, scope := range scopes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range calls {
						if _, wait, ok := f.Reserve(scope); ok && wait == 0 {
							allowed[i].Add(1)
						}
					}
				}()
			}
		}
		wg.Wait()
		for i, scope := range scopes {
			if got := allowed[i].Load(); got != int64(limit.Burst) {
				t.Errorf("%d replicas × %d Reserve(%q) (node %s) at %v allowed %d; want %d", replicas, calls, scope, owner[scope], limit, got, limit.Burst)
			}
			for j, f := range fs {
				if n := f.Fallbacks(scope); n != 0 {
					t.Errorf("replica %d: Fixed.Fallbacks(%q) = %d on a healthy cluster; want 0", j, scope, n)
				}
			}
		}
		checkNoFailure(t, rs)
		checkKeysOnOwners(t, c, owner, func(scope string) string { return "rate:" + rs[0].store.Prefix + "{" + scope + "}:fixed" })
	})

	t.Run("BreakerOpeningSharedByFleet", func(t *testing.T) { clusterBreakerOpeningShared(t, c, scopes, owner) })
}
