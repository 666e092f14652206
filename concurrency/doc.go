// Package concurrency limits how many attempts of each scope (the host by
// default, or any key the caller chooses) may be in flight at once: it
// refuses an attempt over the limit at once, or after a short bounded
// wait, with [ErrLimited], so that a server that queues what it cannot
// serve is not sent more than it serves while every caller waits for it.
//
// [Adaptive] learns each scope's limit from latency, in the manner of TCP
// Vegas, Netflix's gradient limiters and failsafe-go's adaptive limiter: a
// latency above the no-load latency means a queue is building, and Little's
// law says how long. [Fixed] is a bulkhead, the same limit for every scope.
// Both hand out a [Permit] for each attempt, which the caller ends with
// [Permit.Done] (with the attempt's latency and outcome kind) or
// [Permit.Drop].
//
// # Why
//
// A server that serves 8 requests at once for 10 ms each (800 req/s) and
// queues the rest, offered 1,600 req/s by clients that give up after 1 s,
// answers later and later: in the simulation of that server
// (sim_test.go), over 20 s only one request in ten is answered in time,
// with a p99 of 990 ms, and 95 % of the server's work is for clients that
// have left. With an Adaptive in front, the server keeps 99 % of its
// capacity, the 99th percentile of the successes' latency is 28 ms, and no
// work is wasted; at 1.2 and 4 times the capacity it keeps 98 and 99.6 %
// at 30 and 28 ms, and at half the capacity nothing is refused.
//
// # How Adaptive learns
//
// In rounds of at least as many attempts as the limit, Adaptive compares
// the mean latency D with the no-load latency B: by Little's law, of the M
// attempts in flight a share B/D was being served and the rest queued.
// When D exceeds Tolerance·B and that queue exceeds √L, the limit falls to
// what the server serves without a queue, M·B/D, plus a small queue;
// otherwise, if the limit was reached, it climbs by √L (doubling until the
// first queue). Every 64th round the limit is reached, a round at half the
// limit measures B afresh, so that B follows the server when its base
// latency changes. Timeouts halve the limit; throttles (429) leave it
// alone. [Adaptive] gives the formulas, each constant's purpose and a
// worked sequence.
//
// # What this package does not do
//
// It sends no requests and knows nothing of HTTP: the caller measures each
// attempt's latency and classifies its outcome (package classify). It
// never sleeps but to wait for a place, bounded by MaxWait and the
// caller's context, starts no goroutine and runs no timer in the
// background: what it learns, it learns when an attempt ends. It holds no
// global state: every limit belongs to a value the caller created. A
// refusal is final for that attempt; whether the request may try again
// later, elsewhere or not at all is the caller's decision, and sending it
// again into the same scope at once meets the same overload.
package concurrency
