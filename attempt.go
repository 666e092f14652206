package retrytransport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// attempt is one copy of a request sent to the base transport: an attempt
// itself or one of its hedges (Policy.Hedge). It holds the copy's request,
// where it goes, what it paid, and, once sent, what it got.
type attempt struct {
	n         int                   // the attempt's number; 1 is the first
	hedge     int                   // 0 for the attempt itself, k for its kth hedge
	req       *http.Request         // what is sent: the caller's own, or a copy; nil until prepared
	endpoint  int                   // where it goes: 0 for the request URL's own host (see route)
	scope     string                // its endpoint's scope: its limiters', statistics' and outcome's
	stats     *scopeCounters        // scope's statistics
	behaviour *scopeBehaviour       // scope's penalty and latency; nil when the policy keeps neither
	mark      *Attempts             // a retry's, in its context (AttemptFromContext); nil for a first attempt
	body      attemptBody           // what the base transport took of its body; nil if not watched
	pay       payment               // what the retry quotas were paid for it
	hedgePay  payment               // the winning hedge's payment, once the attempt took a hedge's result
	turn      ratelimit.Reservation // its place in the adaptive limiter's queue, until it is sent
	pass      breaker.Pass          // its scope's breaker's leave to send (Policy.Breaker), until settled
	permit    concurrency.Permit    // its place under its scope's concurrency limit (Policy.Concurrency), until settled
	timeout   time.Duration         // its timer: AttemptTimeout or what is left of MaxTotalTime; 0 for none
	cancel    context.CancelFunc    // a hedged copy's own context's
	start     time.Time             // when a hedged copy was sent
	took      time.Duration         // how long it took to its response headers, once received: a hedged copy's, or any copy's whose concurrency permit learns from latency

	resp          *http.Response // what it got, as the caller would
	err           error
	out           classify.Outcome
	notReplicated bool          // out says a secondary lacks the data: the next attempt goes to the primary
	unclassified  bool          // resp is returned as it came (compiled.unclassified)
	dropped       bool          // the caller cancelled: resp was closed, and the caller gets the context's error
	wait          time.Duration // the wait decided before the next attempt
	server        bool          // wait is the server's (Retry-After)
}

// prepare returns the next attempt, ready to be paced: its endpoint and
// scope, what decide paid for it, and its request, which is the caller's
// own for a first attempt that needs nothing changed, and otherwise a
// copy with the attempt's context, header and URL, and a body rewound for
// a retry, once the WithBeforeRetry hook had its say. Or it returns why
// the attempt is not to be sent: MaxTotalTime ran out, the body cannot be
// replayed, or the hook refused.
func (r *request) prepare(a, last *attempt) (stop error) {
	if a.n != 0 { // a slot used before: run's slots start zeroed
		*a = attempt{}
	}
	a.n = r.n + 1
	a.pay, r.paid = r.paid, payment{}
	if r.route != nil {
		a.endpoint = r.route.current()
	}
	r.place(a, a.endpoint)
	if !r.timeEnd.IsZero() && !r.t.now().Before(r.timeEnd) {
		return ErrTimeLimit
	}
	if a.n == 1 && r.replay == nil && r.watch == nil && r.cp.p.AttemptHeader == "" && a.endpoint == 0 {
		a.req = r.req
		return nil
	}
	var body io.ReadCloser
	if a.n > 1 {
		var err error
		if body, err = r.rewindBody(); err != nil {
			return err
		}
	}
	req, err := r.build(a, body)
	if err != nil {
		return err // only a replayed body fails, and then there is no body
	}
	if a.n > 1 && r.t.beforeRetry != nil {
		if err := r.beforeRetry(a, req, last); err != nil {
			closeReader(req.Body)
			return err
		}
	}
	a.req = req
	return nil
}

// place points a at endpoint, and at its scope.
func (r *request) place(a *attempt, endpoint int) {
	a.endpoint, a.scope = endpoint, r.home
	if endpoint != 0 {
		a.scope = r.cp.endpointScope(r.req, endpoint, r.home)
	}
	a.stats = r.t.stats.get(a.scope, r.cp)
	if r.cp.penalty != nil || r.cp.learnsLatency {
		a.behaviour = r.t.behaviour.get(a.scope, r.t.now)
	}
}

// rewindBody returns, before a retry, a fresh copy of the caller's body
// from its GetBody: nil when the request has no body, or a replayed one,
// which is only checked here and claimed by build. A GetBody that fails,
// or returns no body, ends the retries.
func (r *request) rewindBody() (io.ReadCloser, error) {
	switch {
	case r.replay != nil:
		if !r.replay.replayable() {
			return nil, errBodyNotReplayable
		}
	case r.req.GetBody != nil && hasBody(r.req):
		b, err := r.req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("%w: Request.GetBody: %w", ErrNotRetryable, err)
		}
		if b == nil {
			return nil, fmt.Errorf("%w: Request.GetBody returned a nil body", ErrNotRetryable)
		}
		return b, nil
	}
	return nil, nil
}

// build returns a's request: a shallow copy of the caller's with the
// attempt's context and a body that yields the whole of the caller's
// (body, from rewindBody, for a retry with GetBody). A retry's context
// carries its Attempts (AttemptFromContext). The header is copied when the
// attempt sets one (Policy.AttemptHeader) or a WithBeforeRetry hook may
// change it, and so is the URL for the hook.
func (r *request) build(a *attempt, body io.ReadCloser) (*http.Request, error) {
	ctx := r.attemptCtx
	if a.n > 1 {
		a.mark = &Attempts{Count: a.n} // Waited is set when it is sent, after pacing
		ctx = context.WithValue(ctx, attemptKey{}, a.mark)
	}
	req := r.req.WithContext(ctx)
	h, hook := r.cp.p.AttemptHeader, a.n > 1 && r.t.beforeRetry != nil
	if h != "" || hook {
		req.Header = r.req.Header.Clone()
		if req.Header == nil {
			req.Header = make(http.Header)
		}
		if h != "" {
			req.Header.Set(h, strconv.Itoa(a.n))
		}
	}
	if a.endpoint != 0 {
		r.cp.readdress(req, r.req, a.endpoint)
	} else if hook {
		u := *r.req.URL
		req.URL = &u
	}
	switch {
	case r.replay != nil:
		cur, ok := r.replay.claim()
		if !ok {
			return nil, errBodyNotReplayable
		}
		// GetBody lets the base transport rewind by itself where it knows
		// that is safe (net/http: an HTTP/2 stream refused or a GOAWAY'd
		// connection), as it would for a caller's own GetBody.
		req.Body, req.GetBody = cur, r.replay.rewind
		a.body = cur
	case body != nil:
		req.Body = body
	}
	if r.watch != nil && r.replay == nil && hasBody(req) {
		if m, ok := inMemory(req.Body); ok {
			r.watch.mem = memBody{r: m, before: m.Len()} // kept in the watch, which is allocated already
			a.body = &r.watch.mem
		} else {
			wb := &watchedBody{rc: req.Body}
			req.Body, a.body = wb, wb
		}
	}
	return req, nil
}

// beforeRetry hands req, a retry's request, to the WithBeforeRetry hook
// with the Event that announced the retry after last (its Waited, as then,
// without last's wait), and returns why the retry is not to be sent if the
// hook refuses it. A hook that rewound a replayed
// body through req.GetBody made the attempt's own copy stale; the attempt
// gets a fresh one.
func (r *request) beforeRetry(a *attempt, req *http.Request, last *attempt) error {
	announced := r.event(last)
	announced.Waited -= last.wait
	if err := r.t.beforeRetry(req, announced); err != nil {
		return fmt.Errorf("%w: %w", ErrRetryRefused, err)
	}
	if r.replay != nil && !r.replay.current(req.Body) {
		cur, ok := r.replay.claim()
		if !ok {
			return errBodyNotReplayable
		}
		req.Body, a.body = cur, cur
	}
	return nil
}

// unsend gives back what a, prepared and perhaps paced, took and will not
// use: its payment (cancelled, not refunded), its adaptive send token (see
// pace), its breaker's pass and its concurrency place (which learn
// nothing), and a retry's body, which the transport made; a first
// attempt's is the caller's, which abandon closes.
func (a *attempt) unsend() {
	a.pay.cancel()
	a.turn.Cancel()
	a.turn = ratelimit.Reservation{}
	a.pass.Drop()
	a.pass = breaker.Pass{}
	a.permit.Drop()
	a.permit = concurrency.Permit{}
	if a.n > 1 && a.req != nil {
		closeReader(a.req.Body)
	}
}

// release drains and closes a's response, once the next attempt is
// certain to go. The drain ends at Policy.ReadTimeout, and within
// MaxTotalTime takes at most half of what is left, so that the next
// attempt keeps the other half.
func (a *attempt) release(r *request) {
	if a.resp == nil {
		return
	}
	p := &r.cp.p
	d := p.ReadTimeout
	if !r.timeEnd.IsZero() {
		d = min(d, r.timeEnd.Sub(r.t.now())/2)
	}
	drain(a.resp, p.MaxDrain, d)
	a.resp = nil
}

// errBodyNotReplayable is the reason a planned retry is not sent when the
// replayed body turned out not to be replayable when the retry was
// prepared.
var errBodyNotReplayable = fmt.Errorf("%w: the request body grew past Policy.MaxBodyBuffer or its reader failed", ErrNotRetryable)
