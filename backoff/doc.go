// Package backoff computes how long to wait before each retry.
//
// A [Strategy] maps a retry number to a delay. Retry n is the wait before
// attempt n+1, so retry 1 is the wait between the first and the second
// attempt. [FullJitter] is the default strategy of AWS standard mode
// (SPEC §1); [Func] turns any function into a Strategy.
//
// Strategies here are pure: they hold no state between calls, read no
// clock and never sleep, so one value can be shared by every request and
// goroutine. Randomness comes from a Rand field that tests can fix.
//
// The package does not decide whether to retry, count attempts, honour a
// server's Retry-After (see package retryafter) or wait: the caller asks
// for a delay and sleeps on its own timer, under its own context.
package backoff
