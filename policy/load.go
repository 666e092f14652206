package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/retrytransport/retrytransport/classify"
)

// Load reads a Policy from the JSON document in r, in the schema below, and
// checks it with [Policy.Validate]. It reads r to its end: anything but
// white space after the document is an error. Each call returns fresh
// values: a quota, budget, limiter, rate limit, breaker or concurrency
// object in the document becomes a new *quota.Bucket, *quota.Budget,
// *ratelimit.Adaptive, *ratelimit.Fixed, *breaker.Circuit, or
// *concurrency.Adaptive or *concurrency.Fixed, which the transports given
// the returned Policy share (see [Policy.Quota]), and a penalty, failover
// or hedge object a new Penalty, Failover or Hedge.
//
// # Schema
//
// The document is an object that mirrors the Policy struct: one member per
// field, named as the field with a lower-case first letter and matched
// exactly, but for preset and classifier (which sets Classify). Every
// member is optional: a missing member, or null, leaves its field zero or
// nil, which means the default, or the feature off, as the field's comment
// says. A feature's object (serverDelay, failover, hedge, penalty, quota,
// budget, limiter, rateLimit, breaker, concurrency) holds the fields of
// its type, named by the same rule. Durations are Go duration strings
// (time.ParseDuration): "1.5s", "300ms", "1m". The schema is stricter than [Policy.Validate]: it
// has no negative durations or counts, although a Policy field may give a
// negative value a meaning (a negative MaxDelay is the default), since a
// document never needs one and a minus sign in a file is more likely a
// mistake. A negative maxAttempts is refused by both, as by [FromEnv].
//
//	member              value
//	preset              a name from PresetNames, in any case (see below)
//	maxAttempts         integer >= 0 (0: the default, 3)
//	backoff             strategy object (see Strategies)
//	throttleBackoff     strategy object
//	maxDelay            duration
//	serverDelay         object: headers ("all", "none", or a non-empty list
//	                    of Retry-After, retry-after-ms, x-ms-retry-after-ms,
//	                    x-amz-retry-after, X-RateLimit-Reset, RateLimit, in
//	                    any case), bound (duration)
//	attemptTimeout      duration
//	maxTotalTime        duration
//	maxTotalWait        duration
//	terminationBuffer   duration
//	penalty             object: codes (list of codes), statuses (list of
//	                    statuses 100..599), delay, for (durations); a delay
//	                    > 0 and a code or a status are required
//	classifier          object: throttlingStatuses, transientStatuses,
//	                    fatalStatuses (lists of statuses 100..599),
//	                    throttlingCodes, transientCodes (lists of codes)
//	quota               "none" (quota.None), or object: capacity,
//	                    retryCost, timeoutCost, throttleCost,
//	                    successIncrement, maxScopes (integers >= 0),
//	                    refillPerSecond (number >= 0), wait (boolean)
//	budget              object: ratio, minPerSecond (numbers; 0: the
//	                    default, < 0: none), window (duration), maxScopes
//	                    (integer >= 0)
//	retryNonIdempotent  boolean
//	maxBodyBuffer       integer >= 0, bytes
//	limiter             object, a new *ratelimit.Adaptive ({}: the
//	                    defaults): beta (0 <= n < 1), scale, minFillRate,
//	                    additive (>= 0), smoothing (0..1), reference,
//	                    failFast (booleans), maxWait (duration), maxScopes
//	                    (integer), throttleRetries (integer -1..100; 0: the
//	                    default, -1: none)
//	rateLimit           object: rate (>= 0), burst, maxScopes (integers
//	                    >= 0), failFast (boolean), maxWait (duration)
//	breaker             object, a new *breaker.Circuit ({}: the
//	                    defaults): failures, stalls, probes, maxScopes
//	                    (integers >= 0), stallFor, openFor, maxOpenFor,
//	                    probeLease (durations), trips (see Breaker)
//	concurrency         object whose "type" is adaptive, a new
//	                    *concurrency.Adaptive: initial, min, max,
//	                    maxScopes (integers >= 0), tolerance (> 1, or 0),
//	                    backoff (0 <= n < 1), maxWait (duration); or fixed,
//	                    a new *concurrency.Fixed: max (integer >= 0; 0: no
//	                    limit), maxScopes (integer >= 0), maxWait
//	                    (duration)
//	failover            object: endpoints (a list of 1..MaxEndpoints (63)
//	                    "host", "host:port" or "scheme://host:port"; see
//	                    ParseEndpoint), mode (PrimaryThenSecondary,
//	                    PrimaryOnly, SecondaryOnly or SecondaryThenPrimary,
//	                    in any case), methods (list of method names, such
//	                    as "GET", in their case; []: none; missing: GET and
//	                    HEAD)
//	hedge               object: delay, minDelay (durations), quantile
//	                    (0 <= q < 1), maxHedges (integer 0..HedgeLimit); a
//	                    delay or a quantile > 0 is required
//	maxDrain            integer >= 0, bytes
//	readTimeout         duration
//	attemptHeader       string, a header name
//	ignoreSDKAttempts   boolean
//
// With a preset, the policy starts as that preset, wherever the member is
// written, and the other members override its fields. An object member
// replaces the preset's value whole; it is not merged with it.
//
// A classifier becomes a classify.Classifier whose Classify method is the
// policy's Classify; an empty one leaves Classify nil, which classifies
// the same. [Policy.MarshalJSON] cannot write a func, so a policy loaded
// with a classifier cannot be written back. Scope and the hooks (Now,
// Rand, OnChange, After) have no member.
//
// # Strategies
//
// backoff and throttleBackoff take an object whose "type" names a strategy
// of package backoff, in any case; its other members are that strategy's
// fields, named by the rule above:
//
//	type          members
//	fullJitter    base, max
//	equalJitter   base, max
//	decorrelated  base, max
//	scaledJitter  initialDelay, maxBackoff, scaleFactor (0 or >= 1),
//	              jitter (0..1), noJitter
//	exponential   minBackoff, maxBackoff, deltaBackoff, noMinBackoff,
//	              fastFirstRetry
//	incremental   initial, increment, fastFirstRetry
//	constant      interval, fastFirstRetry
//	schedule      minDelay, maxDelay, numRetries, numNoDelayRetries,
//	              numMinDelayRetries, numMaxDelayRetries (integers >= 0),
//	              backoffFunction (linear, arithmetic, exponential or
//	              geometric), jitter (0..1)
//	capped        strategy (a strategy object), max
//	jittered      strategy (a strategy object), fraction (0..1)
//
// A schedule here is held only to these signs and ranges, not to the
// limits SNS puts on its customers' policies: [SNSAWSManaged] has 100,015
// retries. Use [LoadSNS] for a delivery policy written for SNS.
//
// # Quotas
//
// quota and budget are two members because they are paid in different
// scopes (see Policy): a quota in the scope each retry is sent to, a
// budget in the request's own. quota takes the string "none", in any
// case, which turns the retry quota off, or a quota object, a new
// *quota.Bucket. budget takes a budget object, a new *quota.Budget.
// Its ratio and minPerSecond take any number, as quota.Budget gives
// each a meaning: 0 is the default, a negative ratio counts none of the
// requests and a negative minPerSecond sets no floor. A quota object with
// "type": "budget", as an earlier schema wrote a budget, is an error that
// says to write it as budget.
//
// # Breaker
//
// A breaker object's trips says which failures count toward opening the
// circuit, as breaker.Circuit's Trips does: a non-empty list of the kinds
// of outcome the circuit is asked about, in any case. "timeout" counts
// only Timeout outcomes, the client's own timeouts (an AttemptTimeout, a
// dial or read timeout; a 408 or 504 status is Transient), so that a
// server that answers 503 at once is left to the retries; "transient"
// counts only Transient ones (such as a 502 or 503, a refused or reset
// connection); both count both. Without a trips member, Trips is nil, the
// Circuit's default: timeouts, and transient failures without a response
// (a refused or reset connection), not a 5xx response. Throttle and Fatal
// outcomes never count. Load makes a
// breaker.Kinds of the list, and [Policy.MarshalJSON] writes a
// breaker.Kinds of those kinds back as its list; any other Tripper it
// cannot write.
//
// # Members that moved
//
// An earlier schema had a member per setting where this one has an object
// per feature. Each of those members is an error that says where it went,
// or, when its value is null or (for adaptive, disableQuota and
// ignoreDelayHeaders) false, the default, that it is to be removed:
//
//	adaptive            "limiter": {}
//	disableQuota        "quota": "none"
//	delayHeaders        "serverDelay": {"headers": [...]}
//	ignoreDelayHeaders  "serverDelay": {"headers": "none"}
//	serverDelayBound    "serverDelay": {"bound": "5s"}
//	endpoints           "failover": {"endpoints": [...]}
//	locationMode        "failover": {"mode": "..."}
//	failoverMethods     "failover": {"methods": [...]}
//
//	policy: endpoints: moved; write "failover": {"endpoints": [...]}
//	policy: adaptive: moved; false is the default, so remove the member
//
// # Errors
//
// Load reports every mistake it finds, joined with errors.Join, each a
// *[FieldError] that names the JSON path, the value and what is allowed:
//
//	policy: maxAttempts = -3; want an integer >= 1, or 0 for the default
//	policy: backoff.type = "fibonacci"; want one of fullJitter, ...
//	policy: backoff.base = "1"; want a duration string >= 0, such as "1.5s"
//	policy: backoff.cap: unknown field; want one of type, base, max
//
// An unknown member, and a name that must be one of a few (a preset, a
// strategy type, a header, a location mode, a backoffFunction), is
// reported with the name it was probably meant to be, when one is close
// (see [FieldError]'s Suggestion), or else with the list of names:
//
//	policy: maxAttempt: unknown field; did you mean "maxAttempts"?
//	policy: preset = "AzureBackground"; did you mean "azure-background"?
//
// A leading UTF-8 byte order mark, which some editors write, is skipped, as
// most JSON tools do, here and in every loader of this package. A document
// that is not well-formed JSON gives one *[SyntaxError], with the line and
// column (in bytes, from 1, not counting the byte order mark) of the first
// byte at fault, or of the end of a document cut short; it wraps
// encoding/json's error:
//
//	policy: line 3, column 17: invalid JSON: invalid character '}' looking for beginning of value
//
// Once the document decodes, Load returns [Policy.Validate]'s errors, if
// any. [LoadFile] reads a file and puts its name in every error.
func Load(r io.Reader) (Policy, error) {
	raw, err := readDocument(r)
	if err != nil {
		return Policy{}, err
	}
	return decodePolicy("", raw)
}

// LoadFile reads the policy document in the file name, as [Load] reads one
// from a reader, and returns the same errors with the file's name in
// each: a *[SyntaxError] (with File set) puts it before the line and
// column, as compilers do, and any other error before the rest:
//
//	policy: retry.json:3:17: invalid JSON: invalid character '}' looking for beginning of value
//	policy: retry.json: backoff.bas: unknown field; did you mean "base"?
//
// Each error still wraps Load's, so errors.As finds a *[FieldError] or
// *[SyntaxError]. An error opening or reading the file is the os
// package's, wrapped, and names the file too.
func LoadFile(name string) (Policy, error) {
	return loadFile(name, func(raw json.RawMessage) (Policy, error) { return decodePolicy("", raw) })
}

// loadFile reads the document in the file name and decodes it with
// decode, the errors of both marked with name (see inFile).
func loadFile[T any](name string, decode func(json.RawMessage) (T, error)) (T, error) {
	var zero T
	data, err := os.ReadFile(name)
	if err != nil {
		return zero, fmt.Errorf("policy: %w", err)
	}
	raw, err := parseDocument(data)
	if err != nil {
		return zero, inFile(name, err)
	}
	v, err := decode(raw)
	if err != nil {
		return zero, inFile(name, err)
	}
	return v, nil
}

// inFile returns err, the errors of the document in the file name, each
// marked with name.
func inFile(name string, err error) error {
	return eachError(err, func(e error) error {
		if se, ok := e.(*SyntaxError); ok {
			c := *se
			c.File = name
			return &c
		}
		return &pathError{name, e}
	})
}

// UnmarshalJSON sets *p to the policy that [Load] reads from data, so that a
// Policy can sit in a larger configuration struct. It leaves *p unchanged on
// error, and for a JSON null. Error paths start at the policy, not at the
// enclosing document.
func (p *Policy) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		return nil
	}
	raw, err := parseDocument(data)
	if err != nil {
		return err
	}
	q, err := decodePolicy("", raw)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// decodePolicy decodes and validates the policy document raw found at path.
func decodePolicy(path string, raw json.RawMessage) (Policy, error) {
	d := &decoder{}
	p := d.policy(path, raw)
	if err := d.err(); err != nil {
		return Policy{}, err
	}
	if err := p.Validate(); err != nil {
		return Policy{}, within(path, err)
	}
	return p, nil
}

// Descriptions of the values the policy members accept.
const (
	wantAttempts = "an integer >= 1, or 0 for the default"
	wantCount    = "an integer >= 0 (0: the default)"
	wantBytes    = "a byte count >= 1, or 0 for the default"
	wantStatus   = "an HTTP status 100..599"
	wantCode     = "a non-empty error code"
)

// policy decodes the policy object raw at path.
func (d *decoder) policy(path string, raw json.RawMessage) Policy {
	var p Policy
	ms, ok := d.members(path, raw, "a policy object")
	if !ok {
		return p
	}
	// The preset comes first wherever it is written, so that the other
	// members override it.
	for _, m := range ms {
		if m.name == "preset" && !isNull(m.raw) {
			v := value{d, join(path, m.name), m.raw}
			if name, ok := v.string("one of " + strings.Join(PresetNames(), ", ")); ok {
				if q, found := lookupPreset(name); found {
					p = q
				} else {
					v.failName(name, PresetNames(), "one of "+strings.Join(PresetNames(), ", "))
				}
			}
		}
	}
	d.applyMoved(path, ms, []field{
		{"preset", func(value) {}},
		{"maxAttempts", func(v value) { p.MaxAttempts = v.count(wantAttempts) }},
		{"backoff", func(v value) { p.Backoff = v.strategy() }},
		{"throttleBackoff", func(v value) { p.ThrottleBackoff = v.strategy() }},
		{"maxDelay", func(v value) { p.MaxDelay = v.duration() }},
		{"serverDelay", func(v value) { p.ServerDelay = v.serverDelay() }},
		{"attemptTimeout", func(v value) { p.AttemptTimeout = v.duration() }},
		{"maxTotalTime", func(v value) { p.MaxTotalTime = v.duration() }},
		{"maxTotalWait", func(v value) { p.MaxTotalWait = v.duration() }},
		{"terminationBuffer", func(v value) { p.TerminationBuffer = v.duration() }},
		{"penalty", func(v value) { p.Penalty = v.penalty() }},
		{"classifier", func(v value) { p.Classify = v.classifier() }},
		{"quota", func(v value) { p.Quota = v.retryQuota() }},
		{"budget", func(v value) { p.Budget = v.budget() }},
		{"retryNonIdempotent", func(v value) { p.RetryNonIdempotent = v.bool() }},
		{"maxBodyBuffer", func(v value) { p.MaxBodyBuffer = int64(v.count(wantBytes)) }},
		{"limiter", func(v value) { p.Limiter = v.limiter() }},
		{"rateLimit", func(v value) { p.RateLimit = v.rateLimit() }},
		{"breaker", func(v value) { p.Breaker = v.breaker() }},
		{"concurrency", func(v value) { p.Concurrency = v.concurrency() }},
		{"failover", func(v value) { p.Failover = v.failover() }},
		{"hedge", func(v value) { p.Hedge = v.hedge() }},
		{"maxDrain", func(v value) { p.MaxDrain = int64(v.count(wantBytes)) }},
		{"readTimeout", func(v value) { p.ReadTimeout = v.duration() }},
		{"attemptHeader", func(v value) { p.AttemptHeader = v.headerName() }},
		{"ignoreSDKAttempts", func(v value) { p.IgnoreSDKAttempts = v.bool() }},
	}, movedMembers())
	return p
}

// classifier decodes a classifier object and returns its Classify method,
// or nil for an empty one, which classifies as classify.Default does.
func (v value) classifier() classify.Func {
	var c classify.Classifier
	v.d.object(v.path, v.raw, "a classifier object",
		field{"throttlingStatuses", func(v value) { c.ThrottlingStatuses = v.statuses() }},
		field{"transientStatuses", func(v value) { c.TransientStatuses = v.statuses() }},
		field{"fatalStatuses", func(v value) { c.FatalStatuses = v.statuses() }},
		field{"throttlingCodes", func(v value) { c.ThrottlingCodes = v.codes() }},
		field{"transientCodes", func(v value) { c.TransientCodes = v.codes() }},
	)
	if len(c.ThrottlingStatuses)+len(c.TransientStatuses)+len(c.FatalStatuses)+len(c.ThrottlingCodes)+len(c.TransientCodes) == 0 {
		return nil
	}
	return c.Classify
}
