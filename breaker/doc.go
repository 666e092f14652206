// Package breaker is a circuit breaker per scope (the host by default, or
// any key the caller chooses): it decides whether an attempt may be sent at
// all, first attempts included, and refuses it at once while the scope's
// server seems to be in trouble. A retry quota (package quota) decides
// whether a retry may be paid for and a rate limiter (package ratelimit)
// how fast a scope may send; a breaker stops sending to a server that is
// down, hung or failing, so that callers are answered at once instead of
// waiting out their timeouts, and the server is not sent work it cannot
// do. It opens on failures that mean the server is in trouble: by default
// those of a server that does not answer (timeouts, refused or reset
// connections), and with Circuit.Trips any Transient or Timeout outcome
// the caller chooses (5xx responses, say); never a Throttle (429 and its
// kin: the rate limiter's business) or a Fatal one (other 4xx, the
// caller's own cancellation).
//
// [Breaker] is the interface the transport asks before each attempt: Allow
// returns a [Pass], on which the transport reports the attempt's outcome
// (Done) or that it was not sent (Drop), or an error matching [ErrOpen].
// [Circuit] implements it in process, with the state machine its doc
// explains: closed, open for a jittered open time, then half-open with a
// few probes, which close it or open it again for twice as long. Its
// refusals are an [*OpenError] that carries the last failure and the end
// of the open time. [Circuit.State] and [Circuit.OnChange] report each
// scope's circuit, for statistics, events and telemetry.
//
// # A hanging server
//
// A server answers for 3 s, then accepts requests and never answers them
// for 5 s, then recovers. 8 callers send to it in closed loops, each
// attempt timing out after 500 ms. Without a breaker every caller waits
// 500 ms per request through the outage and the hung server receives 80
// attempts. With a Circuit's defaults (open times as if Rand returned 0.5):
//
//	3.0 s   the server hangs with 8 attempts in flight.
//	3.5 s   the first timeout is counted; its caller sends again (the 9th
//	        attempt to hang). The second timeout comes with no success
//	        for 500 ms: the circuit opens for 1.5 s. The other 6 timeouts
//	        are of attempts let through before it opened: ignored.
//	3.5-5 s every attempt is refused at once, with an *OpenError that
//	        unwraps to context.DeadlineExceeded.
//	5.0 s   half-open: one caller probes (the 10th attempt to hang); the
//	        others are refused.
//	5.5 s   the probe times out: open again, for 3 s.
//	8.0 s   the server recovers; the circuit is open until 8.5 s.
//	8.5 s   half-open: the probe succeeds and the circuit closes.
//
// The hung server received 10 attempts, the callers were answered at once
// from 3.5 s on except the prober, and traffic flowed again 0.5 s after the
// recovery. sim_hang_test.go runs this in virtual time, with jitter drawn
// at both ends of its range and at random, and the same server hung for 1
// to 20 s.
//
// # How the defaults were chosen
//
// From that scenario and what it should cost: at most 10 attempts to the
// hung server, callers' 99th percentile at most 10 ms from 1 s into the
// outage, the first success within one open time of the recovery and no
// failure from 1 s after it.
//
//   - The 8 attempts in flight when the server hangs reach it whatever the
//     breaker does, and each failure counted before the circuit opens lets
//     its caller send one more. Opening only after 5 failures in a row
//     (Failures, as Envoy's outlier detection and gobreaker do) would send
//     4 more, but a lower count opens on random errors: at a 5 % error
//     rate, 5 in a row come once in 3 million attempts, 2 in a row once in
//     400. So fast failures, which cost callers nothing, need 5; 2 timeouts
//     in a row (Stalls) open it when no attempt of the scope has succeeded
//     for 250 ms (StallFor): well above the gap between the successes of a
//     busy scope, below most attempt timeouts.
//   - That leaves room for 1 probe during the hang, and the next must come
//     within 1 s after the recovery. The second probe comes an open time,
//     the first probe's 500 ms and a doubled open time after the opening,
//     each open time within 10 % of its nominal value: 4.55 to 5.45 s after
//     it with OpenFor 1.5 s, that is 0.05 to 0.95 s after a recovery 5 s
//     into the hang, whatever the jitter.
//   - MaxOpenFor is 8 times OpenFor, 12 s: after three doublings a long
//     outage costs its server a probe every 12 s or so, and its callers at
//     most about 12 s of refusals after it ends.
//   - Probes is 1: each probe of a hung server is one more attempt that
//     hangs, and a single success is evidence enough, since a circuit
//     closed too early opens again after a few failures.
//
// The open times fit that scenario closely: a hang that ends just after a
// probe was sent keeps the circuit open for up to the next, doubled, open
// time (the simulation's other hang lengths show how long). A server that
// answers 503 at once is left alone by default: with a Trips that counts
// 5xx responses, it opens the circuit too, and its callers are refused
// from then until a probe succeeds after it recovers, where without a
// breaker they would have had its answers, 503 then 200, as fast. The peers'
// choices differ: failsafe-go opens on one failure for a minute, gobreaker
// after more than 5 failures in a row for 60 s, Hystrix and Polly open for
// 5 s; Envoy lengthens its ejection time each time a host is ejected again,
// as Circuit doubles its open time.
//
// # What this package does not do
//
// It sends nothing, waits for nothing, starts no goroutine and sets no
// timer: an open time ends when Allow is next called. It does not classify
// outcomes (package classify does) and holds no global state: every
// circuit belongs to a value the caller created. A Circuit's state is its
// process's own; replicas of a fleet that should share one, and probe one
// at a time, need a Breaker that keeps it in a shared store.
//
// # Time
//
// Every method of Circuit that depends on time has an …At form that takes
// the instant as a parameter. The short form calls it with the Circuit's
// Now field, or the wall clock when Now is nil, so tests can run on a fake
// clock without sleeping.
package breaker
