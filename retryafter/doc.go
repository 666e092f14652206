// Package retryafter reads the delays that servers ask clients to wait
// before sending again.
//
// [Parse] reads the standard Retry-After response field (RFC 9110 §10.2.3),
// in both of its forms: a number of seconds ("120") or an HTTP-date
// ("Fri, 02 Jan 2026 03:06:05 GMT"). [ParseValue] does the same for one
// field value.
//
// [ParseSources] also reads the other fields that servers use for the same
// purpose, limited to a set of trusted [Source] values:
//
//   - retry-after-ms and x-ms-retry-after-ms (Azure) and x-amz-retry-after
//     (AWS), in milliseconds;
//   - X-RateLimit-Reset (GitHub and many others), in delta-seconds or a
//     Unix time told apart by magnitude, when X-RateLimit-Remaining is 0
//     or absent;
//   - the fields of the IETF draft "RateLimit header fields for HTTP": the
//     RateLimit field in its List form ("burst";r=0;t=30) and its older
//     Dictionary form (limit=10, remaining=0, reset=30), and the separate
//     RateLimit-Reset field of the earliest drafts.
//
// It tries them in a fixed order, milliseconds first, and reports which
// one the delay came from. [DefaultSources] trusts all of them. [Remaining]
// reads X-RateLimit-Remaining for a classifier that must tell an exhausted
// rate limit from other 403 and 429 responses.
//
// The functions are pure. They take the current time as a parameter and
// never read the clock, so tests can pass any instant. They report whether
// a usable value was found and leave every decision to the caller: every
// delay lies in [0, MaxDelay], and the package does not cap delays, does
// not sleep, and does not decide whether a response should be retried. A
// malformed field is reported as absent, since RFC 9110 lets a recipient
// ignore it, and [ParseSources] then tries the next source. Numbers are
// ASCII digits only, and the millisecond and seconds forms are parsed
// without allocating.
//
// [ParseQuota] reads the quota a response publishes whatever is left of
// it, from the same RateLimit and X-RateLimit fields: the requests the
// current window still admits and the time until it resets, for a client
// that paces itself so as never to run out (package ratelimit's Adaptive
// does). The package does not read RateLimit-Policy, and paces nothing
// itself.
package retryafter
