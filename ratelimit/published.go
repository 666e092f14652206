package ratelimit

import (
	"math"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// This file paces one scope by the quota its server publishes: the requests
// its current window still admits and the time until the window resets
// (retryafter.ParseQuota reads them from the IETF RateLimit fields and
// X-RateLimit-*). Like cubic.go it is arithmetic on instants in seconds
// since the scope's origin; it locks nothing, allocates nothing and reads
// no clock.
//
// # Spending a window evenly
//
// One client alone spends a window of R requests left and T seconds evenly
// by sending R/T per second, recomputed at every answer: it runs out at
// the reset. N clients that share the counter and know nothing of each
// other, each sending R/T per second, drain it N times as fast: dR/dt =
// -N·R/T, so R falls as R0·(T/T0)^N. Half the window goes in its first
// 0.8 s (8 clients, 10 s), and the rest is spent at a counter of a few
// requests, where each client's view of it, as old as its last answer, is
// off by the others' sends since: in the simulation (sim_published_test.go,
// 8 clients of 2 workers, 600 per 10 s) every window ended in about 7 429s
// and the shares had a Jain's index of 0.83.
//
// So each client also estimates how many clients spend the counter: over
// every quotaSample of its own answers in a window, the counter falls by
// share times as much as those answers' own requests (share is 1 for a
// client alone), smoothed, and kept across windows. It then sends
//
//	rate = (R - quotaMargin·share) / (share^quotaFairness·T)
//
// per second, and stops with about half a request per client left, which
// absorbs the others' sends that a client has not seen yet. The estimate
// starts at 1, so a fleet's first window is spent as above, until it is
// measured.
//
// # Even shares
//
// With an exponent of 1 the fleet would spend exactly R/T, but the shares
// would not even out: a client that sends x of the fleet's F reads a share
// of F/x and so keeps sending R/T·x/F, x again, whatever x is. The shares
// the clients start from, or that chance gives them, stay; at 300 µs round
// trips one of 8 clients kept twice the others' for the whole run (Jain's
// index 0.889 at worst over 20 seeds). An exponent below 1 gives a client
// with a small share a little more than its share and one with a large
// share a little less, so the shares close in on equal at every
// measurement; the fleet then spends R/T times N^(1-quotaFairness), 1.23
// for 8 clients, which the remaining count the answers publish corrects
// as the window goes: the window is spent slightly ahead of an even pace,
// still to the reset. In the simulation (sim_published_test.go, 20 seeds)
// the fleet gets no 429 after the first window, uses 99.3 to 99.5 % of
// each, and shares it with a Jain's index of 0.997 / 0.998 / 1.000 (0.985
// / 0.996 / 0.998 at 300 µs round trips); 8 clients of 8 workers 0.962 at
// worst instead of 0.871, 32 clients 0.980 at 300 µs instead of 0.957.
// With 0.8 the shares close in faster, but 32 clients get up to five 429s
// after the first window: they spend 32^0.2 = 2 times R/T early on.
//
// # Places and credit
//
// The sends are paced as the scope's queue of reservations: reservation n
// (the place cubic.take gives it) may send once the credit, due, reaches n.
// Credit accrues at rate, up to capacity places beyond the latest one
// taken, so a client that sends below its rate saves up a tenth of a
// second of it, at least one send, but never more than its part of what
// is left. A new rate moves every waiting
// reservation, as the CUBIC bucket's does. From the reset on, nothing is
// paced until an answer publishes the next window's quota.

// The published pacing's constants; times in seconds.
const (
	// quotaMaxWait is the longest wait the published quota imposes on a
	// send. A send it would hold longer (a window of an hour with little
	// left, say) is not held at all: the server then answers as it would
	// without pacing, and the transport weighs its delay against the
	// policy's MaxDelay, whose default this is.
	quotaMaxWait = 20.0
	// quotaResolution is the precision of a reset given in whole seconds,
	// as every form but X-RateLimit-Reset's fraction is. Two resets within
	// it of each other may name the same instant, rounded differently.
	quotaResolution = 1.0
	// quotaSample is how many of its own counted answers a client
	// measures the counter's fall over, for one sample of its share.
	quotaSample = 8
	// quotaSmoothing is the weight of the newest sample of the share.
	quotaSmoothing = 0.5
	// quotaMaxShare bounds the share estimate.
	quotaMaxShare = 1000
	// quotaMargin is the requests per client left unspent at the reset. A
	// margin of 0 let through one 429 in some runs of 8 clients of 8
	// workers, of 32 clients, or with 50 ms round trips; 1 leaves 1.3 % of
	// 8 clients' window unused, 5.3 % of 32 clients'.
	quotaMargin = 0.5
	// quotaFairness is the exponent of the share in the rate (see Even
	// shares): below 1, so that the clients' shares even out; near it, so
	// that the fleet spends little more than R/T at first.
	quotaFairness = 0.9
)

// published is a scope's pacing by its published quota. The zero value
// paces nothing.
//
// Its places are the CUBIC bucket's (cubic.take), whose latest place, last,
// each method that needs it is given.
type published struct {
	remaining int64   // the last remaining count published
	reset     float64 // instant the window resets; 0 until a quota is published
	credit            // the places' credit: rate, capacity, due

	// The clients sharing the quota, as this one sees them: the counter's
	// fall over this client's own counted requests, smoothed; 0 until
	// measured, which counts as 1.
	share   float64
	anchor  int64  // the remaining count the current measurement starts from
	counted uint64 // this client's answers since then that the counter fell by
}

// update records at t a published quota: remaining left, resetting d
// seconds later. A window whose reset has come (d <= 0) says nothing of
// the next, and is ignored. So is a reset more than quotaResolution before
// the one known, while that one is still ahead: the answer to a request of
// the window that has just ended, overtaken by one of the new window. A
// reset within quotaResolution of the known one, with no more remaining
// than before, reports the same window again: the earlier reset is kept,
// since servers round a reset up to whole seconds and the earliest
// rounding is nearest the truth. Any other quota replaces the one known,
// whose remaining count the new one replaces in every case.
func (q *published) update(t float64, remaining int64, d float64, last uint64) {
	if !(d > 0) {
		return
	}
	reset := t + d
	fresh := !q.pacing(t)
	if !fresh {
		switch {
		case reset < q.reset-quotaResolution:
			return
		case reset <= q.reset+quotaResolution && remaining <= q.remaining:
			reset = min(reset, q.reset)
		}
		q.refill(t, last)
	}
	q.measure(remaining, fresh)
	q.remaining, q.reset = remaining, reset
	k := max(q.share, 1)
	mine := max(float64(remaining)-k*quotaMargin, 0) / math.Pow(k, quotaFairness) // this client's part of what is left
	q.rate = mine / (reset - t)
	q.capacity = min(max(q.rate*burstWindow, minCapacity), mine)
	if fresh {
		// A first quota, or the first of a new window: a full allowance
		// to start with.
		q.due, q.refilled = float64(last)+q.capacity, t
	}
	q.due = min(q.due, float64(last)+q.capacity)
}

// measure updates the estimate of how many clients share the quota with an
// answer of the same window (or, if fresh, of a new one) that publishes
// remaining.
func (q *published) measure(remaining int64, fresh bool) {
	if fresh {
		q.anchor, q.counted = remaining, 0
		return
	}
	if remaining == 0 || remaining >= q.anchor {
		return // a refusal, which the counter does not count, or another counter
	}
	q.counted++
	if q.counted < quotaSample {
		return
	}
	n := float64(q.anchor-remaining) / float64(q.counted)
	if q.share == 0 {
		q.share = n
	} else {
		q.share = quotaSmoothing*n + (1-quotaSmoothing)*q.share
	}
	q.share = min(max(q.share, 1), quotaMaxShare)
	q.anchor, q.counted = remaining, 0
}

// pacing reports whether a quota paces sends at t: one was published and
// its window has not reset. From the reset until a response publishes the
// next window's quota, sends are not paced. Until one is published, reset
// is 0 and t, which never goes below 0 (cubic.advance), is past it.
func (q *published) pacing(t float64) bool { return t < q.reset }

// wait returns how long, in seconds from t, the next place after last
// would wait.
func (q *published) wait(t float64, last uint64) float64 { return q.delay(t, last+1, last) }

// delay returns how long, in seconds from t, place n of a queue whose
// latest place is last still waits: until the credit reaches it, and never
// past the reset, after which nothing is paced. A wait longer than
// quotaMaxWait is not imposed: it is 0.
func (q *published) delay(t float64, n, last uint64) float64 {
	if !q.pacing(t) {
		return 0
	}
	q.refill(t, last)
	owed := q.owed(n)
	if owed <= dueSlack {
		return 0
	}
	w := q.reset - t
	if q.rate > 0 {
		w = min(owed/q.rate, w)
	}
	if w > quotaMaxWait || math.IsNaN(w) {
		return 0
	}
	return w
}

// giveBack returns place n, taken at or before t, of a queue whose latest
// place is last, whose send was abandoned, as the CUBIC bucket does (see
// credit): the latest place just leaves the queue; another gives its
// credit to the places behind it, which move up one.
func (q *published) giveBack(t float64, n, last uint64) {
	if n == last && n > 0 {
		q.credit.giveBack(n, last)
		return
	}
	if q.pacing(t) {
		q.refill(t, last)
		q.credit.giveBack(n, last)
	}
}

// RecordQuotaAt records, as of now, the outcome of one attempt sent to
// scope, whose response publishes a quota, and then the quota: it is
// RecordAt(now, scope, k) and the quota in one call, which finds the scope
// and takes its lock once. The quota is remaining requests left in the
// server's current window, which resets after reset
// (retryafter.ParseQuota reads both). Until the window resets, the
// scope's sends are paced at its part of what is left over the time to
// the reset (see Even shares in published.go), recomputed at each call; a
// send waits the longer of that pace and the CUBIC bucket's. Call it, in
// place of RecordAt, for every response that carries the fields,
// successful or throttled. From the reset until the next call with a
// window still ahead, the quota paces nothing.
//
// Answers are taken in the order they are recorded, with two exceptions:
// a reset more than a second earlier than the one known, while that one is
// still ahead, is from a window that has ended and is ignored; and within a
// second of it (with no more remaining than before), the earlier reset is
// kept, since whole seconds are rounded. A reset of 0 or less is ignored,
// and so is the quota of every call in reference mode, whose algorithm is
// the SDKs': the outcome is still recorded. The pace never holds a send
// longer than the time to the reset, nor longer than 20 seconds: a send it
// would hold longer goes without waiting for the quota, and the server's
// answer says what to do, as it would without pacing. A negative
// remaining counts as 0.
//
// The first call for a scope stores its state, which allocates; later
// calls do not.
func (a *Adaptive) RecordQuotaAt(now time.Time, scope string, k classify.Kind, remaining int64, reset time.Duration) {
	p := a.params()
	s := a.scope(now, scope, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.at(now)
	s.record(t, k == classify.Throttle, p)
	if !a.Reference {
		s.quota.update(t, max(remaining, 0), reset.Seconds(), s.issued)
	}
}

// RecordQuota is RecordQuotaAt at a.Now(), or the wall clock if a.Now is
// nil.
func (a *Adaptive) RecordQuota(scope string, k classify.Kind, remaining int64, reset time.Duration) {
	a.RecordQuotaAt(a.now(), scope, k, remaining, reset)
}

// sendWait returns how long, in seconds from t, a new reservation would
// wait: the longer of the CUBIC bucket's wait and the published quota's.
func (s *scopeState) sendWait(t float64, p *params) float64 {
	return max(s.wait(t, p), s.quota.wait(t, s.issued))
}

// sendTake takes a place in the queue, which both the CUBIC bucket and the
// published quota pace, and returns it.
func (s *scopeState) sendTake() uint64 { return s.take() }

// sendDelay returns how long, in seconds from t, the reservation at place
// n still waits, in both paces.
func (s *scopeState) sendDelay(t float64, n uint64, p *params) float64 {
	return max(s.delay(t, n, p), s.quota.delay(t, n, s.issued))
}

// sendGiveBack returns place n to both paces, the published quota's first,
// while the latest place is still the one n was measured against.
func (s *scopeState) sendGiveBack(t float64, n uint64, p *params) {
	s.quota.giveBack(t, n, s.issued)
	s.giveBack(t, n, p)
}
