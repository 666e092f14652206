package ratelimit

import "math"

// This file is the arithmetic of the adaptive limiter for one scope: the
// measured send rate, the CUBIC curve of the fill rate and the send-token
// bucket of docs/aws.md, as the AWS SDKs' adaptive retry mode computes them
// (botocore retries/adaptive.py, throttling.py and bucket.py; aws-sdk-go-v2
// aws/retry/adaptive_ratelimit.go), with the changes described on
// [Adaptive] unless in reference mode. Nothing here locks, allocates or reads a clock. Every method
// takes the instant t in seconds since the scope's origin, the instant its
// state was created: a float64 counted from there keeps sub-microsecond
// precision, which seconds since 1970 would not.

// The algorithm's fixed numbers, in seconds and requests per second.
const (
	// measureBucket is the width of the time buckets that the measured
	// rate is counted in (floor(t*2)/2; see docs/aws.md).
	measureBucket = 0.5
	// minCapacity is the least number of tokens the send bucket holds when
	// full, so that a rate below one request per second still lets one
	// request through.
	minCapacity = 1.0
	// burstWindow is how many seconds of the fill rate the send bucket
	// holds when full, outside reference mode (docs/aws.md and the SDKs: one
	// second, capacity = max(new, 1)). A server's own burst is typically a
	// fraction of a second, so a full second of tokens saved up while the
	// client was idle (during a server-requested wait, for example) goes
	// out as one synchronised burst that the server throttles, and the
	// decrease those throttles cause starts from a measured rate that the
	// idle period dragged down: the rate collapses.
	burstWindow = 0.1
	// maxRateFactor caps a new rate at this multiple of the measured rate:
	// the limiter never allows much more than the client has shown it sends.
	maxRateFactor = 2.0
	// coldStartMinElapsed is the shortest span the cold-start estimate
	// divides by: n responses read as at most 10·n per second. A client
	// throttled a few milliseconds after it starts has seen a handful of
	// responses, which over so short a span read as thousands per second
	// (one response after 10 µs as 100,000). The first decrease would then
	// keep a rate many times the server's, and the client's next requests
	// would be throttled again until the decreases, one per round trip,
	// caught up: in the fleet simulation (sim_fleet_test.go) a floor of 10 ms
	// failed about 10 logical requests per run on their third throttle, and
	// one of 100 ms none, with half the throttles.
	coldStartMinElapsed = 0.1
	// holdMax bounds a hold (see cubic.held): however many reservations
	// are still unanswered, throttles arriving this long after a decrease
	// may decrease the rate again.
	holdMax = 1.0
	// dueSlack is how few tokens a reservation may still be owed and be
	// due: rounding in the refill arithmetic leaves a reservation whose time
	// has come a few nanoseconds short.
	dueSlack = 1e-9
)

// params are an [Adaptive]'s settings with the defaults resolved.
type params struct {
	beta, scale, smoothing, minFill float64
	additive                        float64 // requests per second added per second since the last throttle; 0 for none
	window                          float64 // seconds of the fill rate the bucket holds: burstWindow, or 1 in reference mode
	reference                       bool
}

// cubic is the adaptive state of one scope, a value type with no lock of its
// own: its owner serialises the calls. The zero value, with fill set to the
// least fill rate and capacity to 1 (the formulas' values for a rate of 0),
// is a scope that has seen nothing yet. Rates are requests per second, times
// are seconds since the origin.
type cubic struct {
	now float64 // latest instant seen; t never runs backwards (see advance)

	// The measured send rate: responses counted in half-second buckets.
	count      float64 // responses since the current bucket began
	lastBucket float64 // start of the current bucket
	measured   float64 // smoothed rate of the closed buckets
	closed     bool    // a bucket has closed, so measured is a measurement

	// The CUBIC curve: after a throttle at lastThrottle, the rate restarts
	// at beta·lastMax and is back at lastMax window seconds later.
	enabled      bool    // a throttle has been seen; sends are limited from now on
	lastMax      float64 // the rate when the last decrease happened (W_max)
	window       float64 // cbrt(lastMax·(1-beta)/scale): seconds from a throttle to the plateau (K in RFC 9438)
	lastThrottle float64 // instant of the last throttle

	// The send-token bucket.
	fill     float64 // tokens added per second
	capacity float64 // most tokens held
	tokens   float64 // negative while reservations wait for the refill
	refilled float64 // instant tokens were computed for

	// The queue of reservations: the n-th reservation ever taken holds
	// place n, and its send is due once the bucket has been credited n
	// tokens in all, issued + tokens (tokens taken plus tokens left).
	issued uint64 // reservations taken, less the latest ones cancelled: the place of the latest

	// Damping, off in reference mode: sends and responses counted, and the
	// hold that the last decrease opened.
	sent, done uint64  // reservations taken (less those cancelled), responses recorded
	holdSeq    uint64  // reservations due (sent, or free to send) at the last decrease
	holdEnd    float64 // the hold ends at this instant at the latest
}

// advance records t as seen and returns it, or returns the latest instant
// seen if t is earlier: a clock stepping backwards counts as standing still,
// so no interval is refilled twice and the curve never runs backwards.
func (c *cubic) advance(t float64) float64 {
	if t < c.now {
		return c.now
	}
	c.now = t
	return t
}

// measuredRate returns the measured send rate at t. Before a bucket has
// closed the reference algorithm has no measurement and reads 0, the value
// behind its cold-start collapse. The changed algorithm reads the responses
// so far over the time since the origin instead, the span floored at
// coldStartMinElapsed.
func (c *cubic) measuredRate(t float64, p *params) float64 {
	if c.closed || p.reference {
		return c.measured
	}
	return c.count / max(t, coldStartMinElapsed)
}

// measure counts one response at t. When t falls in a later bucket than the
// current one, the count so far (this response included, as in the SDKs)
// becomes a rate over the buckets elapsed and is folded into the measured
// rate: measured = smoothing·count/(bucket-lastBucket) + (1-smoothing)·prev,
// where prev is the previous measured rate, or the cold-start estimate when
// no bucket has closed yet (0 in reference mode).
func (c *cubic) measure(t float64, p *params) {
	c.count++
	b := math.Floor(t/measureBucket) * measureBucket
	if b <= c.lastBucket {
		return
	}
	prev := c.measuredRate(t, p)
	c.measured = p.smoothing*c.count/(b-c.lastBucket) + (1-p.smoothing)*prev
	c.count, c.lastBucket, c.closed = 0, b, true
}

// record updates the state with the outcome of one attempt answered at t:
// throttled or not. Each response is measured first; then a throttle
// decreases the rate (or, during a hold, pins it) and any other response
// moves it along the CUBIC curve.
func (c *cubic) record(t float64, throttled bool, p *params) {
	t = c.advance(t)
	c.done++
	c.measure(t, p)
	m := c.measuredRate(t, p)
	var r float64
	switch {
	case !throttled:
		// The curve: scale·(t - lastThrottle - window)³ + lastMax. It
		// starts at beta·lastMax, flattens out at lastMax after window
		// seconds, then grows ever faster to probe for more.
		d := t - c.lastThrottle - c.window
		r = p.scale*d*d*d + c.lastMax
		if p.additive > 0 && !p.reference {
			// The additive line (RFC 9438's Reno-friendly region): every
			// client gains the same requests per second, whatever its
			// rate, so shares move towards equal between throttles.
			r = max(r, p.beta*c.lastMax+p.additive*(t-c.lastThrottle))
		}
	case c.held(t, p):
		// A throttle of a request sent before the last decrease says
		// nothing new about the rate decided then: restart the curve at
		// that rate, as TCP holds its window during fast recovery.
		c.lastThrottle = t
		r = p.beta * c.lastMax
	default:
		r = c.decrease(t, m, p)
	}
	c.setRate(t, r, m, p)
}

// decrease applies a throttle at t to the curve and returns the new rate,
// beta times the rate in use: the measured rate m or, once enabled, the fill
// rate if lower. It enables the limiter and opens a hold.
func (c *cubic) decrease(t, m float64, p *params) float64 {
	rate := m
	if c.enabled {
		rate = min(m, c.fill)
	}
	c.lastMax = rate
	c.window = math.Cbrt(rate * (1 - p.beta) / p.scale)
	c.lastThrottle = t
	if !c.enabled && !p.reference {
		// Start limiting from an empty bucket: the SDKs refill it before
		// the first throttle too, so their first limited requests may go
		// out in a burst right after the server said slow down.
		c.tokens, c.refilled = 0, t
	}
	c.enabled = true
	// Reservations still queued will be sent at the new rate, so only
	// those already due belong to the hold.
	c.refill(t, p)
	c.holdSeq, c.holdEnd = c.sent-min(c.queued(), c.sent), t+holdMax
	return rate * p.beta
}

// queued returns how many reservations wait for a token, as of the last
// refill: the tokens owed, rounded up.
func (c *cubic) queued() uint64 {
	if c.tokens >= 0 {
		return 0
	}
	return uint64(math.Ceil(-c.tokens))
}

// held reports whether a throttle at t falls in the hold opened by the last
// decrease, and so must not decrease the rate again. The hold lasts until
// the responses recorded pass the reservations taken at the decrease (the
// answer to a request sent after it has come back, assuming answers come
// roughly in order) or holdMax has passed. Reservations that are never
// answered would stretch the hold; holdMax bounds that. A caller that records
// without reserving never holds. Reference mode never holds: each throttle
// decreases again.
func (c *cubic) held(t float64, p *params) bool {
	return !p.reference && c.enabled && c.done <= c.holdSeq && t < c.holdEnd
}

// setRate makes r, capped at maxRateFactor times the measured rate m, the
// bucket's new rate at t: fill = max(r, minFill), capacity = max(r·window,
// 1), where window is burstWindow (0.1 s), or 1 s in reference mode as in
// the SDKs. The time since the last refill is paid at the old rate first.
func (c *cubic) setRate(t, r, m float64, p *params) {
	c.refill(t, p)
	r = min(r, maxRateFactor*m)
	c.fill = max(r, p.minFill)
	c.capacity = max(r*p.window, minCapacity)
	c.tokens = min(c.tokens, c.capacity)
}

// refill adds fill tokens per second from the last refill to t, up to
// capacity. Before the first throttle only reference mode refills, as the
// SDKs do.
func (c *cubic) refill(t float64, p *params) {
	if (c.enabled || p.reference) && t > c.refilled {
		c.tokens = min(c.tokens+(t-c.refilled)*c.fill, c.capacity)
	}
	c.refilled = max(c.refilled, t)
}

// wait returns how long, in seconds from t, a new reservation would wait
// for its token: 0 while the limiter is not enabled or a whole token is in
// the bucket, else (1 - tokens)/fill.
func (c *cubic) wait(t float64, p *params) float64 {
	if !c.enabled {
		return 0
	}
	c.refill(t, p)
	if c.tokens >= 1 {
		return 0
	}
	return (1 - c.tokens) / c.fill
}

// take takes one send token, counting the send, and returns the
// reservation's place in the queue. Before the limiter is enabled nothing
// is taken and the reservation is due at once.
func (c *cubic) take() uint64 {
	c.sent++
	c.issued++
	if c.enabled {
		c.tokens--
	}
	return c.issued
}

// delay returns how long, in seconds from t, the reservation at place n
// still waits: until issued + tokens, the tokens credited so far, reaches
// n. Credit accrues at the current fill rate, so a reservation asked again
// after the rate changed is due at the new pace, and reservations come due
// in the order they were taken.
func (c *cubic) delay(t float64, n uint64, p *params) float64 {
	if !c.enabled || n > c.issued {
		return 0
	}
	c.refill(t, p)
	owed := -(float64(c.issued-n) + c.tokens)
	if owed <= dueSlack {
		return 0
	}
	return owed / c.fill
}

// giveBack returns the token of the reservation at place n, taken at or
// before t, whose send was abandoned. The latest reservation just leaves
// the queue; one with others behind it gives its token to the first
// reservation still waiting, so every later one moves up a place.
func (c *cubic) giveBack(t float64, n uint64, p *params) {
	if c.sent > 0 {
		c.sent--
	}
	if n == c.issued && n > 0 {
		c.issued--
	}
	if c.enabled {
		c.refill(t, p)
		c.tokens = min(c.tokens+1, c.capacity)
	}
}
