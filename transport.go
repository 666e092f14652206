// Package retrytransport is an http.RoundTripper that retries: set it as an
// http.Client's Transport and every request survives flaky, throttling
// servers the way the AWS SDKs' "standard" retry mode does.
//
//	client := &http.Client{Transport: retrytransport.New(nil)}
//
// Each attempt's outcome is classified (package classify), a per-host retry
// quota stops retrying during outages (package ratelimit), waits follow
// jittered backoff (package backoff) or the server's Retry-After (package
// retryafter), and request bodies are replayed byte for byte. What to do
// for which host is a policy.Policy.
package retrytransport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// Transport is an http.RoundTripper that sends each request through a base
// RoundTripper and, when the attempt fails in a way that another attempt may
// fix, sends it again, as its host's policy.Policy says.
//
// For each request, Transport:
//
//   - picks the policy of the request URL's hostname (see WithHostPolicy);
//   - waits, if the policy paces its scope (policy.Policy.Adaptive,
//     RateLimit), for a send token, before every attempt;
//   - sends the request, classifies the outcome (policy.Policy.Classify);
//   - stops at a Success or Fatal outcome, after the last allowed attempt,
//     when the request may not be sent again (below), or when the retry
//     quota of the request's host cannot pay for a retry;
//   - otherwise waits, for the server's Retry-After if it gave one, else for
//     the policy's backoff, drains and closes the failed response, and sends
//     the request again.
//
// A request is sent again after any retryable outcome if its method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it has an
// Idempotency-Key or X-Idempotency-Key header, as net/http's Transport also
// assumes; other requests (POST, PATCH, ...) only when the server provably
// did not process them: no connection was made, the HTTP/2 stream was
// refused, or the server throttled the request. A body with GetBody is
// rewound with it; another body is recorded as it is sent, up to
// policy.Policy.MaxBodyBuffer, and replayed identically. A body that cannot
// be replayed is sent once.
//
// Transport never waits past the request context's deadline: a wait that
// would end after it is not started. A Retry-After longer than the policy's
// MaxDelay is not slept either: the response is returned at once.
//
// The retry quota is kept per scope, the request URL's Host (host and port,
// as in "api.example.com:8443"), so an outage of one server does not stop
// retries to another. Policies, by contrast, are chosen by hostname alone.
//
// The base transport may retry on its own before Transport sees a failure:
// net/http's Transport silently resends an idempotent request whose reused
// keep-alive connection turned out to be closed. Such resends are not
// attempts here and cost no quota.
//
// Transport keeps the retry quota state of every host it has seen, so reuse
// one Transport (as with http.Transport) rather than creating one per
// request. It is safe for concurrent use by multiple goroutines, and it
// starts no goroutine of its own.
type Transport struct {
	base    http.RoundTripper
	hosts   hostTable
	err     error // a configuration error every RoundTrip returns
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	observe func(Event)
	logger  *slog.Logger
	stats   statsTable
}

// hostState is a policy with its defaults filled in, and the quota that
// this Transport uses for it.
type hostState struct {
	p        policy.Policy
	quota    *ratelimit.Quota    // nil when the policy disables it
	adaptive *ratelimit.Adaptive // nil unless the policy is adaptive
	fixed    *ratelimit.Fixed    // nil unless the policy has a fixed rate
}

// newHostState resolves p. A quota the Transport creates runs on the
// Transport's clock; a quota the user supplied keeps its own.
func newHostState(p policy.Policy, now func() time.Time) *hostState {
	st := &hostState{p: p.WithDefaults()}
	if !p.DisableQuota {
		st.quota = p.Quota
		if st.quota == nil {
			st.quota = &ratelimit.Quota{Now: now}
		}
	}
	st.adaptive = p.Limiter
	if st.adaptive == nil && p.Adaptive {
		st.adaptive = &ratelimit.Adaptive{Now: now}
	}
	st.fixed = p.RateLimit
	return st
}

// New returns a Transport that sends requests through base and retries them
// as opts say. A nil base means a new pooled transport from
// go-cleanhttp (DefaultPooledTransport: keep-alives on, no shared global
// state). Without options every host gets policy.Standard().
//
// Every New owns its retry quotas: two Transports never share quota state
// unless the same *ratelimit.Quota is put in both their policies.
func New(base http.RoundTripper, opts ...Option) *Transport {
	c := config{def: policy.Standard(), now: time.Now, sleep: sleepTimer}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if base == nil {
		base = cleanhttp.DefaultPooledTransport()
	}
	t := &Transport{base: base, now: c.now, sleep: c.sleep, observe: c.observe, logger: c.logger}
	t.hosts.def = newHostState(c.def, c.now)
	for _, h := range c.hosts {
		if err := t.hosts.add(h.pattern, newHostState(h.p, c.now)); err != nil && t.err == nil {
			t.err = err
		}
	}
	return t
}

// RoundTrip sends req, and sends it again while its host's policy allows,
// as the Transport comment describes. It honours the http.RoundTripper
// contract: it never modifies req, and it closes req.Body (possibly after
// returning, once the base transport is done with it).
//
// If the last attempt got a response, RoundTrip returns it with a nil
// error, whatever its status, with its body unread. The responses of
// earlier attempts are drained (up to policy.Policy.MaxDrain bytes) and
// closed, so their connections are reused.
//
// Otherwise the error is a *RetryError, which says how many attempts were
// made and why retrying stopped; errors.Is and errors.As reach both the last
// attempt's transport error and the reason (ErrExhausted, ErrNotRetryable,
// ErrDeadline, ErrBudget, ratelimit.ErrQuotaExceeded,
// ratelimit.ErrRateLimited, or the context's error when the caller
// cancelled), and its Timeout method reports a deadline. http.Client.Do
// wraps it in a *url.Error; when http.Client's own Timeout fires first,
// net/http may report its own error instead.
//
// Two errors come before any attempt, and so are not a *RetryError: an
// invalid host pattern given to New, and a client-side rate limiter that
// refuses to wait for the first attempt (wrapping ratelimit.ErrRateLimited,
// or ErrDeadline when the wait would pass the deadline).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.err != nil || req.URL == nil {
		closeBody(req)
		if t.err != nil {
			return nil, t.err
		}
		return nil, errors.New("retrytransport: nil Request.URL")
	}
	st := t.hosts.lookup(req.URL.Hostname())
	if st.p.MaxAttempts == 1 && st.adaptive == nil && st.fixed == nil {
		t.stats.get(st.scope(req), st).attempts.Add(1)
		return t.base.RoundTrip(req)
	}
	return t.roundTrip(req, st)
}

// scope returns the key of req's quota and limiter buckets.
func (st *hostState) scope(req *http.Request) string {
	if st.p.Scope != nil {
		return st.p.Scope(req)
	}
	return req.URL.Host
}

// roundTrip is the attempt loop of SPEC §1.
func (t *Transport) roundTrip(req *http.Request, st *hostState) (*http.Response, error) {
	p := &st.p
	ctx := req.Context()
	scope := st.scope(req)
	counters := t.stats.get(scope, st)
	idempotent := p.RetryNonIdempotent || classify.IsIdempotent(req)

	var rec *recorder
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		rec = newRecorder(req.Body, p.MaxBodyBuffer)
		defer rec.finish()
	}
	attemptCtx := ctx
	var watch *connWatch
	if !idempotent {
		watch = new(connWatch)
		attemptCtx = watch.context(ctx)
	}

	var budgetEnd time.Time // zero: no budget
	if p.MaxTotalTime > 0 {
		budgetEnd = t.now().Add(p.MaxTotalTime)
	}
	cost := 0 // quota tokens paid for the current attempt; 0 for the first
	var lastErr error
	for attempt := 1; ; attempt++ {
		if st.adaptive != nil || st.fixed != nil {
			if err := t.pace(ctx, st, scope); err != nil {
				if errors.Is(err, ratelimit.ErrRateLimited) {
					counters.rateLimited.Add(1)
				}
				if attempt == 1 {
					if rec == nil {
						closeBody(req)
					}
					return nil, fmt.Errorf("retrytransport: before the first attempt: %w", err)
				}
				// The previous response was already drained and closed
				// when the retry was decided.
				return nil, &RetryError{Attempts: attempt - 1, Reason: err, Err: orErr(lastErr, err)}
			}
		}
		timeout := p.AttemptTimeout
		if !budgetEnd.IsZero() {
			left := budgetEnd.Sub(t.now())
			if left <= 0 {
				return nil, &RetryError{Attempts: attempt - 1, Reason: ErrBudget, Err: orErr(lastErr, ErrBudget)}
			}
			if timeout == 0 || left < timeout {
				timeout = left
			}
		}
		areq, err := attemptRequest(req, attempt, rec, attemptCtx)
		if err != nil {
			return nil, &RetryError{Attempts: attempt - 1, Reason: ErrNotRetryable,
				Err: fmt.Errorf("retrytransport: rewinding request body: %w", err)}
		}
		var timer *attemptTimer
		if timeout > 0 {
			areq, timer = startAttemptTimer(areq, timeout)
		}
		if watch != nil {
			watch.reset()
		}
		counters.attempts.Add(1)
		if attempt > 1 {
			counters.retries.Add(1)
		}
		resp, err := t.base.RoundTrip(areq)
		if resp != nil && areq != req {
			resp.Request = req // the caller's request, not our per-attempt copy
		}
		out := p.Classify(areq, resp, err)
		if timer != nil && timer.stop(resp) && ctx.Err() == nil {
			out = classify.Outcome{Kind: classify.Timeout, Reason: "attempt timeout"}
			if err != nil {
				err = errAttemptTimeout
			}
		}
		if st.adaptive != nil && ctx.Err() == nil {
			st.adaptive.Record(scope, out.Kind)
		}
		lastErr = err
		if out.Kind == classify.Throttle {
			counters.throttles.Add(1)
		}
		if out.Kind == classify.Success && err == nil {
			if st.quota != nil {
				if cost > 0 {
					st.quota.Refund(scope, cost)
				} else if attempt == 1 {
					st.quota.Success(scope)
				}
			}
			return resp, nil
		}
		if !out.Retryable() {
			reason := ErrNotRetryable
			if ctx.Err() != nil {
				reason = ctx.Err()
			}
			return giveUp(resp, err, attempt, reason)
		}

		ev := Event{Request: req, Scope: scope, Attempt: attempt, Outcome: out, Err: err, Quota: -1}
		if resp != nil {
			ev.StatusCode = resp.StatusCode
		}
		unsent := out.Unprocessed || (watch != nil && watch.neverConnected())
		switch {
		case !idempotent && !unsent, rec != nil && !rec.replayable():
			return t.stop(st, ev, resp, err, ErrNotRetryable)
		case attempt >= p.MaxAttempts:
			return t.stop(st, ev, resp, err, ErrExhausted)
		}

		var reason error
		cost, reason = t.planRetry(ctx, st, &ev, resp, budgetEnd)
		if reason != nil {
			if errors.Is(reason, ratelimit.ErrQuotaExceeded) {
				counters.quotaRefusals.Add(1)
			}
			return t.stop(st, ev, resp, err, reason)
		}
		t.emit(ev)
		drain(resp, p.MaxDrain)
		if serr := t.sleep(ctx, ev.Delay); serr != nil {
			st.refund(scope, cost)
			return nil, &RetryError{Attempts: attempt, Reason: serr, Err: serr}
		}
	}
}

// planRetry decides the wait before the retry that ev's outcome calls for
// and pays the retry quota for it. It sets ev.Delay, ev.ServerDelay and
// ev.Quota and returns the tokens paid, or, with nothing paid, why there is
// to be no retry: the server asked for more than MaxDelay, the quota cannot
// pay within MaxDelay, or the wait would end past the context's deadline or
// the policy's budget (budgetEnd; zero for none).
func (t *Transport) planRetry(ctx context.Context, st *hostState, ev *Event, resp *http.Response, budgetEnd time.Time) (cost int, reason error) {
	p := &st.p
	now := t.now()
	delay, server := st.delay(ev.Attempt, ev.Outcome.Kind, resp, now)
	ev.ServerDelay = server
	if server && delay > p.MaxDelay {
		return 0, ErrServerDelay
	}
	if st.quota != nil {
		c, wait, ok := st.quota.Acquire(ev.Scope, ev.Outcome.Kind)
		if !ok {
			return 0, ratelimit.ErrQuotaExceeded
		}
		// Wait mode: a bucket that refills too slowly for a retry within
		// MaxDelay refuses, as waiting longer would break the policy's cap.
		if delay+wait > p.MaxDelay {
			st.refund(ev.Scope, c)
			return 0, ratelimit.ErrQuotaExceeded
		}
		cost, delay = c, delay+wait
	}
	end := now.Add(delay)
	if dl, ok := ctx.Deadline(); ok && end.After(dl) {
		st.refund(ev.Scope, cost)
		return 0, ErrDeadline
	}
	if !budgetEnd.IsZero() && end.After(budgetEnd) {
		st.refund(ev.Scope, cost)
		return 0, ErrBudget
	}
	ev.Delay = delay
	if st.quota != nil {
		ev.Quota = st.quota.Level(ev.Scope)
	}
	return cost, nil
}

// pace waits until the scope's client-side rate limiters let an attempt
// go. A fixed-rate reservation is held while waiting, as x/time/rate's Wait
// does; the adaptive limiter is asked again after each wait, as the AWS
// SDKs do, because its rate may change while the attempt waits. A wait that
// would end after ctx's deadline is not started (ErrDeadline); a limiter
// that refuses to wait gives ratelimit.ErrRateLimited.
func (t *Transport) pace(ctx context.Context, st *hostState, scope string) error {
	if f := st.fixed; f != nil {
		w, ok := f.Reserve(scope)
		if !ok {
			return fmt.Errorf("fixed rate of scope %q needs a %v wait: %w", scope, w, ratelimit.ErrRateLimited)
		}
		if err := t.wait(ctx, w); err != nil {
			f.Cancel(scope)
			return err
		}
	}
	if a := st.adaptive; a != nil {
		for {
			w, ok := a.Reserve(scope)
			if !ok {
				return fmt.Errorf("adaptive rate of scope %q needs a %v wait: %w", scope, w, ratelimit.ErrRateLimited)
			}
			if w == 0 {
				return nil
			}
			a.Cancel(scope)
			if err := t.wait(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// orErr returns err, or def if err is nil.
func orErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// wait sleeps for d, unless that would end after ctx's deadline.
func (t *Transport) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && t.now().Add(d).After(dl) {
		return ErrDeadline
	}
	return t.sleep(ctx, d)
}

// delay is the wait before retry n after an outcome of kind k: the server's
// (reported by server) if the response carries a trusted delay header, else
// the backoff capped at MaxDelay. A server delay is never jittered; with a
// ServerDelayBound it is kept between the backoff and the backoff plus the
// bound. The caller refuses a server delay above MaxDelay.
func (st *hostState) delay(n int, k classify.Kind, resp *http.Response, now time.Time) (d time.Duration, server bool) {
	p := &st.p
	strategy := p.Backoff
	if k == classify.Throttle && p.ThrottleBackoff != nil {
		strategy = p.ThrottleBackoff
	}
	if resp != nil && !p.IgnoreDelayHeaders {
		d, _, server = retryafter.ParseSources(resp.Header, now, p.DelayHeaders)
	}
	if server && p.ServerDelayBound <= 0 {
		return d, true
	}
	b := min(max(strategy.Delay(n), 0), p.MaxDelay)
	if !server {
		return b, false
	}
	hi := b + p.ServerDelayBound
	if hi < b { // overflow: the bound is effectively none
		hi = d
	}
	return max(b, min(d, hi)), true
}

// attemptRequest returns the request to send as attempt number attempt: req
// itself for a first attempt that needs nothing changed, else a shallow
// copy with the attempt's context and a fresh body.
func attemptRequest(req *http.Request, attempt int, rec *recorder, ctx context.Context) (*http.Request, error) {
	if attempt == 1 && rec == nil && ctx == req.Context() {
		return req, nil
	}
	r := req.WithContext(ctx)
	switch {
	case rec != nil:
		// GetBody lets the base transport rewind by itself where it knows
		// that is safe (net/http: an HTTP/2 stream refused or a GOAWAY'd
		// connection), as it would for a caller's own GetBody.
		r.Body, r.GetBody = rec.next(), rec.rewind
	case attempt > 1 && req.GetBody != nil:
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	return r, nil
}

// stop ends the loop for a retryable outcome that will not be retried: it
// tells the observer why, and returns what the caller gets.
func (t *Transport) stop(st *hostState, ev Event, resp *http.Response, err error, reason error) (*http.Response, error) {
	ev.Stop = reason
	if st.quota != nil {
		ev.Quota = st.quota.Level(ev.Scope)
	}
	t.emit(ev)
	return giveUp(resp, err, ev.Attempt, reason)
}

// giveUp returns the last attempt's result: its response untouched, or its
// error wrapped in a *RetryError.
func giveUp(resp *http.Response, err error, attempts int, reason error) (*http.Response, error) {
	if err == nil {
		return resp, nil
	}
	return nil, &RetryError{Attempts: attempts, Reason: reason, Err: err}
}

func (st *hostState) refund(scope string, cost int) {
	if st.quota != nil && cost > 0 {
		st.quota.Refund(scope, cost)
	}
}

// drain reads up to max bytes of a failed response's body and closes it, so
// that the connection goes back to the pool instead of being dropped.
func drain(resp *http.Response, max int64) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, max)
	resp.Body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

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
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := t.base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}
