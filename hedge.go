package retrytransport

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// hedgeConfig is a policy.Hedge as the transport runs it, normalised by
// policy.Policy.WithDefaults: it has a positive Delay or Quantile.
type hedgeConfig policy.Hedge

// copies returns how many copies h may send beside each attempt:
// MaxHedges, 1 when MaxHedges is zero or negative, and policy.HedgeLimit
// when it is above that.
func (h *hedgeConfig) copies() int { return min(max(h.MaxHedges, 1), policy.HedgeLimit) }

// mayHedge reports whether req's attempts may be hedged: its policy
// hedges, its method is idempotent, so that two copies at once do what one
// does (an idempotency key is not enough: see classify.IdempotentMethod),
// its body, if any, can be made again with GetBody, and no SDK that
// retries it itself marked it (sdkRetries).
func (cp *compiled) mayHedge(req *http.Request) bool {
	return cp.hedge != nil && classify.IdempotentMethod(req.Method) && (!hasBody(req) || req.GetBody != nil) && !cp.sdkRetries(req)
}

// sdkRetries reports whether req bears the mark of an SDK that retries
// its requests itself (sdkAttemptOf), unless the policy ignores such marks
// (Policy.IgnoreSDKAttempts). Such a request is not hedged: the SDK makes
// its own attempts, the transport sends each of them as few times as it
// can (limitForSDK), and hedges would multiply them again, the SDK's last
// attempt included. A mark with max=1 says the SDK's retries are off.
func (cp *compiled) sdkRetries(req *http.Request) bool {
	if cp.p.IgnoreSDKAttempts || len(req.Header) == 0 {
		return false
	}
	a, ok := sdkAttemptOf(req.Header)
	return ok && a.max != 1
}

// ownBody gives a, an attempt about to be hedged, a body of the
// transport's own: the first attempt's is the caller's, which a copy that
// loses may still be reading after RoundTrip returned, so it gets a fresh
// one from GetBody, and the caller's is closed now, unread. A retry's body
// came from GetBody already. When GetBody fails, the request is not
// hedged after all: ownBody reports false, and the attempt goes alone,
// with the caller's body, as an attempt that is not hedged does.
func (r *request) ownBody(a *attempt) bool {
	if a.n > 1 || !hasBody(r.req) {
		return true
	}
	b, err := r.req.GetBody()
	if err != nil || b == nil {
		closeReader(b)
		r.hedging = false
		return false
	}
	closeReader(r.req.Body)
	req := a.req.WithContext(a.req.Context())
	req.Body = b
	a.req = req
	return true
}

// hedge returns hedge k of attempt a, paid for and paced, ready to send,
// or nil when it may not go: the retry quotas cannot pay, the breaker of
// its scope is open, a rate limiter would make it wait, its scope's
// concurrency limit has no free place, or a fresh body cannot be had. It
// goes where the next retry would: the request's next endpoint, if it may
// fail over. A hedge counts against the limits of the scope it goes to.
func (r *request) hedge(a *attempt, k int) *attempt {
	cp := r.cp
	endpoint := a.endpoint
	if r.route != nil {
		rt := *r.route
		for range k {
			rt.next()
		}
		endpoint = rt.current()
	}
	e := &attempt{n: a.n, hedge: k}
	r.place(e, endpoint)
	// A hedge pays as a retry after a Timeout would, and waits for nothing.
	pay, wait, refused := cp.pay(classify.Timeout, e.scope, r.home, true)
	if refused != nil {
		return nil
	}
	if e.pay = pay; wait > 0 {
		e.pay.cancel()
		return nil
	}
	req := a.req.WithContext(a.req.Context())
	if endpoint != a.endpoint {
		cp.readdress(req, r.req, endpoint) // a's URL, as a WithBeforeRetry hook left it
	}
	if hasBody(r.req) {
		b, err := r.req.GetBody()
		if err != nil || b == nil {
			e.pay.cancel()
			return nil
		}
		req.Body = b
	}
	if r.cp.breaker != nil {
		pass, err := r.cp.breaker.Allow(e.scope)
		if err != nil {
			closeReader(req.Body)
			e.pay.cancel()
			return nil
		}
		e.pass = pass
	}
	if r.reserve(e, false) != nil || r.acquire(e, true) != nil {
		closeReader(req.Body)
		e.unsend()
		return nil
	}
	e.req = req
	r.enter(e)
	e.stats.attempts.Add(1)
	e.stats.hedges.Add(1)
	r.hedges++
	return e
}

// enter readies copy e to be sent as a deep copy of its request (its URL,
// header and trailer), with a context of its own. A copy that loses the
// race may still be in the base transport after RoundTrip returned, when
// the caller may reuse its request: nothing the copy's round trip reads
// may be the caller's. e's body must be its own already (see ownBody).
func (r *request) enter(e *attempt) {
	ctx, cancel := context.WithCancel(e.req.Context())
	e.req, e.cancel, e.start = e.req.Clone(ctx), cancel, r.t.now()
}

// armHedge sleeps the hedge delay of a's scope, in a goroutine that ends
// with ctx, counted in timers, and then ticks.
func (r *request) armHedge(ctx context.Context, timers *sync.WaitGroup, tick chan<- struct{}, a *attempt) {
	d, ok := r.hedgeDelay(a)
	if !ok {
		return
	}
	timers.Add(1)
	go hedgeTimer(ctx, timers, r.t.sleep, d, tick)
}

// hedgeTimer ticks after sleeping d, unless ctx ends first, and tells
// timers it is done. It takes no request or attempt, so that they stay on
// the RoundTrip's stack.
func hedgeTimer(ctx context.Context, timers *sync.WaitGroup, sleep func(context.Context, time.Duration) error, d time.Duration, tick chan<- struct{}) {
	defer timers.Done()
	if sleep(ctx, d) == nil {
		select {
		case tick <- struct{}{}:
		default:
		}
	}
}

// hedgeDelay returns how long attempt a waits before its next copy: the
// policy's Delay, or the observed Quantile of a's scope, no shorter than
// MinDelay; false when there is none yet.
func (r *request) hedgeDelay(a *attempt) (time.Duration, bool) {
	h := r.cp.hedge
	d := h.Delay
	if h.Quantile > 0 {
		if q, ok := a.behaviour.latencies().quantile(h.Quantile); ok {
			d = q
		}
		d = max(d, h.MinDelay)
	}
	return d, d > 0
}
