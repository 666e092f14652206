// Package quota decides whether a client may retry at all: a retry quota
// is a per-scope allowance of retries (the scope is the host by default, or
// any key the caller chooses) that each retry is charged to before it is
// sent, so that a failing server is not sent more work. When the allowance
// of a scope is spent, retries to that scope are refused and the caller
// returns the failure it has; first attempts are never charged or refused.
//
// There are two kinds:
//
//   - [Bucket] is the retry quota of AWS standard mode (docs/aws.md): a
//     bucket of tokens that retries spend and successful responses earn
//     back, a circuit breaker that stops retries during an outage once the
//     bucket drains, instead of multiplying the load on a server that is
//     already failing. A refusal is [ErrExceeded].
//   - [Budget] is a retry budget as Finagle defines it (docs/budget.md):
//     retries may be at most a share of the requests of a sliding window,
//     plus a floor per second, so that retries stay in proportion to the
//     traffic at every moment rather than stopping once a bucket drains. A
//     refusal is [ErrOverBudget].
//
// # Which scope is charged
//
// A policy has a Quota (a Bucket by default) and an optional Budget. The
// transport charges the policy's Quota in the scope each retry is sent to,
// so that a failing primary endpoint does not drain the bucket of a
// healthy secondary it fails over to, and the policy's Budget in the
// request's own scope, where its requests are counted, whatever the types
// of the two values. A quota that counts requests ([RequestCounter]), such
// as a Budget, belongs in the policy's Budget; policy.Validate rejects one
// in its Quota. Each scope has its own
// bucket or window, so an outage of one host does not stop retries to
// another.
//
// # Interfaces
//
// The transport asks for what it needs through small interfaces, so that
// the state can live elsewhere: [Quota] (Acquire before each retry,
// Refund, Success, Level), with [RequestCounter] for a quota that counts
// requests, and [Canceler] for one whose Refund is not for retries that
// were never sent. Bucket and Budget implement them in process; the module redisretry
// implements Quota on Redis, so that a fleet of replicas shares one retry
// quota. [None] is the quota that grants every retry.
//
// Rate limiters, which pace every attempt rather than decide whether to
// retry, are in package ratelimit.
//
// # What this package does not do
//
// It sends no requests and knows nothing of HTTP: callers classify each
// attempt's outcome (package classify) and report it here. It never sleeps
// and starts no goroutine: a Bucket in Wait mode returns the wait for the
// caller to spend under its own context and deadline, and refill is
// computed from the elapsed time when a bucket is next used. It holds no
// global state: every bucket and window belongs to a value the caller
// created.
//
// # Time
//
// Every method that depends on time has an …At form that takes the instant
// as a parameter, as golang.org/x/time/rate does. The short form calls it
// with the value's Now field, or the wall clock when Now is nil, so tests can
// run on a fake clock without sleeping.
package quota
