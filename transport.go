// Package retrytransport is an http.RoundTripper that retries: set it as an
// http.Client's Transport and every request survives flaky, throttling
// servers the way the AWS SDKs' "standard" retry mode does.
//
//	client := &http.Client{Transport: retrytransport.New(nil)}
//
// Each attempt's outcome is classified (package classify), a per-host retry
// quota stops retrying during outages (package quota), waits follow
// jittered backoff (package backoff) or the server's Retry-After (package
// retryafter), and request bodies are replayed byte for byte. What to do
// for which host is a policy.Policy.
package retrytransport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport/policy"
)

// Transport is an http.RoundTripper that sends each request through a base
// RoundTripper and, when the attempt fails in a way that another attempt may
// fix, sends it again, as its host's policy.Policy says.
//
// For each request, Transport:
//
//   - picks the policy of the request URL's hostname (see WithHostPolicy),
//     and, when the request's context carries rules of its own
//     (WithRequestPolicy, WithoutRetries, WithReplay), retries it by
//     those, in its host's scope;
//   - waits, if the policy paces its scope (policy.Policy.Limiter,
//     RateLimit), for a send token, before every attempt;
//   - sends the request, classifies the outcome (policy.Policy.Classify);
//   - stops at a Success or Fatal outcome, after the last allowed attempt,
//     when the request may not be sent again (below), or when the retry
//     quota or budget of the request cannot pay for a retry;
//   - otherwise waits, for the server's Retry-After if it gave one, else for
//     the policy's backoff, and sends the request again. The failed response
//     is kept intact until the next attempt is certain to go (paced, within
//     the policy's time limits, with a body that can be replayed), then
//     drained and closed; if the next attempt cannot go, the caller gets
//     that response.
//
// A request is sent again after any retryable outcome if its method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it has an
// Idempotency-Key or X-Idempotency-Key header, as net/http's Transport also
// assumes; other requests (POST, PATCH, ...) only when the server provably
// did not process them: no connection was made, the HTTP/2 stream was
// refused, or the server throttled the request. The proof is checked
// against what the transport saw of the attempt: an error that looks like a
// failed dial, but came from the request body's own reader or followed a
// connection that was obtained, proves nothing. A body with GetBody is
// rewound with it; another body is recorded as it is sent, up to
// policy.Policy.MaxBodyBuffer, and replayed identically. Whether a body can
// be replayed is decided just before the attempt that would replay it; a
// body that cannot be replayed is sent once.
//
// Transport never waits past the request context's deadline: a wait that
// would end after it is not started. A Retry-After longer than the policy's
// MaxDelay is not slept either: the response is returned at once.
//
// The retry quota is kept per scope, the request URL's Host (host and port,
// as in "api.example.com:8443", lower-cased and without a trailing dot), so
// an outage of one server does not stop retries to another. Policies, by
// contrast, are chosen by hostname alone.
//
// A policy may name alternate endpoints of the same API
// (policy.Policy.Failover): a read's retries then fail over to them, each
// attempt's URL rewritten, each endpoint its own scope. It may also hedge
// (policy.Policy.Hedge): a safe request whose attempt is slow to answer
// gets a copy, and the first good answer wins. Hedging is the one feature
// that starts goroutines, one per copy, each ending with its round trip.
//
// A policy may also protect a server that slows down or stops answering
// instead of refusing: a concurrency limit (policy.Policy.Concurrency)
// gives each attempt a place among those in flight to its scope, learned
// from latency, and refuses the rest with concurrency.ErrLimited; a
// circuit breaker (policy.Policy.Breaker) fails every attempt of a scope
// whose server is not answering at once, with a *breaker.OpenError, and
// lets a probe through now and then. Both are asked before every attempt,
// first ones included, and a refused attempt is never sent (docs/overload.md).
//
// The base transport may retry on its own before Transport sees a failure:
// net/http's Transport silently resends an idempotent request whose reused
// keep-alive connection turned out to be closed. Such resends are not
// attempts here and cost no quota.
//
// An SDK that retries its requests on its own multiplies its attempts with
// these: turn its retries off. Where the SDK marks its attempts with their
// maximum (the AWS SDKs' amz-sdk-request), Transport sends each of them
// once, and the SDK's last one gets what is left of the policy's attempts:
// a call costs at most the larger of the two attempt counts. Where it marks
// them without (the Google Cloud clients' gccl-attempt-count), each attempt
// after the first is sent once, so a call costs at most their sum
// (docs/sdk.md, policy.Policy.IgnoreSDKAttempts).
//
// The zero Transport is ready to use: it behaves as New(nil), sending
// through a pooled go-cleanhttp transport with policy.Standard() for every
// host. A Transport must not be copied after first use.
//
// Transport keeps the retry quota state of every host it has seen, so reuse
// one Transport (as with http.Transport) rather than creating one per
// request. It is safe for concurrent use by multiple goroutines. It starts
// no goroutine of its own, but for hedged attempts; its timers (Policy.AttemptTimeout,
// Policy.ReadTimeout) run their functions on the runtime's.
type Transport struct {
	once    sync.Once // fills in the zero Transport's defaults
	base    http.RoundTripper
	hosts   hostTable
	err     error // a configuration error every RoundTrip returns
	now     func() time.Time
	since   func(time.Time) time.Duration // now() minus its argument; time.Since with the real clock, which reads only the monotonic one
	epoch   time.Time                     // now() when the defaults were filled in: since(epoch) is a reading of the monotonic clock alone
	sleep   func(context.Context, time.Duration) error
	observe func(Event) // the WithObserver observers, in one; nil for none
	final   func(Event) // the WithFinalObserver observers, in one; nil for none
	logger  *slog.Logger
	stats   statsTable
	// behaviour is kept apart from stats, which may be evicted.
	behaviour behaviourTable

	beforeRetry func(*http.Request, Event) error // see WithBeforeRetry
	sdkWarned   atomic.Bool                      // the SDK warning was logged
}

// New returns a Transport that sends requests through base and retries them
// as opts say. A nil base means a new pooled transport from
// go-cleanhttp (DefaultPooledTransport: keep-alives on, no shared global
// state). Without options every host gets policy.Standard().
//
// Every New owns the retry quotas it creates, one for each policy whose
// Quota is nil. A quota or limiter given in a policy is used as given: two
// Transports built with the same policy value share its state (per scope),
// as they share any quota.Quota or ratelimit.Limiter put in both
// their policies. The presets, such as policy.Adaptive(), make a new
// limiter on each call.
func New(base http.RoundTripper, opts ...Option) *Transport {
	c := config{def: policy.Standard(), now: time.Now, since: time.Since, sleep: sleepTimer}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	t := &Transport{base: base, now: c.now, since: c.since, sleep: c.sleep, observe: fanOut(c.observe), final: fanOut(c.final),
		logger: c.logger, beforeRetry: c.beforeRetry}
	t.hosts.def = compile(c.def, c.now)
	for _, h := range c.hosts {
		// The With* options checked the patterns already; a policy New
		// cannot use fails only the requests it is for (compiled.err).
		if err := t.hosts.add(h.pattern, compile(h.p, c.now)); err != nil && t.err == nil {
			t.err = err
		}
	}
	t.once.Do(t.fillDefaults)
	return t
}

// fillDefaults gives the fields that New sets, and the zero Transport
// lacks, their defaults.
func (t *Transport) fillDefaults() {
	if t.base == nil {
		t.base = cleanhttp.DefaultPooledTransport()
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.since == nil {
		t.since = time.Since
	}
	if t.sleep == nil {
		t.sleep = sleepTimer
	}
	t.epoch = t.now()
	if t.hosts.def == nil {
		t.hosts.def = compile(policy.Standard(), t.now)
	}
}

// RoundTrip sends req, and sends it again while its host's policy allows,
// as the Transport comment describes. It honours the http.RoundTripper
// contract: it never modifies req, and it closes req.Body, on every path
// (possibly after returning, once the base transport is done with it).
//
// If the last attempt got a response, RoundTrip returns it with a nil
// error, whatever its status, with its body unread. The same holds when a
// retry was planned but could not be sent after all (the rate limiter
// refused to wait, MaxTotalTime ran out, the body could not be rewound):
// the caller gets the response that made the transport plan it. The
// responses of earlier attempts are drained (up to policy.Policy.MaxDrain
// bytes, for at most its ReadTimeout) and closed, so their connections are
// reused.
//
// Otherwise the error is a *RetryError, on every path, those that end
// before the first attempt included (below): it says how many attempts
// were made and why retrying stopped; errors.Is and
// errors.As reach both the last attempt's transport error and the reason
// (ErrExhausted, ErrNotRetryable, ErrDeadline, ErrTimeLimit, ErrSDKRetries,
// quota.ErrExceeded, quota.ErrOverBudget, ratelimit.ErrRateLimited,
// ErrRetryRefused with the error of the WithBeforeRetry hook that refused
// the retry, or the context's error when the caller cancelled), and its
// Timeout method reports a deadline. http.Client.Do wraps it in a
// *url.Error; when http.Client's own Timeout fires first, net/http may
// report its own error instead.
//
// A request refused before its first attempt gets a *RetryError too, with
// Attempts 0: its host's policy, or the RequestPolicy its context carries,
// is one New cannot use (ErrInvalidPolicy; Err says what in it is wrong),
// its URL is nil (ErrNotRetryable), a client-side rate limiter refused to
// wait for its first send token (an error wrapping
// ratelimit.ErrRateLimited), that wait would have ended past the context's
// deadline (ErrDeadline) or the policy's MaxTotalTime (ErrTimeLimit), or
// the caller's context ended while it waited.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.once.Do(t.fillDefaults)
	switch {
	case t.err != nil:
		return refuse(req, ErrInvalidPolicy, t.err)
	case req.URL == nil:
		return refuse(req, ErrNotRetryable, errNilURL)
	}
	cp := t.hosts.lookup(req.URL)
	if cp.err != nil {
		return refuse(req, ErrInvalidPolicy, cp.err)
	}
	if cp = cp.forRequest(req.Context()); cp.err != nil {
		return refuse(req, ErrInvalidPolicy, cp.err)
	}
	var r request
	r.start(t, req, cp)
	return r.run()
}

// refuse ends req, which cannot be attempted at all, before it is
// started: its body is closed, and the caller gets a *RetryError of 0
// attempts for reason, with err saying what is wrong.
func refuse(req *http.Request, reason, err error) (*http.Response, error) {
	closeReader(req.Body)
	return nil, &RetryError{Reason: reason, Err: err}
}

// errNilURL is why a request with a nil URL is refused.
var errNilURL = errors.New("retrytransport: nil Request.URL")

// fanOut returns one function that calls each of fs in turn, or nil for
// none.
func fanOut(fs []func(Event)) func(Event) {
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(ev Event) {
		for _, f := range fs {
			f(ev)
		}
	}
}

// closeReader closes rc if there is one.
func closeReader(rc io.ReadCloser) {
	if rc != nil {
		rc.Close()
	}
}

// hasBody reports whether req has a body to send.
func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

// sleepTimer waits for d or until ctx is done, whichever comes first.
func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it has such a method (as *http.Transport does). http.Client calls it.
func (t *Transport) CloseIdleConnections() {
	t.once.Do(t.fillDefaults)
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := t.base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}
