package retrytransport

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"time"
	"weak"
)

// Attempts tells how far a request has gone: how many attempts, and how
// long it waited before them. The zero Attempts, no attempt at all, is what
// ResponseAttempts reports for a nil response.
type Attempts struct {
	// Count is the number of attempts: the attempt's own number, seen from
	// an attempt's context, or all the attempts of a request that ended.
	// The first attempt counts.
	Count int
	// Waited is the time the request spent waiting before its attempts, in
	// all: the backoff or the server's Retry-After before each retry, the
	// retry quota's wait, and the waits for client-side rate limiters' send
	// tokens. It does not count the attempts themselves.
	Waited time.Duration
}

// attemptKey is the context key of an attempt's *Attempts.
type attemptKey struct{}

// AttemptFromContext returns the attempt that ctx belongs to, for a
// RoundTripper that the Transport sends through (a tracer, a signer, the
// base transport): ctx is the context of the request it was handed. Every
// retry's request carries its Attempts, Count 2 for the first retry. A
// first attempt carries nothing, so that the common case costs nothing:
// for it, and for a context that is not an attempt's, AttemptFromContext
// returns Attempts{Count: 1}.
func AttemptFromContext(ctx context.Context) Attempts {
	if a, ok := ctx.Value(attemptKey{}).(*Attempts); ok {
		return *a
	}
	return Attempts{Count: 1}
}

// ResponseAttempts returns the attempts of the request that resp answers,
// for a response that a Transport returned (directly, or through an
// http.Client): Count is the number of attempts sent, the last being the
// one that got resp, and Waited the total wait before them. A response
// that came from a first attempt without waiting, or not from a
// Transport, gives Attempts{Count: 1}; a nil resp gives the zero Attempts.
//
// The record is kept with the response, not in it: resp's fields are the
// base transport's, and resp.Request is the caller's request. It goes
// away with the response.
func ResponseAttempts(resp *http.Response) Attempts {
	if resp == nil {
		return Attempts{}
	}
	if a, ok := responseAttempts.Load(weak.Make(resp)); ok {
		return a.(Attempts)
	}
	return Attempts{Count: 1}
}

// responseAttempts maps the responses that took more than one attempt, or
// waited, to their Attempts. The keys are weak: an entry is deleted when
// its response is collected.
var responseAttempts sync.Map // weak.Pointer[http.Response] -> Attempts

// rememberAttempts records a for resp, for ResponseAttempts.
func rememberAttempts(resp *http.Response, a Attempts) {
	k := weak.Make(resp)
	responseAttempts.Store(k, a)
	runtime.AddCleanup(resp, forgetAttempts, k)
}

func forgetAttempts(k weak.Pointer[http.Response]) { responseAttempts.Delete(k) }
