// Package redisretry keeps the retry quotas of package quota, the send
// rates of package ratelimit and the circuits of package breaker in Redis,
// so that a fleet of replicas shares them: one retry quota per scope for
// the whole fleet, one adaptive send rate learned from every replica's
// throttles, one pacing by the quota the server publishes on its
// responses, one fixed rate limit, one circuit breaker.
// It is a separate module, so that the core module depends on no Redis
// client.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	s := &redisretry.Store{Client: rdb}
//	p := policy.Adaptive()
//	p.Quota = s.Quota(nil)      // quota.Quota
//	p.Limiter = s.Adaptive(nil) // ratelimit.Limiter, Recorder and QuotaRecorder
//
// [Quota] is AWS standard mode's retry quota with quota.Bucket's
// arithmetic, [Adaptive] the adaptive limiter of AWS adaptive mode with
// one curve and one queue for the fleet, which also paces the fleet by
// the quota a server publishes (the IETF RateLimit fields,
// X-RateLimit-*: what is left until when), [Fixed] a fixed limit on
// package redis_rate's GCRA, [Breaker] a circuit breaker whose circuit
// per scope the fleet shares: when one replica opens it every replica
// refuses, and one replica of the fleet at a time probes. Each takes its
// parameters from an in-process value of package quota, ratelimit or
// breaker (a quota.Bucket, a ratelimit.Adaptive, a ratelimit.Fixed, a
// breaker.Circuit), its Local field, which is also its state when Redis
// does not answer. docs/redis.md describes the
// algorithms and what the bench measured.
//
// # When to share
//
// Share when the limit is the fleet's, not the replica's: an API whose
// rate limit counts all of a tenant's requests, whichever replica sends
// them, or an outage during which the fleet, not each replica, should stop
// retrying. In process, N replicas retry N quotas' worth during an outage
// and learn N rates from the throttles each happens to receive; sharing
// makes it one quota and one rate, with equal shares between replicas. A
// quota that the API publishes on its responses paces replicas in process
// too, each estimating from the answers how many replicas spend it;
// sharing paces the fleet through one queue, with no estimate.
//
// Do not share when the limit is per replica (per connection, per source
// address), when a round trip to Redis on every limited attempt costs too
// much next to the request itself, or when a scope is called by one
// replica only: the in-process values of packages quota and ratelimit
// cost nothing of the kind.
//
// # Keys and round trips
//
// A scope's keys are Prefix + "{" + scope + "}:" + kind, kind "quota",
// "adaptive", "published" (the quota the server publishes, written once a
// replica reports one), "fixed" (with redis_rate's "rate:" first) or
// "breaker" (the shared circuit and its probe lease). The
// braces make the scope a Redis Cluster hash tag, so every script touches
// one slot. Keys expire after the Store's TTL without a write. TestCluster
// runs Quota, Adaptive, Fixed and Breaker on a Redis Cluster of three masters, with
// scopes on different nodes, and no call falls back. Through Redis
// Sentinel (NewFailoverClient), TestSentinelQuotaSharedByFleet has two
// replicas share one Quota bucket, with no fallback.
//
//	call                            round trips
//	Quota.Acquire                   1 (a retry is about to be made)
//	Quota.Success, Refund           0; 1 per scope per Refresh (1 s) when healthy, per Flush (100 ms) when owed tokens matter
//	Quota.Level                     0
//	Adaptive.Reserve                0 before the scope's first throttle while no published quota paces it (1 per Refresh, 100 ms),
//	                                then 1, shared by the calls that come while one is in flight
//	Adaptive.Record                 1 for a throttle, else 0
//	Adaptive.RecordQuota            as Record (it records the outcome too): 1 for a throttle, which carries the quota,
//	                                else 0, the quota going with the replica's next Reserve or throttle of the scope
//	Adaptive.Delay, State           0
//	Adaptive.Cancel                 1, best effort
//	Fixed.Reserve                   1 (0 without a Limit, or while the replica's earlier attempts wait)
//	Fixed.Delay                     0 until its turn, then 1
//	Breaker.Allow                   closed: 0 (1 per Refresh, 100 ms, while the replica sends);
//	                                open: 0 until the open time ends, then 1 per Refresh until it closes
//	Breaker.Done                    0 for a success; 1 for a probe, and for a failure that opens
//	                                Local's circuit or finds the last read Refresh old
//	Breaker.State, Fallbacks        0
//
// Every call is one Lua script (EVALSHA; EVAL once after a server restart)
// that does its arithmetic atomically in Redis; an Adaptive's Reserve
// takes its slot in the CUBIC queue and its place in the published
// quota's in one. An Adaptive has at most one Reserve call per scope in
// flight: the attempts that come meanwhile wait for its answer, then take
// their slots together in one call, so that a burst right after another
// replica's throttle is paced, not let through while the replica asks
// whether the scope is limited.
//
// # Failures
//
// No call waits on Redis longer than the Store's Timeout (5 ms by
// default). A call that fails or times out decides locally and opens the
// Store's circuit (but for a shared call that ran out of what was left of
// the first caller's Timeout, which says nothing of Redis): for Backoff (1 s) every call decides locally at once,
// then one call probes Redis, and the first answer closes the circuit. So
// a request waits on a Redis that does not answer for at most Timeout,
// and once more per Backoff only if it outlasts one (see [Store]); an
// Adaptive's Reserve that waits for another's call in flight counts that
// wait in its Timeout. A
// Quota decides locally from the last level Redis reported for the scope,
// less what the replica has taken since, so a fleet whose Redis fails
// during an outage does not start over with a full quota per replica; the
// retries it takes locally are charged to the shared bucket once Redis
// answers again (see [Quota]). The decisions made locally are counted per scope
// (Fallbacks, [ratelimit.FallbackCounter]), which the transport reports in
// its Snapshot, and logged at most once per LogInterval if the Store has a
// Logger. While Redis is down each replica is on its own, with its Local
// quota, rates and circuit: a Quota and an Adaptive apply every outcome to Local
// too, and an Adaptive every published quota, so that it holds the
// replica's recent history when needed.
//
// The package starts no goroutine and holds no global state.
package redisretry
