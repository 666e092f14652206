package retryafter

import (
	"net/http"
	"time"
)

// Canonical names of the de facto rate-limit fields that GitHub (as
// x-ratelimit-reset and x-ratelimit-remaining) and many other APIs send.
const (
	headerXReset     = "X-Ratelimit-Reset"
	headerXRemaining = "X-Ratelimit-Remaining"
)

// A reset value is either a number of seconds from now or an absolute Unix
// time, and the fields do not say which: GitHub sends Unix seconds in
// X-RateLimit-Reset, some servers add a fraction of a second, GitLab sends
// Unix seconds in RateLimit-Reset, and Reddit and servers following the
// early IETF drafts send delta-seconds. No rate-limit window lasts decades,
// so the magnitude tells them apart.
const (
	// minUnixSeconds is the smallest reset read as Unix seconds: 1e9 is
	// 2001-09-09T01:46:40Z, and as a delay it would be almost 32 years.
	minUnixSeconds = 1_000_000_000
	// minUnixMillis is the smallest reset read as Unix milliseconds: 1e12
	// is 2001-09-09T01:46:40Z again, and as Unix seconds it would fall in
	// the year 33658.
	minUnixMillis = 1_000_000_000_000
)

// resetDelay returns the delay from now until a reset given as n whole
// units plus frac billionths of a unit (0 <= frac < 1e9), with the unit
// told apart by magnitude:
//
//   - n < 1e9: delay-seconds from now. The delay is below 32 years, so it
//     never saturates.
//   - 1e9 <= n < 1e12: a Unix time in seconds.
//   - n >= 1e12: a Unix time in milliseconds.
//
// A Unix time at or before now gives 0, and one past now+MaxDelay gives
// MaxDelay. n must not be negative.
func resetDelay(n, frac int64, now time.Time) time.Duration {
	switch {
	case n < minUnixSeconds:
		return time.Duration(n)*time.Second + time.Duration(frac)
	case n < minUnixMillis:
		return until(time.Unix(n, frac), now)
	}
	// frac is in billionths of a millisecond here, so frac/1000 is in
	// nanoseconds.
	return until(time.Unix(n/1000, n%1000*int64(time.Millisecond)+frac/1000), now)
}

// parseXReset parses one X-RateLimit-Reset value as of now: optional
// whitespace, digits, and an optional fraction after a "." (Discord sends
// "1470173023.123"), read by magnitude as [resetDelay] says. Signs,
// exponents and anything else make it malformed, and it reports false.
//
// It does not allocate.
func parseXReset(v string, now time.Time) (time.Duration, bool) {
	n, frac, ok := parseFixed(trimOWS(v))
	if !ok {
		return 0, false
	}
	return resetDelay(n, frac, now), true
}

// exhausted reports whether the remaining-quota field key of h allows its
// reset to be read as a requested delay: the field is absent or empty, or
// its first value is exactly 0. A positive count means the server has
// quota left, so its reset says when the window rolls over, not when to
// come back; a malformed count leaves that unknown, and the reset is not
// trusted either.
func exhausted(h http.Header, key string) bool {
	v := trimOWS(first(h, key))
	if v == "" {
		return true
	}
	n, ok := parseUint(v)
	return ok && n == 0
}

// Remaining returns the X-RateLimit-Remaining field of h: the requests
// left in the current rate-limit window, as GitHub's primary rate limit
// and many other APIs report it. A classifier can treat a 403 or 429 with
// 0 remaining as a throttle to wait out until the reset that
// [ParseSources] reads from X-RateLimit-Reset.
//
// Only the first value counts, as with [http.Header.Get]. Optional
// whitespace around it is ignored; the rest must be ASCII digits. A number
// too large for an int64 saturates at math.MaxInt64. Remaining reports
// false, with 0, when the field is absent, empty or malformed (a sign,
// fraction or any other character). It does not allocate.
func Remaining(h http.Header) (int64, bool) {
	return parseUint(trimOWS(first(h, headerXRemaining)))
}
