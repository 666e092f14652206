package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/redisretry"
)

// Headers the replicas send and the API counts by.
const (
	replicaHeader = "X-Replica" // the sending replica, from 1
	attemptHeader = "X-Attempt" // the attempt, from 1 (policy.Policy.AttemptHeader)
)

// fleetRun is what one act's outage did, replica by replica.
type fleetRun struct {
	replicas          []replicaRun
	attempts, retries int           // at the API, the whole fleet
	elapsed           time.Duration // from the start to the last replica's last response
}

// replicaRun is what one replica did during the outage.
type replicaRun struct {
	attempts, retries int           // at the API
	openedAt          int           // the request (from 1) whose retry its quota first refused; 0 if none
	openedAfter       time.Duration // when, since the fleet started
	level             float64       // its quota's level as it last saw it (Snapshot)
	fallbacks         uint64        // quota decisions made without Redis (Snapshot)
}

// replica is one process of the fleet: a Transport and, with a shared
// quota, the Redis client behind it.
type replica struct {
	id      int
	rt      *retrytransport.Transport
	client  *http.Client
	rdb     *redis.Client // nil with its own quota
	refused atomic.Bool   // its quota refused a retry
}

// fleet is cfg.replicas replicas calling the same API.
type fleet struct {
	url      string
	replicas []*replica
}

// newFleet returns a fleet calling baseURL, each replica with
// policy.Standard() and cfg's backoff. With redisAddr empty each replica
// keeps the quota its Transport creates; otherwise each gets its own Redis
// client and Store, and a redisretry.Quota in it.
func newFleet(cfg config, baseURL, redisAddr string) *fleet {
	f := &fleet{url: baseURL}
	for i := range cfg.replicas {
		r := &replica{id: i + 1}
		pol := policy.Standard()
		pol.Backoff = cfg.backoff
		pol.AttemptHeader = attemptHeader
		if redisAddr != "" {
			r.rdb = redis.NewClient(&redis.Options{Addr: redisAddr})
			s := &redisretry.Store{Client: r.rdb, Timeout: cfg.timeout}
			pol.Quota = s.Quota(nil)
		}
		r.rt = retrytransport.New(nil, retrytransport.WithPolicy(pol),
			retrytransport.WithObserver(func(ev retrytransport.Event) {
				if errors.Is(ev.Stop, quota.ErrExceeded) {
					r.refused.Store(true)
				}
			}))
		r.client = &http.Client{Transport: r.rt}
		f.replicas = append(f.replicas, r)
	}
	return f
}

// close closes every replica's idle connections and Redis client.
func (f *fleet) close() {
	for _, r := range f.replicas {
		r.client.CloseIdleConnections()
		if r.rdb != nil {
			_ = r.rdb.Close()
		}
	}
}

// connect has every replica's Redis client open its connection, as a
// service would at startup, so that the first decisions of the run do not
// pay for the dial and miss the Store's Timeout.
func (f *fleet) connect(ctx context.Context) error {
	for _, r := range f.replicas {
		if r.rdb == nil {
			continue
		}
		if err := r.rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("demofleet: replica %d: connect to Redis: %w", r.id, err)
		}
	}
	return nil
}

// outage has every replica send n requests at once, while the API is
// down, and tallies what the API saw and what each replica decided.
func (f *fleet) outage(ctx context.Context, api *api, n int) (fleetRun, error) {
	api.reset(true)
	fr := fleetRun{replicas: make([]replicaRun, len(f.replicas))}
	start := time.Now()
	err := f.each(func(r *replica) error {
		rr := &fr.replicas[r.id-1]
		for i := range n {
			if _, err := r.get(ctx, f.url); err != nil {
				return err
			}
			if rr.openedAt == 0 && r.refused.Load() {
				rr.openedAt, rr.openedAfter = i+1, time.Since(start)
			}
		}
		return nil
	})
	fr.elapsed = time.Since(start)
	for i, r := range f.replicas {
		rr := &fr.replicas[i]
		rr.attempts, rr.retries = api.counts(r.id)
		fr.attempts += rr.attempts
		fr.retries += rr.retries
		for _, s := range r.rt.Snapshot() { // one scope: the API's host
			rr.level, rr.fallbacks = s.Quota, s.Fallbacks
		}
	}
	return fr, err
}

// send has every replica send n requests at once and returns how many got
// a 200.
func (f *fleet) send(ctx context.Context, n int) (int, error) {
	var ok atomic.Int64
	err := f.each(func(r *replica) error {
		for range n {
			status, err := r.get(ctx, f.url)
			if err != nil {
				return err
			}
			if status == http.StatusOK {
				ok.Add(1)
			}
		}
		return nil
	})
	return int(ok.Load()), err
}

// each runs fn for every replica at once and returns the first error.
func (f *fleet) each(fn func(r *replica) error) error {
	errs := make([]error, len(f.replicas))
	var wg sync.WaitGroup
	for i, r := range f.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(r)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// get sends one GET to url from r, reads the whole response and returns
// its status code. A 503 is not an error: it is the outage.
func (r *replica) get(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(replicaHeader, strconv.Itoa(r.id))
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("demofleet: replica %d: %w", r.id, err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// api is the demo's HTTP API: down, it answers every request with 503;
// up, with 200. It counts each replica's attempts, and those that were
// retries. It is safe for concurrent use.
type api struct {
	down atomic.Bool

	mu       sync.Mutex
	attempts []int // per replica, from index 0; guarded by mu
	retries  []int // guarded by mu
}

// newAPI returns an api, up, for a fleet of n replicas.
func newAPI(n int) *api {
	return &api{attempts: make([]int, n), retries: make([]int, n)}
}

// ServeHTTP counts the attempt and answers it.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.Header.Get(replicaHeader))
	attempt, _ := strconv.Atoi(r.Header.Get(attemptHeader))
	a.mu.Lock()
	if id >= 1 && id <= len(a.attempts) {
		a.attempts[id-1]++
		if attempt > 1 {
			a.retries[id-1]++
		}
	}
	a.mu.Unlock()
	if a.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// reset zeroes the counts and sets whether the api is down.
func (a *api) reset(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.attempts)
	clear(a.retries)
	a.down.Store(down)
}

// counts returns the attempts and retries of replica id (from 1).
func (a *api) counts(id int) (attempts, retries int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[id-1], a.retries[id-1]
}
