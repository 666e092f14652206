package ratelimit

import "math"

// This file is the arithmetic of the adaptive limiter for one scope: the
// measured send rate, the CUBIC curve of the fill rate and the send-token
// bucket of docs/aws.md, as the AWS SDKs' adaptive retry mode computes them
// (botocore retries/adaptive.py, throttling.py and bucket.py; aws-sdk-go-v2
// aws/retry/adaptive_ratelimit.go), with the changes described on
// [Adaptive] unless in reference mode; outside it, the rate climbs back
// along a line rather than the CUBIC curve (see climb). Nothing here locks,
// allocates or reads a clock. Every method
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
	// coldStartMinElapsed is the shortest span the cold-start estimates
	// divide by: the measured rate's (n responses read as at most 10·n per
	// second) and the first decrease's (a concurrency of n as at most 10·n
	// per second; see cubic.coldRate). A client throttled a few
	// milliseconds after it starts has seen a handful of responses, which
	// over so short a span read as thousands per second (one response after
	// 10 µs as 100,000). The first decrease would then keep a rate many
	// times the server's, and the client's next requests would be throttled
	// again until the decreases, one per round trip, caught up: in the
	// fleet simulation (sim_fleet_test.go) a floor of 10 ms failed about 10
	// logical requests per run on their third throttle, and one of 100 ms
	// none, with half the throttles.
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

// The line of the changed algorithm (see climb), in seconds and requests per
// second.
const (
	// lineSlope is how fast the line climbs, in requests per second per
	// second for each reservation outstanding (taken and not yet answered)
	// when a response is recorded, that response's own no longer counted:
	// a closed-loop client of two workers climbs 2.5 req/s each second, one
	// of sixteen 37.5. The same slope for every client of the
	// same concurrency is what makes independent clients converge on equal
	// shares: a decrease takes more from a larger rate, the climb gives each
	// the same.
	lineSlope = 2.5
	// lineMinRegain bounds the slope from above: the line never regains the
	// decrease from a rate r, (1-beta)·r, in less than this many seconds,
	// so a client whose concurrency is large against its rate (sixteen
	// workers against 20 req/s) does not return at once to the rate it was
	// just throttled at.
	lineMinRegain = 1.0
	// coldSlope is the slope of the provisional line, the climb after the
	// first decrease when it was made from the cold-start rate (see
	// cubic.provisional and cubic.coldRate), in requests per second per
	// second for each reservation of the scope's concurrency: a replica of
	// two workers climbs 35 req/s each second, a client of sixteen 280, so
	// that each regains the 30 % of its cold-start rate in 0.17 s. It
	// counts only the time during which a reservation is outstanding, so a
	// client whose workers all sleep out a Retry-After neither climbs nor
	// uses up coldSpan meanwhile. Every replica of the same concurrency
	// starts from the same rate and climbs the same line, so they reach the
	// server's capacity together and with equal rates. A steeper line
	// overshoots the capacity by more once the server's burst has refilled:
	// in the fleet simulation 25 per reservation (50 req/s each second for
	// a replica) took up to 3.6 % of attempts throttled, and for one
	// client of 16 workers 525 req/s each second made callers that hold
	// their first wait overshoot to 300 req/s and collapse to 35.
	coldSlope = 17.5
	// coldSpan is how long, in seconds during which a reservation is
	// outstanding, the provisional line lasts at most: a replica that no
	// throttle reaches as the fleet arrives at the capacity must not keep
	// climbing fourteen times as fast as the others. A throttle, or the
	// span's end, switches to the line of climb. It replaces the first
	// closed bucket as the end, which came at once for a client whose
	// workers had all slept out a Retry-After, at its cold-start rate.
	coldSpan = 0.4
	// memoryTau is the time constant, in seconds, of the scope's long-run
	// rate (cubic.memory): the fill rate averaged over about the last 16
	// seconds.
	memoryTau = 16.0
	// recoverBelow, recoverQuiet and recoverTau define the recovery: once
	// the line is below recoverBelow times the long-run rate and no
	// throttle has come for recoverQuiet seconds, the line closes its gap
	// to the long-run rate with time constant recoverTau, until the next
	// throttle. A decrease leaves the line at 0.7 of the fill rate, below
	// recoverBelow of the long-run rate, so a throttle that no other
	// follows within recoverQuiet is regained in about a second instead
	// of the line's many: a client whose server throttled a few requests
	// and then admitted everything is back at its old rate within 1 s
	// (recoverBelow 0.5 waited for two decreases in a row and then some,
	// and after one it climbed 2.5 req/s per second), and a capacity that
	// fell and came back is found again as before. In a fleet each replica
	// regains its own long-run rate, so the throttles come about twice as
	// often (429s 3.9 % of attempts in the fleet simulation instead of 2.1
	// %), and the more frequent decreases, each taking more from a larger
	// rate, even out the shares faster: Jain's index 0.984 at worst
	// instead of 0.970, 0.973 instead of 0.923 on loopback, 0.964 instead
	// of 0.932 with Retry-After: 1 on loopback.
	recoverBelow = 0.85
	recoverQuiet = 0.3
	recoverTau   = 0.3
)

// params are an [Adaptive]'s settings with the defaults resolved.
type params struct {
	beta, scale, smoothing, minFill float64
	additive                        float64 // requests per second added per second since the last throttle; 0 for none
	window                          float64 // seconds of the fill rate the bucket holds: burstWindow, or 1 in reference mode
	reference                       bool
	// published says the scope's server publishes its quota, which
	// scopeState.record sets from the scope: a throttle then says the
	// quota was misread, not that arrivals bunched up, and is never
	// tolerated (see tolerates).
	published bool
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

	// The line, outside reference mode (see climb).
	line        float64 // the rate the line has reached
	lineAt      float64 // instant of its latest step
	provisional bool    // the last decrease was made from the cold-start rate (coldRate); the line climbs as coldSlope says
	memory      float64 // the long-run rate, an average of the fill rate; 0 until the first decrease after a bucket closed
	recovering  bool    // the line is closing its gap to memory (see recoverBelow)

	// An isolated throttle, before the limiter is enabled (see tolerates).
	tolerating  bool    // a throttle was let pass at isolatedAt
	isolatedAt  float64 // its instant
	isolatedSeq uint64  // reservations taken by then: the throttles of these are the same burst's

	// The cold start, outside reference mode (see coldRate).
	concurrency uint64  // most reservations outstanding at once so far
	firstAt     float64 // instant of the first response recorded
	answered    bool    // a response has been recorded, so firstAt is set
	busy        float64 // seconds during which a reservation was outstanding
	busyAt      float64 // busy at the line's latest step
	coldUntil   float64 // busy at which the provisional line ends

	// The send-token bucket, as the credit of the queue of reservations:
	// the n-th reservation taken holds place n, and its send is due once
	// the bucket has been credited n tokens in all (see credit). Its rate
	// is the fill rate, its capacity the most tokens held, and its
	// balance beyond the latest place the tokens, negative while
	// reservations wait for the refill.
	bucket credit
	issued uint64 // reservations taken, less the latest ones cancelled: the place of the latest

	// Damping, off in reference mode: sends and their ends counted, and the
	// hold that the last decrease opened. A reservation is outstanding from
	// take until its response is recorded or its attempt released.
	sent, done uint64  // reservations taken (less those cancelled); responses recorded and attempts released
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
	if c.sent > c.done {
		c.busy += t - c.now
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
// moves it along the CUBIC curve, or once enabled outside reference mode
// along the line.
func (c *cubic) record(t float64, throttled bool, p *params) {
	t = c.advance(t)
	if !c.answered {
		c.firstAt, c.answered = t, true
	}
	c.done++
	warm := c.closed // a rate was measured before this response
	c.measure(t, p)
	m := c.measuredRate(t, p)
	var r float64
	switch {
	case !throttled && c.enabled && !p.reference:
		r = c.climb(t, p)
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
	case throttled && warm && c.tolerates(t, p):
		return
	case c.held(t, p):
		// A throttle of a request sent before the last decrease says
		// nothing new about the rate decided then: restart the curve at
		// that rate, as TCP holds its window during fast recovery.
		c.lastThrottle = t
		r = p.beta * c.lastMax
		c.line, c.lineAt = r, t
	default:
		r = c.decrease(t, m, p)
	}
	c.setRate(t, r, m, p)
}

// climb moves the line from its latest step to t and returns the new rate,
// outside reference mode once enabled. After a decrease at rate r the line
// starts at beta·r and climbs, with no ceiling, by
//
//	slope = min(lineSlope·n, max(line, lastMax)·(1-beta)/lineMinRegain)
//
// requests per second each second, n the reservations outstanding (at least
// 1); while provisional, by coldSlope·concurrency for each second a
// reservation was outstanding; and it recovers towards the long-run rate
// after a fall (see recoverBelow). The CUBIC curve instead returns every
// client to the rate of its own last throttle, which keeps the ratios between
// independent clients as they started, and climbs past it by Scale·t³
// whatever the rate, too slowly to find a capacity that came back.
func (c *cubic) climb(t float64, p *params) float64 {
	dt := max(t-c.lineAt, 0)
	c.lineAt = t
	n := max(float64(c.sent)-float64(c.done), 1)
	slope := min(lineSlope*n, max(c.line, c.lastMax)*(1-p.beta)/lineMinRegain)
	busy := c.busy - c.busyAt
	c.busyAt = c.busy
	if c.provisional {
		c.line += coldSlope * float64(max(c.concurrency, 1)) * busy
		if c.busy >= c.coldUntil {
			// The span is over and no throttle came: the rate the line
			// reached without one is the least the scope may send.
			c.provisional = false
			c.lastMax = max(c.lastMax, c.line)
		}
	} else {
		c.line += slope * dt
	}
	if c.memory > 0 {
		c.memory -= (c.memory - c.bucket.rate) * -math.Expm1(-dt/memoryTau)
		if c.line < recoverBelow*c.memory && t-c.lastThrottle >= recoverQuiet {
			c.recovering = true
		}
		if c.recovering && c.line < c.memory {
			c.line += (c.memory - c.line) * -math.Expm1(-dt/recoverTau)
		}
	}
	r := c.line
	if p.additive > 0 {
		r = max(r, p.beta*c.lastMax+p.additive*(t-c.lastThrottle))
	}
	return r
}

// decrease applies a throttle at t and returns the new rate, beta times the
// rate in use: the measured rate m or, once enabled, the fill rate if lower.
// Outside reference mode, once enabled, the rate in use is the fill rate
// alone, which is what the client was allowed to send. It enables the
// limiter and opens a hold.
func (c *cubic) decrease(t, m float64, p *params) float64 {
	rate := m
	switch {
	case c.enabled && p.reference:
		rate = min(m, c.bucket.rate)
	case c.enabled:
		// The measured rate lags by half-second buckets and falls while
		// workers wait out a Retry-After; decreasing from it took a
		// client throttled twice in a row far below its share.
		rate = c.bucket.rate
	}
	if !p.reference {
		// A decrease before any bucket closed would rest on a count of the
		// responses that came back before the first throttle, which says in
		// what order the clients sharing the server reached it, not what
		// each may send: decrease from the cold-start rate instead, and let
		// the provisional line find the capacity.
		c.provisional = !c.enabled && !c.closed
		if c.provisional {
			rate = c.coldRate()
			c.busyAt, c.coldUntil = c.busy, c.busy+coldSpan
		}
		c.line, c.lineAt, c.recovering = rate*p.beta, t, false
		// The long-run rate starts at the first decrease after a bucket
		// closed, from a rate the provisional line found, not one the cold
		// start set: seeded at 78 req/s in the first tenth of a second, as
		// 16 workers came down to a server of 20, it pulled the line back
		// up every half-second and a quarter of the attempts was throttled.
		if c.memory == 0 && !c.provisional && c.closed {
			c.memory = rate
		}
	}
	c.lastMax = rate
	c.window = math.Cbrt(rate * (1 - p.beta) / p.scale)
	c.lastThrottle = t
	if !c.enabled && !p.reference {
		// Start limiting from an empty bucket: the SDKs refill it before
		// the first throttle too, so their first limited requests may go
		// out in a burst right after the server said slow down.
		c.bucket.setBalance(c.issued, 0)
		c.bucket.refilled = t
	}
	c.enabled = true
	// Reservations still queued will be sent at the new rate, so only
	// those already due belong to the hold.
	c.refill(t, p)
	c.holdSeq, c.holdEnd = c.sent-min(c.queued(), c.sent), t+holdMax
	return rate * p.beta
}

// coldRate returns the rate the first decrease starts from when no bucket
// has closed, outside reference mode: the scope's concurrency over its
// first round trip (Little's law), the round trip floored at
// coldStartMinElapsed, so at most ten requests per second for each
// reservation outstanding at once. The responses counted so far would say
// more, for a client that had the server's burst to itself, and much less,
// for one whose first response was the throttle (7 to 21 against 1 in a
// fleet whose replicas start within 10 ms of each other); the concurrency
// and the round trip are the same for every replica of the same
// concurrency, whatever order they reached the server in. For the fleet of
// sim_fleet_test.go (2 workers, 2 ms) that is 20 req/s, 14 after the
// decrease; for one client of 16 workers 160, 112 after it. A client that
// records without reserving counts as a concurrency of 1.
func (c *cubic) coldRate() float64 {
	return float64(max(c.concurrency, 1)) / max(c.firstAt, coldStartMinElapsed)
}

// queued returns how many reservations wait for a token, as of the last
// refill: the tokens owed, rounded up.
func (c *cubic) queued() uint64 {
	if b := c.bucket.balance(c.issued); b < 0 {
		return uint64(math.Ceil(-b))
	}
	return 0
}

// held reports whether a throttle at t falls in the hold opened by the last
// decrease, and so must not decrease the rate again. The hold lasts until
// the responses recorded and attempts released pass the reservations taken
// at the decrease (the answer to a request sent after it has come back,
// assuming answers come roughly in order) or holdMax has passed.
// Reservations that are never answered nor released would stretch the
// hold; holdMax bounds that. A caller that records
// without reserving never holds. Reference mode never holds: each throttle
// decreases again.
func (c *cubic) held(t float64, p *params) bool {
	return !p.reference && c.enabled && c.done <= c.holdSeq && t < c.holdEnd
}

// setRate makes r, capped at maxRateFactor times the measured rate m (or,
// enabled outside reference mode, at lastMax if higher), the bucket's new
// rate at t: fill = max(r, minFill), capacity = max(r·window,
// 1), where window is burstWindow (0.1 s), or 1 s in reference mode as in
// the SDKs. The time since the last refill is paid at the old rate first.
func (c *cubic) setRate(t, r, m float64, p *params) {
	c.refill(t, p)
	limit := maxRateFactor * m
	if c.enabled && !p.reference {
		// The rate of the last throttle was sent: a client whose
		// measured rate fell while its workers slept may go back to it.
		limit = max(limit, c.lastMax)
	}
	r = min(r, limit)
	c.bucket.rate = max(r, p.minFill)
	c.bucket.capacity = max(r*p.window, minCapacity)
	c.bucket.due = min(c.bucket.due, float64(c.issued)+c.bucket.capacity)
}

// refill adds fill tokens per second from the last refill to t, up to
// capacity. Before the first throttle only reference mode refills, as the
// SDKs do.
func (c *cubic) refill(t float64, p *params) {
	if c.enabled || p.reference {
		c.bucket.refill(t, c.issued)
	}
	c.bucket.refilled = max(c.bucket.refilled, t)
}

// wait returns how long, in seconds from t, a new reservation would wait
// for its token: 0 while the limiter is not enabled or a whole token is in
// the bucket, else (1 - tokens)/fill.
func (c *cubic) wait(t float64, p *params) float64 {
	if !c.enabled {
		return 0
	}
	c.refill(t, p)
	if owed := c.bucket.owed(c.issued + 1); owed > 0 {
		return owed / c.bucket.rate
	}
	return 0
}

// take takes one send token, counting the send, and returns the
// reservation's place in the queue. Before the limiter is enabled nothing
// is taken (the bucket keeps its tokens) and the reservation is due at
// once.
func (c *cubic) take() uint64 {
	c.sent++
	c.concurrency = max(c.concurrency, c.sent-min(c.done, c.sent))
	c.issued++
	if !c.enabled {
		c.bucket.due++
	}
	return c.issued
}

// release ends, at t, a reservation whose attempt was sent and will not
// be answered (the caller gave up on it, or it was a hedge cancelled by
// its race): it is no longer outstanding, which the climb, the hold and
// the cold start's concurrency count by. Nothing is measured, the rate
// does not move, and no token comes back: the send was made. A release
// with no reservation outstanding (one of a scope evicted and created
// again since) changes nothing.
func (c *cubic) release(t float64) {
	c.advance(t)
	if c.done < c.sent {
		c.done++
	}
}

// delay returns how long, in seconds from t, the reservation at place n
// still waits: until the bucket's credit reaches it (see credit). Credit
// accrues at the current fill rate, so a reservation asked again after the
// rate changed is due at the new pace, and reservations come due in the
// order they were taken.
func (c *cubic) delay(t float64, n uint64, p *params) float64 {
	if !c.enabled || n > c.issued {
		return 0
	}
	c.refill(t, p)
	owed := c.bucket.owed(n)
	if owed <= dueSlack {
		return 0
	}
	return owed / c.bucket.rate
}

// giveBack returns the token of the reservation at place n, taken at or
// before t, whose send was abandoned. The latest reservation just leaves
// the queue; one with others behind it gives its token to them, and those
// behind it move up a place (see credit). Before the limiter is enabled
// the bucket keeps its tokens.
func (c *cubic) giveBack(t float64, n uint64, p *params) {
	if c.sent > 0 {
		c.sent--
	}
	if !c.enabled {
		if n == c.issued && n > 0 {
			c.issued--
			c.bucket.due--
		}
		return
	}
	c.refill(t, p)
	if c.bucket.giveBack(n, c.issued) {
		c.issued--
	}
}

// tolerates reports whether a throttle at t, of a scope that had sent for
// half a second without one (a bucket had closed before it), is let pass
// without enabling the limiter: outside reference mode, before the limiter
// is enabled, the first such throttle and the throttles of requests sent
// before it, the same burst's. A client sending at half a server's capacity meets such a
// throttle when its arrivals bunch up past the server's burst, and pacing
// it from then on at a decrease from its rate delayed a thousand requests
// (of 4,000 in the bench's open loop at half of 1,000 req/s) to get a few
// through a moment later; a client whose server throttled one request and
// then admitted everything stayed at 0.7 of its rate until the recovery.
// A throttle of a request sent after the first one says the rate itself
// is too high, and enables the limiter. After isolatedSpan without
// another, a throttle is isolated again. A scope's first half-second is
// the cold start's, which enables at the first throttle: letting one pass
// there sent every replica of a fleet whose server answers Retry-After: 1
// to sleep a second more, and its shares apart (Jain's index 0.46 at
// worst in the fleet simulation). A scope whose server publishes its quota
// never tolerates one: the throttle says the quota was misread (a server
// that rounds its reset down, say), and letting it pass there failed half
// as many requests again in the published-quota simulation of such a
// server (43 per run instead of 28).
func (c *cubic) tolerates(t float64, p *params) bool {
	if p.reference || p.published || c.enabled {
		return false
	}
	if !c.tolerating || t-c.isolatedAt > isolatedSpan {
		c.tolerating, c.isolatedAt, c.isolatedSeq = true, t, c.sent
		return true
	}
	return c.done <= c.isolatedSeq && t-c.isolatedAt < holdMax
}

// isolatedSpan is how long after an isolated throttle another throttle
// enables the limiter.
const isolatedSpan = 1.0
