package retryafter

import (
	"net/http"
	"strings"
	"time"
)

// MaxDelay is the longest delay that [Parse], [ParseValue] and
// [ParseSources] return: 2^62 nanoseconds, about 146 years. Larger values,
// such as "99999999999999999999999" seconds or a date in the year 9999,
// saturate here rather than overflow. The value is half the largest
// time.Duration, so a caller can add another delay of up to MaxDelay
// without overflowing before comparing the sum with its cap.
const MaxDelay time.Duration = 1 << 62

// headerRetryAfter is the canonical name of the field.
const headerRetryAfter = "Retry-After"

// Parse reads the Retry-After field of h as of now: RFC 9110 §10.2.3,
// either delay-seconds or an HTTP-date. The field value is read as by
// [ParseValue].
//
// It reports false when the field is absent or malformed; the caller then
// ignores it. When the field appears several times, only the first value
// counts, as with [http.Header.Get]. A nil h has no field.
//
// Parse does not allocate for the delay-seconds form.
func Parse(h http.Header, now time.Time) (time.Duration, bool) {
	return ParseValue(h.Get(headerRetryAfter), now)
}

// ParseValue parses one Retry-After field value as of now.
//
// Optional whitespace (spaces and tabs) around the value is ignored. The
// value is then either:
//
//   - delay-seconds: one or more ASCII digits, a whole number of seconds.
//     Leading zeros are allowed; signs, fractions, exponents and inner
//     spaces are not. A number too large to represent saturates at
//     [MaxDelay] and still reports true: the server asked for it, and the
//     caller's cap decides what to do with it.
//   - an HTTP-date in one of the three formats RFC 9110 §5.6.7 accepts:
//     IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the obsolete RFC 850
//     form ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6
//     08:49:37 1994"), as parsed by [http.ParseTime]. The zone of the
//     first two must be GMT. Two-digit years follow [time.Parse]: 69 to 99
//     mean 19xx and 00 to 68 mean 20xx. The delay is the time from now to
//     the date; a date at or before now gives 0 and true, and a date past
//     now+MaxDelay gives MaxDelay.
//
// Otherwise, and for an empty value, ParseValue returns 0 and false. Every
// delay it returns lies in [0, MaxDelay].
func ParseValue(v string, now time.Time) (time.Duration, bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v); ok {
		return d, true
	}
	return parseDate(v, now)
}

// parseSeconds parses delay-seconds (RFC 9110 §10.2.3: 1*DIGIT),
// saturating at [MaxDelay]. It reports false if v holds anything but ASCII
// digits.
func parseSeconds(v string) (time.Duration, bool) {
	n, ok := parseUint(v)
	if !ok {
		return 0, false
	}
	return scale(n, time.Second), true
}

// parseDate parses an HTTP-date (RFC 9110 §5.6.7) and returns its distance
// from now, clamped to [0, MaxDelay].
func parseDate(v string, now time.Time) (time.Duration, bool) {
	// IMF-fixdate and the RFC 850 form both carry a comma after the day
	// name and must end in GMT. http.ParseTime would accept any zone name
	// in the RFC 850 form, and time.Parse resolves such names through the
	// process's local time zone, so the result would depend on the host.
	if strings.IndexByte(v, ',') >= 0 && !strings.HasSuffix(v, " GMT") {
		return 0, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return until(t, now), true
}

// trimOWS removes optional whitespace (RFC 9110 §5.6.3: spaces and
// horizontal tabs) from both ends of v.
func trimOWS(v string) string {
	for v != "" && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for v != "" && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
