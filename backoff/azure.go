package backoff

import (
	"math"
	"time"
)

// This file holds the three retry strategies of Azure's Transient Fault
// Handling Application Block, "Topaz" (docs/azure.md). Topaz computes
// each interval from its current retry count, which is 0 before the first
// retry; here n = retry - 1 plays that part. Its fastFirstRetry option
// skips the wait before the first retry and leaves the later intervals
// as they are.
//
// Topaz turns fastFirstRetry on by default, but a Go bool is false when
// unset, so the zero values here have it off. The presets of package
// policy that model Topaz set it explicitly.

// Topaz defaults (docs/azure.md).
const (
	azureMinBackoff   = time.Second
	azureMaxBackoff   = 30 * time.Second
	azureDeltaBackoff = 10 * time.Second
	azureInitial      = time.Second
	azureIncrement    = time.Second
	azureInterval     = time.Second
)

// Exponential is Azure's randomized exponential backoff, Topaz's
// ExponentialBackoff and the Storage client's ExponentialRetry (docs/azure.md).
// For retry n, counted from 1, and Topaz's retry count k = n - 1,
//
//	d        = uniform in [0.8*DeltaBackoff, 1.2*DeltaBackoff), from Rand
//	Delay(n) = min(MinBackoff + (2^k - 1) * d, MaxBackoff)
//	Delay(1) = 0 instead when FastFirstRetry is set
//
// so retry 1 waits MinBackoff (2^0 - 1 = 0), retry 2 MinBackoff + d,
// retry 3 MinBackoff + 3d, and so on, up to MaxBackoff.
//
// With the zero value (MinBackoff 1s, MaxBackoff 30s, DeltaBackoff 10s,
// Topaz's defaults) the delays are:
//
//	retry n    1     2            3            4 and later
//	range      1s    [9s, 13s)    [25s, 30s]   30s
//	Rand 0.5   1s    11s          30s          30s
//
// The Storage client's exponential policy (MinBackoff 3s, MaxBackoff 30s,
// DeltaBackoff 4s, three retries, no fast first retry) gives
//
//	retry n    1     2               3
//	range      3s    [6.2s, 7.8s)    [12.6s, 17.4s)
//	Rand 0.5   3s    7s              15s
//
// which reproduces the "about 3, 7 and 15 s" the Azure guide lists for it
// exactly at the midpoint of the random range. It takes both k = 0 for the
// first retry (k = 1 would give 7, 15 and 30s) and the 3s MinBackoff that
// the guide gives for Storage and docs/azure.md leaves out. The guide words the
// delays as maxima ("up to 3, 7, 15 s"), which the random range does not
// bear out: retries 2 and 3 can reach 7.8s and 17.4s.
// Likewise the guide's background suggestion (MinBackoff 0, MaxBackoff
// 60s, DeltaBackoff 2s; "about 2, 6, 14, 30 s") is, at Rand 0.5, 0, 2s,
// 6s, 14s and 30s for retries 1 to 5; use NoMinBackoff for its zero
// minimum.
//
// Every result lies in [0, MaxBackoff], for any retry number; retry
// numbers below 1 are treated as 1 and large ones do not overflow.
//
// Exponential is a stateless value: it is safe for concurrent use as long
// as Rand is, and one value can be shared by all requests.
type Exponential struct {
	// MinBackoff is added to every interval, so retry 1 waits exactly
	// this. Zero or negative means 1s (Topaz's default); use NoMinBackoff
	// for a minimum of zero.
	MinBackoff time.Duration

	// MaxBackoff caps every interval. Zero or negative means 30s. A
	// MinBackoff above MaxBackoff makes every delay MaxBackoff.
	MaxBackoff time.Duration

	// DeltaBackoff sets the random step: each call draws d uniformly from
	// [0.8*DeltaBackoff, 1.2*DeltaBackoff). Zero or negative means 10s.
	DeltaBackoff time.Duration

	// NoMinBackoff makes the minimum zero, ignoring MinBackoff, as in the
	// Azure guide's background and Service Bus examples (minBackoff 0).
	NoMinBackoff bool

	// FastFirstRetry makes retry 1 wait nothing; later retries are not
	// shifted. Topaz defaults to true, but the zero value here is false:
	// the Topaz presets of package policy set it.
	FastFirstRetry bool

	// Rand returns a number uniform in [0, 1) and must be safe for
	// concurrent use. Values outside [0, 1] are clamped into it, and NaN
	// counts as 0. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Delay returns the wait before retry number retry, counted from 1:
// min(MinBackoff + (2^(retry-1) - 1)*d, MaxBackoff) with d drawn from
// [0.8*DeltaBackoff, 1.2*DeltaBackoff), or 0 for retry 1 when
// FastFirstRetry is set. A retry below 1 is treated as 1. Delay never
// returns a negative duration or one above the cap: MaxBackoff, or 30s
// when MaxBackoff is not positive.
func (s Exponential) Delay(retry int) time.Duration {
	retry = max(retry, 1)
	if retry == 1 && s.FastFirstRetry {
		return 0
	}
	lo := orDefault(s.MinBackoff, azureMinBackoff)
	if s.NoMinBackoff {
		lo = 0
	}
	limit := orDefault(s.MaxBackoff, azureMaxBackoff)
	delta := orDefault(s.DeltaBackoff, azureDeltaBackoff)
	if lo >= limit {
		return limit
	}
	// Float64 throughout: 1.2*DeltaBackoff and (2^k - 1)*d overflow a
	// Duration for large inputs; fromFloat saturates at limit, including
	// the +Inf that math.Exp2 gives for a huge k.
	d := float64(delta) * (0.8 + 0.4*draw(s.Rand))
	steps := math.Exp2(float64(retry-1)) - 1
	return fromFloat(float64(lo)+steps*d, limit)
}

// Incremental is Azure's incremental retry, Topaz's Incremental strategy
// (docs/azure.md): the interval grows by a fixed step per retry. For retry n,
// counted from 1, and Topaz's retry count k = n - 1,
//
//	Delay(n) = Initial + Increment * k
//	Delay(1) = 0 instead when FastFirstRetry is set
//
// With the zero value (Initial 1s, Increment 1s, Topaz's defaults) the
// delays are 1s, 2s, 3s, 4s, ...; with FastFirstRetry they are 0, 2s, 3s,
// 4s, ...
//
// Like Topaz's, it has no cap: the delay grows without bound, saturating
// at the largest Duration rather than overflowing. Wrap it in [Capped] to
// bound it. Retry numbers below 1 are treated as 1.
//
// Incremental is a stateless value, safe for concurrent use.
type Incremental struct {
	// Initial is the delay of retry 1. Zero or negative means 1s.
	Initial time.Duration

	// Increment is added for each later retry. Zero or negative means 1s.
	Increment time.Duration

	// FastFirstRetry makes retry 1 wait nothing; later retries are not
	// shifted. Topaz defaults to true, but the zero value here is false:
	// the Topaz presets of package policy set it.
	FastFirstRetry bool
}

// Delay returns the wait before retry number retry, counted from 1:
// Initial + Increment*(retry-1), or 0 for retry 1 when FastFirstRetry is
// set. A retry below 1 is treated as 1. The result never overflows: it
// saturates at math.MaxInt64 nanoseconds.
func (s Incremental) Delay(retry int) time.Duration {
	retry = max(retry, 1)
	if retry == 1 && s.FastFirstRetry {
		return 0
	}
	initial := orDefault(s.Initial, azureInitial)
	step := orDefault(s.Increment, azureIncrement)
	k := time.Duration(retry - 1)
	if k > (math.MaxInt64-initial)/step {
		return math.MaxInt64
	}
	return initial + step*k
}

// Constant waits the same interval before every retry. It is Azure's
// "Linear" retry, which despite its name waits a fixed interval: Topaz's
// "Linear (fixed interval)" strategy (docs/azure.md) and the Storage client's
// LinearRetry.
//
//	Delay(n) = Interval
//	Delay(1) = 0 instead when FastFirstRetry is set
//
// With the zero value every retry waits 1s (Topaz's default). The Azure
// guide's interactive suggestion, 500ms three times with a fast first
// retry, is Constant{Interval: 500 * time.Millisecond, FastFirstRetry:
// true}: 0, 500ms, 500ms.
//
// Constant is a stateless value, safe for concurrent use.
type Constant struct {
	// Interval is the delay before each retry. Zero or negative means 1s.
	Interval time.Duration

	// FastFirstRetry makes retry 1 wait nothing. Topaz defaults to true,
	// but the zero value here is false: the Topaz presets of package
	// policy set it.
	FastFirstRetry bool
}

// Delay returns Interval, or 0 for retry 1 (and any retry below 1) when
// FastFirstRetry is set.
func (s Constant) Delay(retry int) time.Duration {
	if retry <= 1 && s.FastFirstRetry {
		return 0
	}
	return orDefault(s.Interval, azureInterval)
}
