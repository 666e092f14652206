package retryafter

import (
	"net/http"
	"strings"
	"time"
)

// Canonical names of the fields of the IETF draft "RateLimit header fields
// for HTTP" (draft-ietf-httpapi-ratelimit-headers). Drafts -00 to -06
// define separate RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
// fields; draft -07 one RateLimit Dictionary; drafts -08 and later one
// RateLimit List of quota policies.
const (
	headerRateLimit     = "Ratelimit"
	headerIETFReset     = "Ratelimit-Reset"
	headerIETFRemaining = "Ratelimit-Remaining"
)

// parseIETF reads the IETF rate-limit fields of h as of now. The RateLimit
// field, in the form of any draft, comes first; when it is absent,
// malformed or names no exhausted policy, the separate RateLimit-Reset
// field is read instead, and it counts only when RateLimit-Remaining is
// absent or 0 (see [exhausted]). Every reset is read by magnitude, as
// [resetDelay] says: the drafts define delta-seconds, but GitLab sends a
// Unix time in RateLimit-Reset. Unlike X-RateLimit-Reset, the drafts allow
// no fraction.
func parseIETF(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := parseRateLimit(h[headerRateLimit], now); ok {
		return d, true
	}
	if !exhausted(h, headerIETFRemaining) {
		return 0, false
	}
	n, ok := parseUint(trimOWS(first(h, headerIETFReset)))
	if !ok {
		return 0, false
	}
	return resetDelay(n, 0, now), true
}

// parseRateLimit reads the lines of a RateLimit field as of now. Several
// lines are one field, joined with commas before parsing as RFC 9651 §4.2
// says; lines that are empty or only whitespace are skipped. The field is
// first read as a List, the form of drafts -08 and later:
//
//	RateLimit: "burst";r=0;t=30, "daily";r=120;t=86400
//
// Each Item names a quota policy (a String in the drafts; a Token or any
// bare item is accepted) and carries the remaining quota in its r
// parameter and the seconds until more quota is available in t; other
// parameters are ignored, and a repeated parameter counts with its last
// value. An Item counts when its r is 0 or absent and its t is a
// non-negative Integer; an r above 0, or one that is not a non-negative
// Integer, means the policy is not what blocks the client, and a t that is
// absent or not a non-negative Integer gives nothing to wait for. When
// several Items count, the delay is the longest: the client must wait for
// every exhausted policy. Inner Lists are skipped.
//
// A value that is not a valid List is read as the Dictionary of draft -07:
//
//	RateLimit: limit=100, remaining=0, reset=30
//
// where the last reset counts when the last remaining is 0 or absent, and
// is ignored when remaining holds anything else.
//
// parseRateLimit reports false when the field is absent, is neither a
// valid List nor a valid Dictionary, or has no reset that counts. It
// allocates only to join several non-empty lines.
func parseRateLimit(lines []string, now time.Time) (time.Duration, bool) {
	v := fieldValue(lines)
	if v == "" {
		return 0, false
	}
	if d, ok, valid := rateLimitList(v, now); valid {
		return d, ok
	}
	return rateLimitDict(v, now)
}

// fieldValue returns the lines of a structured field as one value: the
// lines that are not empty after trimming optional whitespace, joined with
// ", " (RFC 9651 §4.2). It allocates only to join several non-empty lines.
func fieldValue(lines []string) string {
	var v string
	for i, line := range lines {
		if line = trimOWS(line); line == "" {
			continue
		}
		if v != "" {
			// Rare: join this and the remaining lines.
			return joinLines(v, lines[i:])
		}
		v = line
	}
	return v
}

// joinLines appends to v the lines that are not empty after trimming
// optional whitespace, each after ", ".
func joinLines(v string, lines []string) string {
	var b strings.Builder
	b.WriteString(v)
	for _, line := range lines {
		if line = trimOWS(line); line != "" {
			b.WriteString(", ")
			b.WriteString(line)
		}
	}
	return b.String()
}

// rateLimitList reads v as a List of quota policies; valid is false on a
// syntax error.
func rateLimitList(v string, now time.Time) (d time.Duration, ok, valid bool) {
	valid = eachPolicy(v, func(r, t sfValue) {
		if rd, counts := policyDelay(r, t, now); counts && (!ok || rd > d) {
			d, ok = rd, true
		}
	})
	if !valid {
		return 0, false, false
	}
	return d, ok, true
}

// eachPolicy reads v as a List of quota policies and calls f with the r
// and t parameters of each Item, in order (each sfAbsent when not given,
// the last value when repeated); Inner Lists are skipped. It reports false
// on a syntax error, after calling f for the Items before it.
func eachPolicy(v string, f func(r, t sfValue)) bool {
	p := sfScanner{s: v}
	for more := true; more; {
		if p.peek('(') {
			if !p.innerList() {
				return false
			}
		} else {
			if _, good := p.bareItem(); !good {
				return false
			}
			var r, t sfValue
			for p.peek(';') {
				k, pv, good := p.param()
				if !good {
					return false
				}
				switch k {
				case "r":
					r = pv
				case "t":
					t = pv
				}
			}
			f(r, t)
		}
		var good bool
		if more, good = p.next(); !good {
			return false
		}
	}
	return true
}

// rateLimitDict reads v as the Dictionary of draft -07, keeping the last
// remaining and reset members. It reports false on a syntax error too.
func rateLimitDict(v string, now time.Time) (time.Duration, bool) {
	remaining, reset, ok := dictMembers(v)
	if !ok {
		return 0, false
	}
	return policyDelay(remaining, reset, now)
}

// dictMembers reads v as the Dictionary of draft -07 and returns its last
// remaining and reset members (sfAbsent when not given); ok is false on a
// syntax error.
func dictMembers(v string) (remaining, reset sfValue, ok bool) {
	p := sfScanner{s: v}
	for more := true; more; {
		k, good := p.key()
		if !good {
			return sfValue{}, sfValue{}, false
		}
		val := sfValue{kind: sfOther} // a member without "=" is the Boolean true
		if p.peek('=') {
			p.i++
			if p.peek('(') {
				good = p.innerList()
			} else {
				val, good = p.bareItem()
				good = good && p.skipParams()
			}
		} else {
			good = p.skipParams()
		}
		if !good {
			return sfValue{}, sfValue{}, false
		}
		switch k {
		case "remaining":
			remaining = val
		case "reset":
			reset = val
		}
		if more, good = p.next(); !good {
			return sfValue{}, sfValue{}, false
		}
	}
	return remaining, reset, true
}

// policyDelay returns the delay that one policy's remaining quota r and
// reset t ask for: t read by [resetDelay] when r is absent or 0 and t is a
// non-negative Integer, and false otherwise.
func policyDelay(r, t sfValue, now time.Time) (time.Duration, bool) {
	if n, ok := r.count(); r.kind != sfAbsent && (!ok || n != 0) {
		return 0, false
	}
	n, ok := t.count()
	if !ok {
		return 0, false
	}
	return resetDelay(n, 0, now), true
}
