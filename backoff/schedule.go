package backoff

import (
	"math"
	"time"
)

// Defaults and limits of an SNS delivery policy (docs/sns.md).
const (
	snsDefaultDelay   = 20 * time.Second // minDelayTarget and maxDelayTarget
	snsDefaultRetries = 3                // numRetries
	snsMinDelay       = time.Second      // lowest minDelayTarget
	snsMaxDelay       = 3600 * time.Second
	snsMaxRetries     = 100
)

// totalExactBackoff is the longest backoff phase whose delays [Schedule.Total]
// adds one by one; SNS allows 100 retries in all.
const totalExactBackoff = 1 << 16

// Schedule is the retry schedule of an Amazon SNS delivery policy
// (docs/sns.md): four phases of retries, in this order,
//
//  1. immediate: NumNoDelayRetries retries with no delay;
//  2. pre-backoff: NumMinDelayRetries retries of MinDelay each;
//  3. backoff: k = NumRetries - NumNoDelayRetries - NumMinDelayRetries -
//     NumMaxDelayRetries retries whose delays grow from MinDelay at the
//     first to MaxDelay at the last along BackoffFunction (see [Curve]);
//  4. post-backoff: NumMaxDelayRetries retries of MaxDelay each.
//
// For retry n, counted from 1, with a, b, c the counts of phases 1, 2, 4:
//
//	Delay(n) = 0                                   for n <= a
//	         = MinDelay                            for a < n <= a+b
//	         = BackoffFunction(n-a-b, k)           for a+b < n <= a+b+k
//	         = MaxDelay                            for n > a+b+k
//
// Retries beyond the policy, past NumRetries, also wait MaxDelay: the
// transport's MaxAttempts, not the Schedule, decides when to stop, and
// should be NumRetries + 1 to follow the policy. A zero NumRetries means
// SNS's default of 3 here; SNS's numRetries 0, no retries at all, is
// MaxAttempts 1 in the transport.
//
// When the other three phases add up to more than NumRetries, the backoff
// phase is empty and the three phases are kept whole; [Schedule.Validate]
// reports such a Schedule.
//
// With the zero value (MinDelay = MaxDelay = 20s, 3 retries, linear,
// SNS's defaults) every retry waits 20s.
//
// # Jitter
//
// SNS jitters its retries but does not say by how much, so Jitter is off
// by default. When it is set, a delay d is shortened by a random part of
// up to the fraction Jitter of its distance above MinDelay:
//
//	Delay(n) = d - Jitter * Rand() * (d - MinDelay)
//
// Jitter thus never takes a delay out of [MinDelay, MaxDelay] and never
// lengthens it, so [Schedule.Total] stays an upper bound of the jittered
// waits. Immediate retries stay 0 and pre-backoff retries stay MinDelay;
// when MinDelay equals MaxDelay, as in SNS's defaults, nothing is jittered.
//
// # Presets
//
// SNS's own policies (docs/sns.md), in Schedule terms and with their delays:
//
//	AWS-managed endpoints (SQS, Lambda, Firehose): MinDelay 1s, MaxDelay 20s,
//	NumRetries 100015, NumNoDelayRetries 3, NumMinDelayRetries 2,
//	NumMaxDelayRetries 100000, CurveExponential
//	  retries 1-3          0
//	  retries 4-5          1s
//	  retries 6-15         1, 1.39, 1.95, 2.71, 3.79, 5.28, 7.37, 10.28, 14.34, 20 s
//	  retries 16-100015    20s
//	  Total                2,000,070.1s, about 23.1 days
//
//	Customer-managed endpoints (SMTP, SMS, mobile push): MinDelay 10s,
//	MaxDelay 600s, NumRetries 50, NumMinDelayRetries 2,
//	NumMaxDelayRetries 38, CurveExponential
//	  retries 1-2          10s
//	  retries 3-12         10, 15.76, 24.84, 39.15, 61.70, 97.24, 153.26, 241.55, 380.70, 600 s
//	  retries 13-50        600s
//	  Total                24,444.2s, about 6.8 hours
//
//	SNS's example HTTP/S policy: MinDelay 1s, MaxDelay 60s, NumRetries 50,
//	NumNoDelayRetries 3, NumMinDelayRetries 2, NumMaxDelayRetries 35,
//	CurveExponential
//	  retries 1-3          0
//	  retries 4-5          1s
//	  retries 6-15         1, 1.58, 2.48, 3.91, 6.17, 9.72, 15.33, 24.15, 38.07, 60 s
//	  retries 16-50        60s
//	  Total                2,264.4s
//
// A Schedule is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type Schedule struct {
	// MinDelay is SNS's minDelayTarget: the delay of each pre-backoff
	// retry and of the first backoff retry. Zero or negative means 20s. A
	// MinDelay above MaxDelay is lowered to MaxDelay.
	MinDelay time.Duration

	// MaxDelay is SNS's maxDelayTarget: the delay of the last backoff
	// retry, of each post-backoff retry and of any retry past the policy.
	// No delay exceeds it. Zero or negative means 20s.
	MaxDelay time.Duration

	// NumRetries is SNS's numRetries, the number of retries in all four
	// phases together. Zero or negative means 3.
	NumRetries int

	// NumNoDelayRetries is SNS's numNoDelayRetries, the retries of the
	// immediate phase. Negative counts as zero.
	NumNoDelayRetries int

	// NumMinDelayRetries is SNS's numMinDelayRetries, the retries of the
	// pre-backoff phase. Negative counts as zero.
	NumMinDelayRetries int

	// NumMaxDelayRetries is SNS's numMaxDelayRetries, the retries of the
	// post-backoff phase. Negative counts as zero.
	NumMaxDelayRetries int

	// BackoffFunction is SNS's backoffFunction, the shape of the backoff
	// phase. The zero value is CurveLinear, SNS's default; a value other
	// than the four constants counts as CurveLinear.
	BackoffFunction Curve

	// Jitter is the largest fraction of a delay's distance above MinDelay
	// that the jitter may take off (see Jitter above). Zero, negative and
	// NaN mean no jitter; values above 1 count as 1.
	Jitter float64

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use. It is called only when Jitter is positive, once per
	// delay above MinDelay. Values outside [0, 1] are clamped into it, and
	// NaN counts as 0. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns the wait before retry number retry, counted from 1,
// following the four phases; a retry below 1 is treated as 1. Delay never
// returns a negative duration or one above MaxDelay (20s when MaxDelay is
// not positive), and never one below MinDelay except the 0 of an
// immediate retry.
func (s Schedule) Delay(retry int) time.Duration {
	p := s.resolve()
	d := p.delay(max(retry, 1))
	j := unit(s.Jitter)
	if j == 0 || d <= p.lo {
		return d
	}
	return shorten(d, d-p.lo, j*draw(s.Rand))
}

// Total returns the sum of the delays of all the policy's retries without
// jitter: NumMinDelayRetries*MinDelay, the backoff phase's delays and
// NumMaxDelayRetries*MaxDelay. Use it to check a policy against a time
// budget, such as SNS's 3,600s limit on the retries of an HTTP/S
// endpoint, which [Schedule.Validate] does not check. Jitter only
// shortens delays, so Total bounds the jittered waits too.
//
// Total saturates at the largest Duration instead of overflowing. It adds
// the backoff delays one by one, exactly, for a backoff phase of up to
// 65,536 retries; past that, far beyond the 100 retries SNS allows, it
// counts each further retry at MaxDelay, so Total is then an upper bound.
func (s Schedule) Total() time.Duration {
	p := s.resolve()
	total := mulSat(p.lo, p.preBackoff)
	exact := min(p.backoff, totalExactBackoff)
	for i := 1; i <= exact; i++ {
		total = addSat(total, p.curve.at(i, p.backoff, p.lo, p.hi))
	}
	total = addSat(total, mulSat(p.hi, p.backoff-exact))
	return addSat(total, mulSat(p.hi, p.postBackoff))
}

// plan is a Schedule with its defaults resolved and its counts made
// consistent: every count is non-negative and 0 < lo <= hi.
type plan struct {
	lo, hi      time.Duration
	immediate   int
	preBackoff  int
	backoff     int
	postBackoff int
	curve       Curve
}

// resolve returns the plan of s, with its zero and out-of-range fields
// resolved as their docs say.
func (s Schedule) resolve() plan {
	p := plan{
		hi:          orDefault(s.MaxDelay, snsDefaultDelay),
		immediate:   max(s.NumNoDelayRetries, 0),
		preBackoff:  max(s.NumMinDelayRetries, 0),
		postBackoff: max(s.NumMaxDelayRetries, 0),
		curve:       s.BackoffFunction,
	}
	p.lo = min(orDefault(s.MinDelay, snsDefaultDelay), p.hi)
	n := s.NumRetries
	if n <= 0 {
		n = snsDefaultRetries
	}
	// k = n - a - b - c, floored at 0; subtracting one count at a time
	// cannot overflow, whereas a + b + c can.
	for _, c := range []int{p.immediate, p.preBackoff, p.postBackoff} {
		n -= min(c, n)
	}
	p.backoff = n
	return p
}

// delay returns the delay of retry n >= 1 without jitter.
func (p plan) delay(n int) time.Duration {
	switch ph, i, k := p.phase(n); ph {
	case PhaseImmediate:
		return 0
	case PhasePreBackoff:
		return p.lo
	case PhaseBackoff:
		return p.curve.at(i, k, p.lo, p.hi)
	}
	return p.hi // post-backoff, and any retry past the policy
}

// phase returns the phase of retry n >= 1 and, in the backoff phase, n's
// position in it and its length. It compares n with each phase in turn
// rather than with sums of counts, which could overflow.
func (p plan) phase(n int) (ph Phase, i, k int) {
	if n <= p.immediate {
		return PhaseImmediate, 0, 0
	}
	n -= p.immediate
	if n <= p.preBackoff {
		return PhasePreBackoff, 0, 0
	}
	n -= p.preBackoff
	if n <= p.backoff {
		return PhaseBackoff, n, p.backoff
	}
	n -= p.backoff
	if n <= p.postBackoff {
		return PhasePostBackoff, 0, 0
	}
	return PhasePast, 0, 0
}

// addSat returns a + b for a, b >= 0, saturating at math.MaxInt64.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns d * n for d, n >= 0, saturating at math.MaxInt64.
func mulSat(d time.Duration, n int) time.Duration {
	if n == 0 || d == 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}
