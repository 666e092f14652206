package retrytransport

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/retrytransport/retrytransport/internal/hostpattern"
	"github.com/retrytransport/retrytransport/policy"
)

// An Option configures a Transport built by New. A later option overrides
// an earlier one that sets the same thing, except WithObserver and
// WithFinalObserver, which add an observer each.
type Option func(*config)

type config struct {
	def     policy.Policy
	hosts   []hostEntry
	now     func() time.Time
	since   func(time.Time) time.Duration
	sleep   func(context.Context, time.Duration) error
	observe []func(Event)
	final   []func(Event)
	logger  *slog.Logger

	beforeRetry func(*http.Request, Event) error
}

type hostEntry struct {
	pattern string
	p       policy.Policy
}

// WithPolicy sets the policy for every host that no WithHostPolicy pattern
// matches. The default is policy.Standard().
func WithPolicy(p policy.Policy) Option {
	return func(c *config) { c.def = p }
}

// WithHostPolicy sets the policy for the hosts that pattern matches. A
// pattern is either an exact hostname ("api.example.com") or IP address
// ("10.0.0.1", "::1" or "[::1]"), or a wildcard "*.example.com", which
// matches every name below example.com at any depth ("a.example.com",
// "a.b.example.com") but not example.com itself. Patterns are matched
// against the request URL's hostname, without port, case insensitively,
// so a pattern has no port: "127.0.0.1" covers "127.0.0.1:8080" and every
// other port of that host. A trailing dot is ignored on both sides, as in
// DNS: the pattern "api.example.com." is the same as "api.example.com",
// and a request to "api.example.com." or "a.example.com." gets the policy
// of "api.example.com" or "*.example.com". An exact pattern wins over
// wildcards, and a longer wildcard over a shorter one. Giving the same
// pattern twice keeps the last policy.
//
// WithHostPolicy panics, when called, if pattern is not a valid pattern
// (empty, with a scheme, port, path or user, a "*" anywhere but a leading
// "*.", a character no hostname has), with a message that names the
// pattern and says what is wrong with it, as http.ServeMux.Handle panics
// on an invalid pattern: such a pattern is a mistake in the program, which
// would otherwise show only at run time. This is the one exception to New
// never panicking. Code that takes patterns from configuration puts them
// in a policy.Map, which policy.Map.Validate checks (and policy.LoadMap,
// which loads one), and passes it to WithPolicyMap. Errors in p itself do
// not panic: see New.
func WithHostPolicy(pattern string, p policy.Policy) Option {
	mustBePattern("WithHostPolicy", pattern)
	return func(c *config) { c.hosts = append(c.hosts, hostEntry{pattern, p}) }
}

// WithPolicyMap sets the default policy and the per-host policies from m,
// as WithPolicy(m.Default) followed by WithHostPolicy for each of m.Hosts
// would. It suits a policy.Map loaded with policy.LoadMap from a
// configuration file, which has checked its patterns.
//
// Like WithHostPolicy, WithPolicyMap panics, when called, if a pattern of
// m.Hosts is invalid, or if two are the same pattern written differently
// (in another case, with brackets or a trailing dot), which would leave
// the policy of their hosts to chance. m.Validate reports both as errors.
func WithPolicyMap(m policy.Map) Option {
	seen := make(map[string]string, len(m.Hosts)) // key -> pattern
	for _, pattern := range slices.Sorted(maps.Keys(m.Hosts)) {
		mustBePattern("WithPolicyMap", pattern)
		key := hostpattern.Normalize(pattern)
		if first, ok := seen[key]; ok {
			panic(fmt.Sprintf("retrytransport: WithPolicyMap: host patterns %q and %q are the same pattern; want each once", first, pattern))
		}
		seen[key] = pattern
	}
	return func(c *config) {
		c.def = m.Default
		for pattern, p := range m.Hosts {
			c.hosts = append(c.hosts, hostEntry{pattern, p})
		}
	}
}

// mustBePattern panics if pattern, given to the option fn, is not a valid
// host pattern, with a message that names fn, the pattern and what is
// wrong with it.
func mustBePattern(fn, pattern string) {
	if why := hostpattern.Check(hostpattern.Normalize(pattern)); why != "" {
		panic(fmt.Sprintf("retrytransport: %s: host pattern %q: %s", fn, pattern, why))
	}
}

// WithClock replaces the clock and the timer of the Transport. now returns
// the current time; sleep waits for d or until ctx is done, and then
// returns ctx's error. Nil arguments keep the real clock or timer. Tests
// use it to run retries without real waits.
//
// The clock drives the Transport itself (its waits before retries and for
// send tokens, MaxTotalTime, penalty periods, the latencies of hedged
// copies) and what it makes: the retry quota it creates for each policy
// whose Quota is nil. A quota or limiter given in a policy keeps its own
// clock, its Now field, nil meaning the real one: give it the same clock,
// as in &ratelimit.Adaptive{Now: now}, to have it follow a fake one.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
			c.since = func(t0 time.Time) time.Duration { return now().Sub(t0) }
		}
		if sleep != nil {
			c.sleep = sleep
		}
	}
}

// WithObserver registers f to be called, synchronously, before each retry,
// when a retryable outcome is not retried, and once when a request that
// needed a retry, or was refused, ends (see Event). f must not block
// and must be safe for concurrent use; it must not read or close the
// response. Each WithObserver adds an observer, so that a telemetry
// package and the caller can each have theirs; observers are called in
// the order they were given. A nil f is ignored. The default is no
// observer.
func WithObserver(f func(Event)) Option {
	return func(c *config) {
		if f != nil {
			c.observe = append(c.observe, f)
		}
	}
}

// WithFinalObserver registers f to be called, synchronously, once at the
// end of every request, with the request's final Event (Final is true):
// also for a request that ended at its first attempt, which WithObserver's
// observers do not hear about, so that f can count every request and its
// attempts. Such an Event has Attempt 1, the attempt's Outcome and status
// or error, and a nil Stop when the attempt succeeded. With a final
// observer, a policy with MaxAttempts 1 has its responses classified too,
// so that their Event has an Outcome (see Event).
//
// A request that RoundTrip rejects before it reaches a policy (a nil URL,
// a policy that New cannot use) has no Event. f must not block and
// must be safe for concurrent use; it must not read or close the response.
// Each WithFinalObserver adds one, called in the order given, after the
// WithObserver observers have seen the same Event. A nil f is ignored. The
// default is none.
func WithFinalObserver(f func(Event)) Option {
	return func(c *config) {
		if f != nil {
			c.final = append(c.final, f)
		}
	}
}

// WithLogger makes the Transport log what its observer would see: each
// retry at slog.LevelDebug, and the end of each request that needed a retry
// or was refused, at slog.LevelInfo ("recovered" or "gave up"); an attempt
// left to an SDK's own retries at Debug; and, once, at slog.LevelWarn, that
// an SDK retries on its own. The default is nil: the
// Transport writes nothing anywhere.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithBeforeRetry registers f to be called before each retry is sent, after
// the wait: req is the retry's request, a copy of the caller's with its own
// header and URL and the body rewound, and prev is the Event that announced
// the retry (the previous attempt's outcome, status or error, and the
// wait). f may change req's header and URL: refresh an auth token, sign the
// request again when its signature expired during a long wait. It must not
// read or replace req.Body, which is sent as it is; a signer that needs
// the body's bytes reads a copy from req.GetBody, which is set whenever the
// body can be replayed. An error from f refuses the retry: the request
// ends as if the retry could not be sent (the caller gets the last
// response, or a *RetryError), and the final Event's Stop wraps the error
// with ErrRetryRefused.
// f is called synchronously, once per retry, never for the first attempt;
// it must be safe for concurrent use. The default is no hook.
func WithBeforeRetry(f func(req *http.Request, prev Event) error) Option {
	return func(c *config) { c.beforeRetry = f }
}
