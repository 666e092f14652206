package concurrency

import (
	"math"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// The estimator learns a scope's limit in rounds. Its constants, each with
// what it is for (the package doc gives the algorithm they serve):
const (
	// roundMin is the fewest places a round's cohort holds, so that a
	// small limit still averages a few latencies.
	roundMin = 8

	// roundMax bounds the cohort that a scope with very variable
	// latencies asks for (roundError), so that a round still ends in a
	// few round trips.
	roundMax = 256

	// roundError is the relative standard error a round's mean latency
	// aims for: a cohort holds (CV/roundError)² places, CV being the
	// latencies' coefficient of variation, so that the decisions, which
	// compare means 50 % apart by default, are not noise. A server whose
	// latencies vary like an exponential distribution's (CV 1) gets
	// rounds of 100; one that answers in near-constant time, of the limit.
	roundError = 0.1

	// cvWeight is the weight of a round's CV² in the smoothed one that
	// sizes the next cohorts.
	cvWeight = 0.25

	// probeEvery is how many rounds in which the limit was reached pass
	// between two probes: the cost of a probe (half the places for a
	// round) against how soon a server that got faster is seen. At the
	// issue's server overloaded twice over, that is a probe every 2 s or
	// so, and the probes cost about 0.5 % of the capacity.
	probeEvery = 64

	// probeSoon is how many such rounds pass before the next probe when a
	// probe found the no-load latency risen by more than a fifth, which
	// the halfway step (probeRise) took only in part.
	probeSoon = 4

	// probeDeeper: a probe whose mean is below this share of the no-load
	// latency shows that the limit it halved was still queueing, so the
	// no-load latency was too high; the next round probes at half again.
	probeDeeper = 0.9

	// probeRise is the share of a rise that a probe moves the no-load
	// latency by: a rise is believed in steps, since a probe at a limit
	// still above the server's concurrency also reads high.
	probeRise = 0.5
)

// params are an Adaptive's settings, resolved to their defaults.
type params struct {
	initial, min, max float64
	tolerance         float64
	backoff           float64
}

// estimator learns one scope's limit from the latencies of its attempts,
// round by round. Its fields are guarded by the gate's mu.
type estimator struct {
	p     params
	limit float64 // in places; within [p.min, p.max]

	// The round: the places handed out after start, up to end, are its
	// cohort, and it closes when all of them have ended. A round ending
	// with the first to answer would favour the fast ones.
	start, end uint64
	ended      int     // cohort members ended
	n          int     // of which successes, whose latencies are below
	sum, sumSq float64 // in nanoseconds, and their squares
	sumIn      int     // the attempts in flight when each was taken, itself included
	peak       int     // most places wanted at once since the round began

	cv2    float64 // smoothed squared coefficient of variation within rounds
	base   float64 // the no-load latency, in nanoseconds; 0 until the first round closes
	last   float64 // the mean latency of the last round closed
	resume float64 // during a probe, the limit to return to; 0 outside probes
	until  int     // rounds in which the limit was reached until the next probe

	timing bool // the round times its cohort's attempts (see close)

	queued bool // the last round closed saw a queue
	fell   bool // the last round closed lowered the limit
	slow   bool // no queue seen yet: a limit in use that sees none doubles
}

func newEstimator(p params) *estimator {
	e := &estimator{p: p, limit: p.initial, slow: true}
	e.newRound(0)
	return e
}

// places returns the limit as a count of places. The epsilon keeps a
// limit computed as exactly k from reading as k-1.
func (e *estimator) places() int {
	return max(int(e.limit+1e-9), 1)
}

// times reports whether the place numbered seq, handed out now, is to be
// timed: it is in the cohort of a round that times its attempts. The
// latencies of the others are never learned from.
func (e *estimator) times(seq uint64) bool {
	return e.timing && seq > e.start && seq <= e.end
}

// wanted notes that inFlight places were wanted at once: taken, or one
// more than taken by a caller refused or made to wait.
func (e *estimator) wanted(inFlight int) {
	e.peak = max(e.peak, inFlight)
}

// learn takes the end of p: its latency and outcome kind if sent is true,
// else nothing but that it ended. taken places were handed out so far.
// It reports whether a new round began, the limit then having been
// decided anew: a round closed, or a timeout cut one short.
func (e *estimator) learn(p Permit, latency time.Duration, k classify.Kind, sent bool, taken uint64) bool {
	if p.seq <= e.start {
		// Taken before the limit last changed: what it says is of
		// the old limit, which has been acted on already.
		return false
	}
	if sent && k == classify.Timeout {
		// The attempt outlived the caller's patience: a loss, as TCP
		// counts one, whatever the latencies say. Once per round,
		// since the places taken before fall outside the next.
		e.slow = false
		if e.resume > 0 {
			e.limit, e.resume = e.resume, 0
		}
		e.set(e.limit*e.p.backoff, taken)
		return true
	}
	if p.seq > e.end {
		return false
	}
	e.ended++
	// Only a success's latency is the server's service: a refused
	// connection fails in microseconds, a 5xx may be fast or slow, and a
	// throttle is the rate limiter's business.
	if sent && k == classify.Success && latency > 0 {
		l := float64(latency)
		e.n++
		e.sum += l
		e.sumSq += l * l
		e.sumIn += p.in
	}
	if e.ended < int(e.end-e.start) {
		return false
	}
	e.close(taken)
	return true
}

// close ends the round: it decides the next limit from the cohort's
// latencies, as the doc of Adaptive describes, and starts the next round.
func (e *estimator) close(taken uint64) {
	// A round that wanted no more than √limit places at once, fewer than
	// the limit, cannot move it (a queue is counted only past √limit, and
	// the limit rises only once reached), so the next need not learn
	// either, which spares its attempts two readings of the clock each,
	// unless it is a probe's or the first has not closed. A round cut
	// short by a timeout is not closed here, and the one after it is
	// timed.
	quiet := e.peak < e.places() && float64(e.peak) <= math.Sqrt(e.limit)
	e.decide(taken)
	if quiet && e.base > 0 && e.resume == 0 {
		e.timing = false
	}
}

// decide is close's decision: the next limit, and whether to probe.
func (e *estimator) decide(taken uint64) {
	if !e.timing {
		// The round was not timed, as it followed a quiet one, and
		// decides what that one did: no queue, no change. If the load
		// rose meanwhile, the next round, timed, sees it.
		e.queued, e.fell = false, false
		e.newRound(taken)
		return
	}
	if e.n == 0 {
		e.newRound(taken)
		return
	}
	mean := e.sum / float64(e.n)
	m := float64(e.sumIn) / float64(e.n)
	e.cv2 += cvWeight * (max(e.sumSq/float64(e.n)-mean*mean, 0)/(mean*mean) - e.cv2)
	e.last = mean
	reached := e.peak >= e.places()
	switch {
	case e.resume > 0:
		e.probed(mean, taken)
		return
	case e.base == 0:
		// The first round: its latencies are all there is, but if the
		// limit was reached they may include a queue of the limit's
		// own making. A probe at a quarter of it tells.
		e.base = mean
		if reached {
			e.probe(e.limit, e.limit/4, taken)
		} else {
			e.newRound(taken)
		}
		return
	}

	// Little's law: of the m attempts in flight, a share base/mean was
	// being served and the rest queued.
	queue := m * (1 - e.base/mean)
	// A queue of √limit or less is noise, and a scope that keeps fewer
	// attempts in flight is not what makes its server queue.
	queueing := mean > e.p.tolerance*e.base && queue > math.Sqrt(e.limit)
	// A queue seen once while the limit was not reached may be a burst.
	fall := queueing && (reached || e.queued)
	again := fall && e.fell
	e.queued, e.fell = queueing, fall

	next := e.limit
	switch {
	case fall:
		// What the server serves without queueing, plus a queue of its
		// square root so that a slot freed is filled at once, but in the
		// lower half of the band the tolerance allows, lest the next
		// round fall again; at most halving the limit in one round.
		e.slow = false
		c := m * e.base / mean
		next = min(max(c+min(math.Sqrt(c), (e.p.tolerance-1)*c/2), e.limit/2), e.limit)
	case reached && e.slow && mean <= (1+e.p.tolerance)/2*e.base:
		next = 2 * e.limit
	case reached:
		next = e.limit + math.Sqrt(e.limit)
	}
	if again {
		// Two falls in a row: the no-load latency may have risen, so
		// that nothing the limit does brings the latency back to it.
		e.until = 0
	}
	if reached || again {
		if e.until--; e.until <= 0 {
			e.probe(next, e.limit/2, taken)
			return
		}
	}
	e.set(next, taken)
}

// probe runs the next round at level, to measure the latency with fewer
// attempts in flight; the limit returns to resume after it.
func (e *estimator) probe(resume, level float64, taken uint64) {
	e.resume = resume
	e.set(level, taken)
}

// probed takes the mean latency of a probe round.
func (e *estimator) probed(mean float64, taken uint64) {
	if mean < probeDeeper*e.base && e.places() > int(e.p.min) {
		// Fewer in flight, lower latency: they were queueing at the
		// last level, and may still be at this one.
		e.resume *= mean / e.base
		e.base = mean
		e.set(e.limit/2, taken)
		return
	}
	e.until = probeEvery
	switch {
	case mean < e.base:
		// The limit the probe interrupted was set for a higher no-load
		// latency: it comes back in proportion.
		e.resume *= mean / e.base
		e.base = mean
	case mean > 1.2*e.base:
		e.until = probeSoon
		fallthrough
	default:
		e.base += probeRise * (mean - e.base)
	}
	r := e.resume
	e.resume = 0
	e.set(r, taken)
}

// set moves the limit to l, kept within [Min, Max], and starts a round.
func (e *estimator) set(l float64, taken uint64) {
	e.limit = min(max(l, e.p.min), e.p.max)
	e.newRound(taken)
}

// newRound starts a round whose cohort is the next places handed out,
// taken places having been handed out so far.
func (e *estimator) newRound(taken uint64) {
	e.timing = true // unless close says otherwise
	size := max(roundMin, e.places(), min(int(e.cv2/(roundError*roundError)), roundMax))
	e.start, e.end = taken, taken+uint64(size)
	e.ended, e.n, e.sum, e.sumSq, e.sumIn, e.peak = 0, 0, 0, 0, 0, 0
}

func (e *estimator) noLoad() time.Duration { return time.Duration(e.base) }

func (e *estimator) lastMean() time.Duration { return time.Duration(e.last) }
