package redisretry_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
	"github.com/retrytransport/retrytransport/redisretry/internal/redisproc"
)

// sentinelMaster is the name under which the tests' sentinel monitors
// its master.
const sentinelMaster = "mymaster"

// startSentinel starts a Redis Sentinel for t that monitors master, on a
// free loopback port, with its config file in a directory of its own
// (Sentinel rewrites it), and kills it when t ends; it returns once the
// sentinel reports master's address. It runs redis-server in sentinel
// mode (redis-sentinel is only a link to it, in a package of its own on
// Debian): without it, or without the mode, the test fails, it does not
// skip.
func startSentinel(t *testing.T, master *redisServer) *redisServer {
	t.Helper()
	dir := t.TempDir() // removed after the kill below: cleanups run last first
	s := startServer(t, "a sentinel (redis-server <conf> --sentinel)", func(port int) ([]string, error) {
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(port)+".conf")
		text := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n",
			port, dir, sentinelMaster, master.Port, sentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		return []string{conf, "--sentinel"}, nil
	})

	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	pollUntil(t, redisproc.StartTimeout, "sentinel "+s.Addr+" reports master "+master.Addr, func() bool {
		a, err := sc.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		return err == nil && len(a) == 2 && a[0]+":"+a[1] == master.Addr
	})
	return s
}

// TestSentinelQuotaSharedByFleet runs replicas of a fleet on one master
// found through Redis Sentinel (NewFailoverClient), one client with
// ContextTimeoutEnabled and one without (used through WithTimeout): they
// drain one bucket, with no fallback and no failed call, and the bucket is
// on the master.
func TestSentinelQuotaSharedByFleet(t *testing.T) {
	master := startRedis(t)
	sentinel := startSentinel(t, master)
	prefix := uniquePrefix(t)
	const workers = 4
	var taken atomic.Int64
	var wg sync.WaitGroup
	var qs []*redisretry.Quota
	var logs []*countingHandler
	for _, ctxTimeout := range []bool{true, false} {
		c := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            sentinelMaster,
			SentinelAddrs:         []string{sentinel.Addr},
			ContextTimeoutEnabled: ctxTimeout,
		})
		t.Cleanup(func() { _ = c.Close() })
		log := &countingHandler{}
		logs = append(logs, log)
		q := (&redisretry.Store{Client: c, Prefix: prefix, Timeout: 5 * time.Second, Logger: slog.New(log)}).Quota(nil)
		qs = append(qs, q)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, _, ok := q.Acquire(scope, classify.Transient); !ok {
						return
					}
					taken.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	// 500 tokens at 5 a retry: 100 retries for the fleet.
	want := int64(quota.DefaultCapacity / quota.DefaultRetryCost)
	if got := taken.Load(); got != want {
		t.Errorf("%d replicas took %d retries from one shared quota through Sentinel; want %d", len(qs), got, want)
	}
	for i, q := range qs {
		if n := q.Fallbacks(scope); n != 0 {
			t.Errorf("replica %d: Quota.Fallbacks = %d through Sentinel; want 0", i, n)
		}
		if n := logs[i].count(slog.LevelWarn); n != 0 {
			t.Errorf("replica %d logged %d failed calls %q; want none", i, n, logs[i].messages())
		}
	}
	if key := prefix + "{" + scope + "}:quota"; !exists(t, master.client(t, nil), key) {
		t.Errorf("key %s is not on the master %s", key, master.Addr)
	}
}
