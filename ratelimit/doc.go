// Package ratelimit decides how fast a client may send, from token buckets
// kept per scope (the host by default, or any key the caller chooses): its
// rate limiters pace every attempt, first attempts included. Whether a
// client may retry at all is a retry quota's decision, in package quota.
//
// [Adaptive] is the client-side rate limiter of AWS adaptive retry mode
// (docs/aws.md): per scope, a bucket of send tokens whose fill rate drops by a
// factor on each throttling response and grows back along a CUBIC curve. A
// client that is throttled slows to what the server admits and speeds up
// again once the throttling stops. A scope is not limited at all until its
// first throttle, and throttling of one scope never slows another. By
// default Adaptive fixes three weaknesses of the SDKs' algorithm: the
// collapse to its minimum rate when the first throttle arrives before any
// rate has been measured, the compounding of decreases when many throttled
// requests were already in flight, and the burst of a whole second's worth
// of sends that its full bucket releases after an idle period, such as a
// wait the server asked for (Adaptive's bucket holds a tenth of a second's
// worth). Set Reference to get the SDKs' exact behaviour.
//
// [Fixed] paces each scope at a constant rate with a burst, like Amazon
// SNS's maxReceivesPerSecond (docs/sns.md), and is built on
// golang.org/x/time/rate.
//
// # Interfaces
//
// The transport asks for what it needs through small interfaces, so that
// the state can live elsewhere: [Limiter] (a send token per attempt, as a
// [Reservation]), with [Recorder] for a limiter that learns from outcomes,
// [QuotaRecorder] for one that paces by the quota a server publishes (it
// hears such a response's outcome and quota in one call), [Releaser] for
// one that counts the attempts in flight, [Queue] for one whose
// reservations wait, and [FallbackCounter] for one kept in a store
// that may not answer (a retry quota kept in such a store implements it
// too). Adaptive and Fixed implement them in process; the
// module redisretry implements them on Redis, so that a fleet of replicas
// shares one send rate.
//
// Both limiters return the wait before an attempt instead of sleeping.
// Callers that wait on Adaptive should ask again after each sleep, as the
// SDKs do, because its rate may change meanwhile. Both refuse with ok false
// when FailFast or MaxWait forbids the wait; the transport then stops with
// [ErrRateLimited].
//
// # What this package does not do
//
// It sends no requests and knows nothing of HTTP: callers classify each
// attempt's outcome (package classify) and report it here. It never sleeps
// and starts no goroutine. Refill is computed from the elapsed time when a
// bucket is next used, and a wait is returned as a duration for the caller
// to spend under its own context and deadline. It holds no global state:
// every bucket belongs to a value the caller created.
//
// # Time
//
// Every method that depends on time has an …At form that takes the instant
// as a parameter, as golang.org/x/time/rate does. The short form calls it
// with the value's Now field, or the wall clock when Now is nil, so tests can
// run on a fake clock without sleeping.
package ratelimit
