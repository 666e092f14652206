// Package retryafter reads the delays that servers ask clients to wait
// before sending again.
//
// [Parse] reads the standard Retry-After response field (RFC 9110 §10.2.3),
// in both of its forms: a number of seconds ("120") or an HTTP-date
// ("Fri, 02 Jan 2026 03:06:05 GMT"). [ParseValue] does the same for one
// field value.
//
// The functions are pure. They take the current time as a parameter and
// never read the clock, so tests can pass any instant. They report whether
// a usable value was found and leave every decision to the caller: the
// package does not cap delays, does not sleep, and does not decide whether
// a response should be retried. A malformed field is reported as absent,
// since RFC 9110 lets a recipient ignore it.
package retryafter
