package retrytransport

import (
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// Event tells an observer what the Transport decided after an attempt.
//
// An attempt whose outcome is retryable produces one: either the Transport
// will retry after Delay, or, when Stop is non-nil, it will not, and why.
// A retry that was announced and then could not be sent (its send token
// refused, MaxTotalTime spent, its body not replayable after all, the
// WithBeforeRetry hook refused it) is followed by a second Event for the
// same attempt, with Stop set.
//
// Every request that took more than one attempt, or whose retryable
// outcome was not retried, or that was refused before its first attempt
// (by MaxTotalTime, a rate limiter, or the caller's context while it
// waited), ends with exactly one Event whose Final is true: the Event with
// Stop set, or, when the last attempt succeeded or failed for good, an
// Event for that attempt. A request that ends at its first attempt with a
// Success or Fatal outcome produces no Event for the observers of
// WithObserver; nor does a response under a policy with MaxAttempts 1 and
// no time bound or pacing, which the Transport hands back as the base
// transport returned it, unclassified (a transport error there still ends
// with a final Event). Observers of WithFinalObserver get the final Event
// of every request, these included.
type Event struct {
	// Request is the caller's request. Treat it as read-only.
	Request *http.Request
	// Scope is the key of the request's retry quota bucket: the URL's
	// host:port, lower-cased and without a trailing dot, unless the
	// policy's Scope function says otherwise.
	Scope string
	// Endpoint is, for a request that may fail over (policy.Policy.Failover),
	// the host (host:port, as in url.URL.Host) the attempt was sent to: the
	// request URL's own, or an alternate it failed over to. In a final
	// Event it is the last attempt's; for a request refused before its
	// first attempt, the one it would have gone to. It is empty for every
	// other request, which always goes to the request URL's host.
	Endpoint string
	// Attempt is the attempt that just ended; 1 is the first. In a final
	// Event it is the number of attempts sent; 0 means the request was
	// refused before its first attempt (Stop says why; Outcome is zero).
	Attempt int
	// Hedges is the number of copies the request has sent so far beside
	// its attempts, after they were slow to answer (Policy.Hedge). The
	// Outcome, StatusCode, Err and Endpoint are those of the copy whose
	// result the attempt took.
	Hedges int
	// Outcome is how that attempt was classified.
	Outcome classify.Outcome
	// StatusCode is the attempt's response status, or 0 if it got none.
	StatusCode int
	// Err is the attempt's transport error, or nil if it got a response.
	Err error
	// Delay is the wait before the next attempt; zero when Stop is set and
	// in a final Event.
	Delay time.Duration
	// ServerDelay reports that Delay came from the server (Retry-After)
	// rather than from the backoff strategy.
	ServerDelay bool
	// Waited is the time the request has waited before its attempts so
	// far, Delay not included (see Attempts); in a final Event, in all.
	Waited time.Duration
	// Quota is the retry quota level of Scope after this decision, in
	// tokens; -1 when the policy has no quota. A retry pays the quota of
	// the scope it goes to: for one that fails over to another endpoint,
	// the payment shows in the Event of the attempt it becomes.
	Quota float64
	// Final reports that this is the request's last Event: it ends with
	// this attempt's result.
	Final bool
	// RequestPolicy reports that the request carried rules of its own
	// (WithRequestPolicy, WithoutRetries or WithReplay), by which it was
	// retried instead of by its host's policy; Scope and Quota are still
	// the host's.
	RequestPolicy bool
	// Stop is nil when a retry follows, and in the final Event of a
	// request whose last attempt succeeded. Otherwise it says why the
	// request ends, an error that errors.Is matches to one of:
	// ErrExhausted (the last allowed attempt), ErrNotRetryable (a Fatal
	// outcome, a request that is not idempotent and may have been
	// processed, or a body that cannot be replayed), ErrServerDelay (the
	// server asked for a longer wait than MaxDelay), ErrDeadline (the wait
	// would pass the context's deadline), ErrTimeLimit (the policy's
	// MaxTotalTime or MaxTotalWait ran out), ErrSDKRetries (the SDK that
	// sent the request retries it itself), quota.ErrExceeded (the retry
	// quota, the circuit breaker, cannot pay within MaxDelay),
	// quota.ErrOverBudget (the policy's retry budget cannot),
	// ratelimit.ErrRateLimited (a client-side rate limiter refused to wait
	// for the retry's send token), breaker.ErrOpen (the scope's circuit
	// breaker refused the attempt: a *breaker.OpenError, with the last
	// failure and until when the circuit is open), concurrency.ErrLimited
	// (the scope's concurrency limit had no place for it) or
	// ErrRetryRefused (wrapping the error
	// of the WithBeforeRetry hook that refused the retry); or the
	// context's error, when the caller cancelled. In the
	// final Event of a request whose last attempt succeeded, it is nil.
	Stop error
}

// emit hands ev to the observer and the logger, if any. The logger gets
// retries at Debug, and final events at Info: "recovered" after a retry
// succeeded, "gave up" otherwise. A request the SDK retries itself is not
// given up: its stop is at Debug too.
func (t *Transport) emit(ev Event) {
	if t.observe != nil {
		t.observe(ev)
	}
	if t.logger != nil {
		t.log(ev)
	}
}
