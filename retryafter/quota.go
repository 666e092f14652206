package retryafter

import (
	"math"
	"net/http"
	"time"
)

// Quota is what a response says is left of a server's rate limit: the
// requests (quota units, in the IETF draft's words) that the current
// window still admits, and how long until the window resets and the quota
// is whole again. A client that spreads Remaining over Reset spends the
// window without being refused.
type Quota struct {
	Remaining int64         // left in the current window; never negative
	Reset     time.Duration // until the window resets, in [0, MaxDelay]; 0 when it has already
}

// ParseQuota reads the quota that h publishes as of now, from the fields
// of the trusted sources: [IETFRateLimit] and [RateLimitReset]; other bits
// of trusted are ignored. Unlike [ParseSources], which reads a reset only
// as a wait, it reads the fields whatever the remaining count, since a
// count above 0 is what a client paces by. It reports which source the
// quota came from.
//
// The sources are tried in this order, and the first that yields both a
// remaining count and a reset wins:
//
//  1. [IETFRateLimit], the RateLimit field: as a List (drafts -08 and
//     later, "burst";r=50;t=30), the Items whose r and t are both
//     non-negative Integers; when there are several, the one that admits
//     the lowest rate, r over its reset (the longer reset among equal
//     rates), since a client must keep within every policy. As the
//     Dictionary of draft -07 (limit=100, remaining=50, reset=30), its
//     remaining and reset members.
//  2. [IETFRateLimit], the separate RateLimit-Remaining and RateLimit-Reset
//     fields of drafts -00 to -06.
//  3. [RateLimitReset]: X-RateLimit-Remaining and X-RateLimit-Reset, as
//     GitHub and many other APIs send them.
//
// Values are read as ParseSources reads them: the first value of a field
// counts, except for RateLimit, whose lines form one field; counts are
// ASCII digits, saturating at math.MaxInt64; every reset is read by
// magnitude (delta-seconds below 1e9, then Unix seconds, then Unix
// milliseconds), and only X-RateLimit-Reset accepts a fraction. A reset at
// or before now gives a Reset of 0. A malformed or missing value in a
// source makes ParseQuota try the next one.
//
// ParseQuota reports false, with the zero Quota and Source, when no
// trusted source yields a quota. A nil h has no fields. It allocates only
// to join a RateLimit field split over several lines.
func ParseQuota(h http.Header, now time.Time, trusted Source) (q Quota, from Source, ok bool) {
	if trusted&IETFRateLimit != 0 {
		if q, ok := quotaRateLimit(h[headerRateLimit], now); ok {
			return q, IETFRateLimit, true
		}
		if q, ok := quotaFields(first(h, headerIETFRemaining), first(h, headerIETFReset), false, now); ok {
			return q, IETFRateLimit, true
		}
	}
	if trusted&RateLimitReset != 0 {
		if q, ok := quotaFields(first(h, headerXRemaining), first(h, headerXReset), true, now); ok {
			return q, RateLimitReset, true
		}
	}
	return Quota{}, 0, false
}

// HasQuotaFields reports whether h has a field that ParseQuota reads a
// remaining count from: RateLimit, RateLimit-Remaining or
// X-RateLimit-Remaining, in canonical form as net/http stores them. When
// it is false ParseQuota finds nothing, so a caller may skip it, and the
// clock reading its now needs; most responses publish no quota.
func HasQuotaFields(h http.Header) bool {
	return h[headerRateLimit] != nil || h[headerIETFRemaining] != nil || h[headerXRemaining] != nil
}

// quotaFields reads a quota from a remaining count and a reset in separate
// fields, the reset with a fraction only if frac is set.
func quotaFields(remaining, reset string, frac bool, now time.Time) (Quota, bool) {
	n, ok := parseUint(trimOWS(remaining))
	if !ok {
		return Quota{}, false
	}
	var d time.Duration
	if frac {
		d, ok = parseXReset(reset, now)
	} else {
		var r int64
		if r, ok = parseUint(trimOWS(reset)); ok {
			d = resetDelay(r, 0, now)
		}
	}
	return Quota{Remaining: n, Reset: d}, ok
}

// quotaRateLimit reads the quota of a RateLimit field's lines as of now:
// the binding policy of a List, or the members of a draft -07 Dictionary
// when the value is not a valid List.
func quotaRateLimit(lines []string, now time.Time) (Quota, bool) {
	v := fieldValue(lines)
	if v == "" {
		return Quota{}, false
	}
	var q Quota
	var found bool
	valid := eachPolicy(v, func(r, t sfValue) {
		if p, counts := policyQuota(r, t, now); counts && (!found || binds(p, q)) {
			q, found = p, true
		}
	})
	if valid {
		return q, found
	}
	remaining, reset, ok := dictMembers(v)
	if !ok {
		return Quota{}, false
	}
	return policyQuota(remaining, reset, now)
}

// policyQuota returns the quota of one policy whose remaining count is r
// and reset t, both non-negative Integers; false otherwise.
func policyQuota(r, t sfValue, now time.Time) (Quota, bool) {
	n, ok := r.count()
	if !ok {
		return Quota{}, false
	}
	s, ok := t.count()
	if !ok {
		return Quota{}, false
	}
	return Quota{Remaining: n, Reset: resetDelay(s, 0, now)}, true
}

// binds reports whether quota p admits a lower rate than q, Remaining over
// Reset, or the same rate with a longer Reset. A Reset of 0 admits any
// rate: its window is over.
func binds(p, q Quota) bool {
	rp, rq := rate(p), rate(q)
	if rp != rq {
		return rp < rq
	}
	return p.Reset > q.Reset
}

// rate returns what q admits per second: +Inf when its window is over.
func rate(q Quota) float64 {
	if q.Reset <= 0 {
		return math.Inf(1)
	}
	return float64(q.Remaining) / q.Reset.Seconds()
}
