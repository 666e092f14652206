// Package ratelimit decides whether a client may retry, and how fast it may
// send, from token buckets kept per scope (the host by default, or any key
// the caller chooses).
//
// [Quota] is the retry quota of AWS standard mode (SPEC §2 and §6): a bucket
// of tokens that retries spend and successful responses earn back, so that a
// client stops retrying during an outage instead of multiplying the load on a
// server that is already failing. Each scope has its own bucket, so an outage
// of one host does not stop retries to another.
//
// # What this package does not do
//
// It sends no requests and knows nothing of HTTP: callers classify each
// attempt's outcome (package classify) and report it here. It never sleeps
// and starts no goroutine. Refill is computed from the elapsed time when a
// bucket is next used, and a wait is returned as a duration for the caller
// to spend under its own context and deadline. It holds no global state:
// every bucket belongs to a value the caller created.
//
// # Time
//
// Every method that depends on time has an …At form that takes the instant
// as a parameter, as golang.org/x/time/rate does. The short form calls it
// with the value's Now field, or the wall clock when Now is nil, so tests can
// run on a fake clock without sleeping.
package ratelimit
