package retrytransport

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Sentinel reasons for giving up, matched with errors.Is on the error
// RoundTrip returns (or on the RetryError's Reason).
var (
	// ErrExhausted means every attempt the policy allows was made.
	ErrExhausted = errors.New("retrytransport: attempts exhausted")
	// ErrNotRetryable means the last outcome may not be retried: it was
	// final (a 4xx, a certificate error, a malformed URL), the request is
	// not idempotent and the server may have processed it, or its body
	// cannot be replayed. Before any attempt, it means the request cannot
	// be sent at all: its URL is nil.
	ErrNotRetryable = errors.New("retrytransport: not retryable")
	// ErrInvalidPolicy means the policy of the request's host is one New
	// cannot use (policy.Policy.Validate reports the same mistakes), so no
	// attempt was made: New never fails, and the requests that policy is
	// for fail instead, with a *RetryError whose Err says which setting is
	// wrong and why. So do the requests that carry a RequestPolicy made of
	// a policy that Validate rejects (see NewRequestPolicy).
	ErrInvalidPolicy = errors.New("retrytransport: the policy cannot be used")
	// ErrDeadline means the wait before the next attempt would have ended
	// after the context's deadline (or less than the policy's
	// TerminationBuffer before it), so it was not started.
	ErrDeadline = errors.New("retrytransport: next attempt would pass the context deadline")
	// ErrTimeLimit means a time limit of the policy ran out: MaxTotalTime
	// was spent, or the wait before the next attempt would have ended
	// after it (or less than its TerminationBuffer before it), or would
	// have taken the request's waits past MaxTotalWait.
	ErrTimeLimit = errors.New("retrytransport: a time limit of the policy ran out (MaxTotalTime or MaxTotalWait)")
	// ErrServerDelay means the server asked, with Retry-After, for a longer
	// wait than the policy's MaxDelay allows, and the retry would have gone
	// back to it (one that fails over to another endpoint waits its
	// backoff instead). It only appears in an Event: the caller gets the
	// server's response.
	ErrServerDelay = errors.New("retrytransport: server asked for a longer wait than the policy allows")
	// ErrSDKRetries means the request's sender retries it on its own, as it
	// marked in a header (the AWS SDKs' amz-sdk-request, the Google Cloud
	// clients' gccl-attempt-count; see policy.Policy.IgnoreSDKAttempts), so
	// this attempt was not retried here: the SDK sends its next attempt
	// itself.
	ErrSDKRetries = errors.New("retrytransport: the SDK retries this request itself")
	// ErrRetryRefused means the WithBeforeRetry hook refused the retry.
	// The reason wraps both it and the hook's own error.
	ErrRetryRefused = errors.New("retrytransport: the BeforeRetry hook refused the retry")
)

// RetryError is the error RoundTrip returns, always as a *RetryError, for
// every request that ends without a response: its last attempt produced
// none, or no attempt was made at all (Attempts is 0). It keeps both the
// last attempt's transport error and why retrying stopped; errors.Is and
// errors.As see both (so errors.Unwrap, which knows only single-error
// chains, yields nil). http.Client.Do wraps it in a *url.Error.
type RetryError struct {
	// Attempts is the number of attempts made, the first included. It is
	// 0 for a request refused before its first attempt: its policy cannot
	// be used (ErrInvalidPolicy), its URL is nil (ErrNotRetryable), a
	// client-side rate limiter refused to wait for its send token
	// (ratelimit.ErrRateLimited), the wait for that token would have ended
	// past the context's deadline (ErrDeadline) or the policy's
	// MaxTotalTime (ErrTimeLimit), or the caller's context ended first.
	Attempts int
	// Reason is why retrying stopped, or, with Attempts 0, why no attempt
	// was made: ErrExhausted, ErrNotRetryable, ErrDeadline, ErrTimeLimit,
	// ErrSDKRetries, ErrInvalidPolicy, quota.ErrExceeded,
	// quota.ErrOverBudget, ratelimit.ErrRateLimited, ErrRetryRefused
	// (wrapping the error of the WithBeforeRetry hook that refused the
	// retry), or the context's error. It is also the Stop of the
	// request's final Event, if it has one (a request refused for its
	// policy or a nil URL has none).
	Reason error
	// Err is the last attempt's transport error, or the context's error if
	// the caller cancelled while waiting. With Attempts 0 there was no
	// attempt: Err is the error that says what is wrong, for
	// ErrInvalidPolicy (the setting of the policy and why) and a nil URL,
	// and Reason itself otherwise. It is never nil.
	Err error
	// Waited is the time the request spent waiting before its attempts
	// (see Attempts).
	Waited time.Duration
}

// Error reads "retrytransport: gave up after N attempts (reason): cause",
// or, for a request refused before its first attempt, "retrytransport: no
// attempt made (reason): cause". A cause that is the reason itself is not
// said twice: "retrytransport: no attempt made (deadline too near)".
func (e *RetryError) Error() string {
	var head string
	switch e.Attempts {
	case 0:
		head = "retrytransport: no attempt made ("
	case 1:
		head = "retrytransport: gave up after 1 attempt ("
	default:
		head = "retrytransport: gave up after " + strconv.Itoa(e.Attempts) + " attempts ("
	}
	switch {
	case e.Err == nil:
		return head + reasonText(e.Reason) + "): no error"
	case e.Err == e.Reason:
		return head + reasonText(e.Reason) + ")"
	}
	return head + reasonText(e.Reason) + "): " + e.Err.Error()
}

// Timeout reports whether the request failed for lack of time: the
// context's deadline, a per-attempt timeout, ErrDeadline or ErrTimeLimit, or a
// last error that is itself a timeout. It makes the *url.Error that
// http.Client.Do returns report Timeout() as it does without this
// transport, and lets the error satisfy net.Error-style checks.
func (e *RetryError) Timeout() bool {
	if e.Reason == ErrDeadline || e.Reason == ErrTimeLimit ||
		errors.Is(e.Reason, context.DeadlineExceeded) || errors.Is(e.Err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// Unwrap returns the last error and the reason, for errors.Is and errors.As.
func (e *RetryError) Unwrap() []error { return []error{e.Err, e.Reason} }

func reasonText(r error) string {
	switch r {
	case nil:
		return "unknown"
	case ErrExhausted:
		return "attempts exhausted"
	case ErrNotRetryable:
		return "not retryable"
	case ErrDeadline:
		return "deadline too near"
	case ErrTimeLimit:
		return "MaxTotalTime or MaxTotalWait ran out"
	case ErrServerDelay:
		return "Retry-After above the policy's MaxDelay"
	case ErrSDKRetries:
		return "left to the SDK's own retries"
	case ErrInvalidPolicy:
		return "invalid policy"
	}
	return r.Error()
}
