package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Source names a response field, or a family of fields, that can carry a
// delay requested by the server. Sources are bits: a set of trusted
// sources is their bitwise OR, such as RetryAfter|AmzRetryAfter, and the
// zero Source is the empty set.
type Source uint16

// The sources [ParseSources] knows. Each constant's comment gives the
// field, as its senders spell it, and the form of its value.
const (
	// RetryAfter is Retry-After (RFC 9110 §10.2.3): delay-seconds or an
	// HTTP-date, read by [ParseValue].
	RetryAfter Source = 1 << iota
	// RetryAfterMS is retry-after-ms: whole milliseconds, sent by Azure
	// OpenAI and other Azure services, usually next to Retry-After.
	RetryAfterMS
	// MSRetryAfterMS is x-ms-retry-after-ms: whole milliseconds, sent by
	// Azure Cosmos DB (formerly DocumentDB) with its 429 responses
	// (docs/azure.md).
	MSRetryAfterMS
	// AmzRetryAfter is x-amz-retry-after: whole milliseconds, sent by AWS
	// services. AWS SDKs treat it as a hint bounded by their own backoff
	// (docs/aws.md); that bound is the caller's to apply.
	AmzRetryAfter
	// RateLimitReset is X-RateLimit-Reset: when the current rate-limit
	// window resets, as delta-seconds or a Unix time told apart by
	// magnitude, with an optional fraction of a second. It counts only
	// when X-RateLimit-Remaining is absent or 0. GitHub sends it, in Unix
	// seconds, with its primary rate limit.
	RateLimitReset
	// IETFRateLimit is the family of fields of the IETF draft "RateLimit
	// header fields for HTTP": the structured RateLimit field of drafts -07
	// and later ("burst";r=0;t=30, or limit=100, remaining=0, reset=30),
	// and the separate RateLimit-Reset field of the earlier drafts, which
	// counts only when RateLimit-Remaining is absent or 0.
	IETFRateLimit
)

// None is the set of a caller that trusts no field: it is not empty, so
// that a policy field whose zero value means [DefaultSources] can say
// "none", and ParseSources finds no delay in it. It holds a bit that names
// no field, and is meant to be used alone.
const None Source = 1 << 15

// AllSources is the set of every Source.
const AllSources = RetryAfter | RetryAfterMS | MSRetryAfterMS | AmzRetryAfter | RateLimitReset | IETFRateLimit

// DefaultSources is the set a caller trusts when it has not chosen one,
// such as a zero policy: all of them. None of the fields is ambiguous
// enough to leave out. The millisecond fields carry vendor names that
// servers use only for a wait. The reset fields count only when their
// remaining quota is 0 or not reported, so a response that merely reports
// a rate-limit window, as GitHub's do on every status, asks for nothing.
// The caller still compares every delay with its own cap. A caller that
// talks to a server whose fields mean something else leaves that Source
// out.
const DefaultSources = AllSources

// sourceNames are the names [Source.String] prints, in bit order.
var sourceNames = [...]string{
	"Retry-After",
	"retry-after-ms",
	"x-ms-retry-after-ms",
	"x-amz-retry-after",
	"X-RateLimit-Reset",
	"RateLimit",
}

// String returns the names of the fields in s, as their senders spell
// them, in bit order and joined by "|": for example
// "Retry-After|x-amz-retry-after". IETFRateLimit prints as "RateLimit".
// None prints as "none". Other bits that name no Source print as one
// hexadecimal number, and the empty set prints as "0".
func (s Source) String() string {
	switch s {
	case 0:
		return "0"
	case None:
		return "none"
	}
	var b strings.Builder
	for i, name := range sourceNames {
		if s&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := s &^ AllSources; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}

// ParseSources finds the delay that the server asks for in h as of now,
// reading only the fields of the trusted sources, and reports which Source
// it came from. A zero trusted set trusts nothing; resolving a zero policy
// field to [DefaultSources] is the caller's job.
//
// # Precedence
//
// The sources are tried in this order, and the first that yields a delay
// wins:
//
//  1. [RetryAfterMS], [MSRetryAfterMS], [AmzRetryAfter]: the millisecond
//     fields are the most precise, and Azure OpenAI sends retry-after-ms
//     next to a Retry-After in whole seconds.
//  2. [RetryAfter]: the standard field, which the IETF draft says takes
//     precedence over its own fields.
//  3. [IETFRateLimit]: the RateLimit field, then RateLimit-Reset.
//  4. [RateLimitReset]: X-RateLimit-Reset, last because its meaning varies
//     most between servers.
//
// # Values
//
// Only the first value of a field counts, as with [http.Header.Get],
// except for RateLimit, whose lines form one List. Whitespace around a
// value is ignored. Numbers are ASCII digits only, with no sign, exponent
// or unit; only X-RateLimit-Reset also accepts a fraction after a ".". A
// malformed value is ignored, and the next source is tried.
//
// Reset values, in X-RateLimit-Reset, RateLimit-Reset and the RateLimit
// field, are read by magnitude: below 1e9 they are delta-seconds (1e9 s is
// almost 32 years, longer than any rate-limit window); from 1e9 up to 1e12
// they are a Unix time in seconds (1e9 is 2001-09-09); from 1e12 on, a
// Unix time in milliseconds. A reset counts only when its remaining quota
// is 0 or not reported: a server with quota left is describing its window,
// not asking the client to wait. In the RateLimit field, when several
// policies are exhausted, the longest wait counts.
//
// A date or Unix time at or before now gives 0 and true. A delay too large
// to represent saturates at [MaxDelay]. Every delay lies in [0, MaxDelay];
// comparing it with a cap is the caller's job.
//
// ParseSources(h, now, RetryAfter) returns what [Parse] does. When no
// trusted source yields a delay, ParseSources returns 0, 0 and false. A
// nil h has no fields. ParseSources allocates only to parse an HTTP-date
// or to join a RateLimit field split over several lines.
func ParseSources(h http.Header, now time.Time, trusted Source) (d time.Duration, from Source, ok bool) {
	for _, s := range [...]Source{RetryAfterMS, MSRetryAfterMS, AmzRetryAfter, RetryAfter, IETFRateLimit, RateLimitReset} {
		if trusted&s == 0 {
			continue
		}
		if d, ok := s.parse(h, now); ok {
			return d, s, true
		}
	}
	return 0, 0, false
}

// parse reads the fields of the single source s in h as of now.
func (s Source) parse(h http.Header, now time.Time) (time.Duration, bool) {
	switch s {
	case RetryAfter:
		return ParseValue(first(h, headerRetryAfter), now)
	case RetryAfterMS:
		return parseMillis(first(h, headerRetryAfterMS))
	case MSRetryAfterMS:
		return parseMillis(first(h, headerMSRetryAfterMS))
	case AmzRetryAfter:
		return parseMillis(first(h, headerAmzRetryAfter))
	case RateLimitReset:
		if !exhausted(h, headerXRemaining) {
			return 0, false
		}
		return parseXReset(first(h, headerXReset), now)
	case IETFRateLimit:
		return parseIETF(h, now)
	}
	return 0, false
}

// first returns the first value of the field key in h, or "" if there is
// none. key must be canonical; the lookup does not allocate.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
