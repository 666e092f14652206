// Package backoff computes how long to wait before each retry.
//
// A [Strategy] maps a retry number to a delay. Retry n is the wait before
// attempt n+1, so retry 1 is the wait between the first and the second
// attempt. Every strategy here treats a retry below 1 as 1 (the wrappers
// pass it on unchanged), never returns a negative delay, never exceeds its
// documented cap and never overflows, whatever the retry number and field
// values.
//
// Strategies here are pure: they hold no state between calls, read no
// clock and never sleep, so one value can be shared by every request and
// goroutine. Randomness comes from a Rand field that tests can fix, and a
// zero field always means a documented default.
//
// # Strategies
//
//   - [FullJitter] (fulljitter.go): AWS standard mode, uniform below a
//     doubling ceiling (docs/aws.md). The default strategy.
//   - [EqualJitter] (equaljitter.go): half of the doubling ceiling fixed,
//     half random (AWS Architecture Blog, cited by docs/sns.md).
//   - [Decorrelated] (decorrelated.go): the blog's decorrelated jitter,
//     made stateless by replaying its chain.
//   - [ScaledJitter] (scaled.go): the AWS SDK for Kotlin's delay provider,
//     any growth factor and jitter fraction (docs/aws.md).
//   - [Exponential], [Incremental] and [Constant] (azure.go): Azure's
//     Topaz strategies; Constant is Azure's "Linear" (docs/azure.md).
//   - [Schedule] (schedule.go, curve.go, validate.go): an Amazon SNS
//     delivery policy's four phases and its backoff functions, [Curve]
//     (docs/sns.md).
//
// # Building blocks
//
//   - [Func] (strategy.go) turns any function into a Strategy.
//   - [Capped] and [Jittered] (compose.go) add a cap or jitter to any
//     Strategy, so neither has to be built into it.
//   - exp.go and rand.go hold the overflow-safe exponential and the
//     random-number handling that the strategies share.
//
// # Not here
//
// The package does not decide whether to retry, count attempts, honour a
// server's Retry-After (see package retryafter) or wait: the caller asks
// for a delay and sleeps on its own timer, under its own context. Presets
// that pick strategies and numbers for a service belong to package policy.
package backoff
