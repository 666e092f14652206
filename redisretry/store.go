package redisretry

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The Store's defaults.
const (
	DefaultPrefix      = "retrytransport:"    // start of every key
	DefaultTimeout     = 5 * time.Millisecond // bound on every call to Redis
	DefaultBackoff     = time.Second          // how long a replica stays local after Redis failed
	DefaultTTL         = 10 * time.Minute     // how long an idle scope's keys live
	DefaultLogInterval = time.Minute          // least time between two log lines of one kind
)

// Store is where a fleet's shared retry quotas, rate limits and circuits
// live: one Redis deployment, reached through Client, and how this replica
// talks to it. A [Quota], [Fixed], [Adaptive] or [Breaker] keeps each
// scope's state in keys of the Store, so that every replica that uses the
// same Redis and Prefix shares it; the methods Quota, Fixed, Adaptive and
// Breaker make one.
//
// # Keys
//
// The keys of a scope are Prefix + "{" + scope + "}:" + kind, with kind
// "quota", "adaptive", "published" (an Adaptive's pacing by the quota
// the server publishes) or "breaker"; a Fixed's key is that of kind "fixed" behind the
// "rate:" that package redis_rate puts first. The braces are a Redis
// Cluster hash tag: all keys of one scope land in one slot, so each
// script touches one node. A key that no call has written to for TTL
// expires, and its scope starts afresh.
//
// # Failures
//
// Every call to Redis has Timeout to answer (the Reserve calls of an
// Adaptive that waited for another call of their scope, what is left of
// it: see [Adaptive]). A call that fails or passes the deadline makes the
// decision from this replica's local state instead (see Local of the
// Quota, Fixed or Adaptive) and counts it as a fallback of its scope, and
// it opens the Store's circuit: for Backoff, calls do not go to Redis but
// decide locally at once. A call that had only what was left of the
// Timeout and ran out of it does not open the circuit: that says nothing
// of Redis, which answered the call it waited for. After Backoff one call, and
// only one at a time, probes Redis again; the first that succeeds closes
// the circuit, and one that fails opens it for another Backoff. The
// circuit is the Store's, not a scope's: with Redis Cluster, a node that
// fails sends every scope of the Store local for Backoff. A lone call that
// misses the deadline on a busy machine opens it too: the replica is then
// on its own for Backoff while the others go on sharing.
//
// So a request waits on a Redis that does not answer for at most Timeout:
// its first call that fails waits out the deadline, as do the calls of
// other requests already waiting beside it, and every call after that
// decides at once. Only a request that is still running Backoff later
// (after long backoffs between its attempts, say) can make the probe, and
// wait Timeout once more: at most once per Backoff. Every call is bounded
// by Timeout provided the client honours a context's deadline, as go-redis
// clients do only when created with ContextTimeoutEnabled: true
// (recommended). A *redis.Client without it, as NewClient and
// NewFailoverClient return by default, is used through its WithTimeout
// clone, which shares its connections and times out each read and write
// after Timeout; waiting for a connection is bounded by the deadline
// either way. That clone does not carry the hooks added to the client
// with AddHook (tracing and metrics such as redisotel's), so the Store's
// calls would go unseen by them: create the client with
// ContextTimeoutEnabled to keep them. Any other client
// (NewClusterClient's, NewFailoverClusterClient's, a Ring) without
// ContextTimeoutEnabled is not used at all: every decision is local, and
// logged as a failure.
//
// go-redis dials lazily, within the first call's deadline: on a busy
// machine, or across a network, a new replica's first calls may miss the
// 5 ms and be decided locally. A service that PINGs Redis as it starts,
// with a deadline of its own, opens the connection before the first
// request needs it.
//
// Each call passes its parameters (Capacity, Beta, ...) to Redis: the
// replicas that share a Store's keys must use the same ones.
//
// # Logging
//
// With a Logger, the Store logs at Warn level when a call to Redis fails,
// at most once per LogInterval, with the error and the fallbacks since the
// previous line, and at Info level when Redis answers again, at most once
// per LogInterval too. Without one it is silent.
//
// A zero Store has no Client: every decision is local. A Store is safe for
// concurrent use and starts no goroutine. It must not be copied, nor its
// fields changed, after first use. Replicas share state only if their
// Stores use the same Redis and Prefix.
type Store struct {
	// Client is the Redis deployment: a single server, Sentinel
	// (NewFailoverClient) or Cluster. Nil means none: every decision is
	// local.
	Client redis.UniversalClient
	// Prefix starts every key; zero means DefaultPrefix.
	Prefix string
	// Timeout bounds every call to Redis; zero means DefaultTimeout (5 ms).
	Timeout time.Duration
	// Backoff is how long the Store decides locally after a call failed
	// before it probes Redis again; zero means DefaultBackoff (1 s).
	Backoff time.Duration
	// TTL is how long a scope's keys outlive the last call that wrote
	// them, rounded to milliseconds; zero means DefaultTTL (10 min).
	TTL time.Duration
	// Logger receives the Store's few log lines; nil means none.
	Logger *slog.Logger
	// LogInterval is the least time between two log lines of one kind;
	// zero means DefaultLogInterval (1 min).
	LogInterval time.Duration
	// MaxScopes bounds how many scopes each Quota, Fixed and Adaptive of
	// the Store keeps local records for (last answers, fallback counts);
	// zero means 10,000, ratelimit.DefaultMaxScopes (which equals
	// quota.DefaultMaxScopes). A scope whose record is dropped starts
	// again as if unseen by this replica.
	MaxScopes int
	// Now is the clock; nil means time.Now. When set, the scripts also
	// take their time from it instead of from the Redis server's clock
	// (see [Quota] and [Adaptive]), so that tests are deterministic.
	Now func() time.Time

	once   sync.Once
	client redis.UniversalClient // Client, resolved to honour Timeout; nil if unusable
	badErr error                 // why client is nil

	openUntil atomic.Int64 // unix ns before which calls stay local; 0 when the circuit is closed
	probing   atomic.Bool  // a call is probing Redis after Backoff

	logMu     sync.Mutex
	lastWarn  time.Time // guarded by logMu
	lastInfo  time.Time // guarded by logMu
	unlogged  uint64    // fallbacks since the last Warn line; guarded by logMu
	downSince time.Time // when the circuit last opened; guarded by logMu
	downErr   error     // the failure that last opened it; guarded by logMu
	warned    bool      // a Warn line was logged since the last Info line; guarded by logMu
}

// Errors of the Store; a caller sees them only in its log.
var (
	errNoClient   = errors.New("redisretry: Store has no Client")
	errNoDeadline = errors.New("redisretry: the Redis client ignores context deadlines; create it with ContextTimeoutEnabled: true")
	errOpen       = errors.New("redisretry: Redis failed recently; deciding locally until the next probe")
)

// Quota returns a [Quota] in s whose parameters and local fallback state
// are local (nil means a quota.Bucket with its defaults).
func (s *Store) Quota(local *quota.Bucket) *Quota { return &Quota{Store: s, Local: local} }

// Adaptive returns an [Adaptive] in s whose parameters and local fallback
// state are local (nil means a ratelimit.Adaptive with Beta DefaultBeta).
func (s *Store) Adaptive(local *ratelimit.Adaptive) *Adaptive {
	return &Adaptive{Store: s, Local: local}
}

// do runs fn against Redis with a context that ends after Timeout, unless
// the circuit is open: then it returns errOpen at once. A failure of fn
// opens the circuit for Backoff, so that no call waits on Redis again
// until a probe, one at a time, after Backoff; the probe's success closes
// it. Only the calls already waiting when the first failed wait out their
// deadline too: each of them belongs to a request that was waiting on
// Redis for the first time, or was probing.
func (s *Store) do(fn func(ctx context.Context, c redis.UniversalClient) error) error {
	return s.doWithin(context.Background(), fn)
}

// doWithin is do within ctx. A ctx without a deadline gets one Timeout
// from now; one with a deadline keeps it: the caller set it from Timeout
// when the first of the callers it serves began to wait, so it leaves the
// call less than Timeout. Such a call that runs out of its time does not
// open the circuit (see shortOfTime).
func (s *Store) doWithin(ctx context.Context, fn func(ctx context.Context, c redis.UniversalClient) error) error {
	c, err := s.resolved()
	if err != nil {
		s.failed(err, false)
		return err
	}
	probe := false
	if until := s.openUntil.Load(); until != 0 {
		if s.now().UnixNano() < until || !s.probing.CompareAndSwap(false, true) {
			return errOpen
		}
		probe = true
		defer s.probing.Store(false)
	}
	_, short := ctx.Deadline()
	if !short {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout())
		defer cancel()
	}
	err = fn(ctx, c)
	if err != nil {
		if short && shortOfTime(ctx, err) {
			return err // decided locally, the circuit left as it was
		}
		// A Redis that is stalled or down fails every call: had the circuit
		// waited for more failures before opening, each would have been a
		// request's second or third wait on it.
		old := s.openUntil.Swap(s.now().Add(s.backoff()).UnixNano())
		s.failed(err, old == 0)
		return err
	}
	if probe {
		s.openUntil.Store(0)
		s.recovered()
	}
	return nil
}

// shortOfTime reports whether a call within ctx, whose deadline the caller
// set and which failed with err, failed only because that deadline came:
// ctx is done, or err is a deadline's (go-redis returns the connection's
// i/o timeout, which wraps os.ErrDeadlineExceeded, when it set the
// connection's deadline from ctx's and that came first). Such a failure
// says nothing of Redis's health: the deadline left the call less than
// Timeout, what is left of it after the call the caller waited for, which
// Redis answered. A Redis that does not answer fails the calls made with a
// whole Timeout, which open the circuit. A failure of any other kind
// (a refused connection, an error reply) does speak of Redis, however
// short the deadline.
func shortOfTime(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// down reports whether calls now decide locally: the circuit is open, or
// there is no client to call.
func (s *Store) down() bool {
	if _, err := s.resolved(); err != nil {
		return true
	}
	until := s.openUntil.Load()
	return until != 0 && s.now().UnixNano() < until
}

// resolved returns the client to call, resolved once from Client so that
// it honours Timeout (see Store), or why there is none.
func (s *Store) resolved() (redis.UniversalClient, error) {
	s.once.Do(func() { s.client, s.badErr = resolveClient(s.Client, s.timeout()) })
	return s.client, s.badErr
}

// resolveClient returns c, or its clone that times out reads and writes
// after timeout, or an error if c cannot be made to honour a deadline.
func resolveClient(c redis.UniversalClient, timeout time.Duration) (redis.UniversalClient, error) {
	switch c := c.(type) {
	case nil:
		return nil, errNoClient
	case *redis.Client:
		if c.Options().ContextTimeoutEnabled {
			return c, nil
		}
		return c.WithTimeout(timeout), nil
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return nil, errNoDeadline
		}
	case *redis.Ring:
		if !c.Options().ContextTimeoutEnabled {
			return nil, errNoDeadline
		}
	}
	return c, nil
}

// key returns the key of kind for scope. The scope is the hash tag, so a
// scope's keys share a Cluster slot.
func (s *Store) key(scope, kind string) string {
	p := s.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return p + "{" + scope + "}:" + kind
}

// clockArg returns the time to pass a script: the Now hook's reading in
// microseconds, or "" for the server's clock when Now is nil.
func (s *Store) clockArg(now time.Time) any {
	if s.Now == nil {
		return ""
	}
	return now.UnixMicro()
}

func (s *Store) timeout() time.Duration { return positive(s.Timeout, DefaultTimeout) }
func (s *Store) backoff() time.Duration { return positive(s.Backoff, DefaultBackoff) }
func (s *Store) ttlMillis() int64       { return max(positive(s.TTL, DefaultTTL).Milliseconds(), 1) }
func (s *Store) maxScopes() int {
	if s.MaxScopes > 0 {
		return s.MaxScopes
	}
	return ratelimit.DefaultMaxScopes
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// positive returns d, or def when d is zero or negative.
func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// noStore stands in for a nil Store field: a Store without a client, so
// that every decision is local. The zero value is ready.
type noStore struct {
	once sync.Once
	s    *Store
}

// or returns s, or the stand-in if s is nil.
func (n *noStore) or(s *Store) *Store {
	if s != nil {
		return s
	}
	n.once.Do(func() { n.s = new(Store) })
	return n.s
}
