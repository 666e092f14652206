package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/retrytransport/retrytransport"
)

// requestTrace records what a contender did with one logical request, for
// the tables that count per request rather than per attempt (open loop,
// recovery): the attempts that reached the base transport, the 429s among
// them, and whether its first attempt waited for a client-side send token.
// The caller of send puts it in the request's context (withTrace); every
// attempt's context derives from that one, so the taps of traced find it.
type requestTrace struct {
	attempts  atomic.Int32 // attempts handed to the base transport
	throttles atomic.Int32 // of them, answered 429
	held      atomic.Bool  // the first attempt waited for a send token
}

// delayed reports whether the request was one attempt that first waited
// for a send token: a request of several attempts is not counted, since
// our transport reports their waits in one sum (its 429s show in the 429
// share).
func (tr *requestTrace) delayed() bool { return tr.held.Load() && tr.attempts.Load() == 1 }

// refused reports whether the request ended before its first attempt.
func (tr *requestTrace) refused() bool { return tr.attempts.Load() == 0 }

type traceKey struct{}

// withTrace returns ctx carrying tr.
func withTrace(ctx context.Context, tr *requestTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// traceOf returns the trace ctx carries, or nil.
func traceOf(ctx context.Context) *requestTrace {
	tr, _ := ctx.Value(traceKey{}).(*requestTrace)
	return tr
}

// heldAfter is how long the AWS SDK's GetAttemptToken must take for its
// first attempt to count as held: the SDK does not say whether its rate
// limiter slept, and without a sleep the call takes microseconds.
const heldAfter = time.Millisecond

// traced returns c with taps that fill each request's trace: an
// attemptTap beneath it, our transport's own account of the waits above
// it (waitAccount), and, for the AWS SDK's retryers, a timer on the send
// token of the first attempt (tokenTimer). A request without a trace
// passes through untouched.
func traced(c contender) contender {
	return contender{c.name, c.kind, func(base http.RoundTripper) http.RoundTripper {
		rt := c.wrap(attemptTap{base})
		if a, ok := rt.(*awsTransport); ok {
			a.retryer = tokenTimer{a.retryer}
		}
		return waitAccount{rt}
	}}
}

// attemptTap counts, beneath a contender, the attempts of each traced
// request and the 429s among them.
type attemptTap struct{ base http.RoundTripper }

// RoundTrip sends req through the base transport and counts it.
func (t attemptTap) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := traceOf(req.Context())
	if tr != nil {
		tr.attempts.Add(1)
	}
	resp, err := t.base.RoundTrip(req)
	if tr != nil && err == nil && resp.StatusCode == http.StatusTooManyRequests {
		tr.throttles.Add(1)
	}
	return resp, err
}

// waitAccount reads, above one of our transports, the transport's own
// account of each traced request: a request of one attempt whose Waited
// is positive waited for its send token (the retry quota is not asked
// before a first attempt). ResponseAttempts gives it for a response, the
// *RetryError for an error. Above any other RoundTripper it finds nothing.
type waitAccount struct{ rt http.RoundTripper }

// RoundTrip sends req through the transport and reads its account.
func (a waitAccount) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.rt.RoundTrip(req)
	tr := traceOf(req.Context())
	if tr == nil {
		return resp, err
	}
	var at retrytransport.Attempts
	var re *retrytransport.RetryError
	switch {
	case err == nil:
		at = retrytransport.ResponseAttempts(resp)
	case errors.As(err, &re):
		at = retrytransport.Attempts{Count: re.Attempts, Waited: re.Waited}
	}
	if at.Count == 1 && at.Waited > 0 {
		tr.held.Store(true)
	}
	return resp, err
}

// tokenTimer times the AWS SDK retryer's GetAttemptToken, where adaptive
// mode waits for its client-side rate limiter, before each traced
// request's first attempt: one over heldAfter held it.
type tokenTimer struct{ aws.RetryerV2 }

// GetAttemptToken gets the retryer's attempt token and times it.
func (t tokenTimer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	start := time.Now()
	release, err := t.RetryerV2.GetAttemptToken(ctx)
	if tr := traceOf(ctx); tr != nil && tr.attempts.Load() == 0 && time.Since(start) >= heldAfter {
		tr.held.Store(true)
	}
	return release, err
}
