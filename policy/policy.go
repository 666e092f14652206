package policy

import (
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// Defaults that a zero Policy field stands for.
const (
	// DefaultMaxAttempts is AWS standard mode's attempt count, the first
	// included (docs/aws.md).
	DefaultMaxAttempts = 3
	// DefaultMaxDelay is the longest wait before a retry: the backoff cap of
	// docs/aws.md (20 s), and the longest Retry-After that is honoured.
	DefaultMaxDelay = 20 * time.Second
	// DefaultMaxBodyBuffer is how much of a request body without GetBody is
	// kept for replay: 1 MiB.
	DefaultMaxBodyBuffer = 1 << 20
	// DefaultMaxDrain is how much of a failed response body is read before
	// it is closed, so that its connection can be reused: 64 KiB. A longer
	// body is closed unread and its connection dropped.
	DefaultMaxDrain = 64 << 10
	// DefaultReadTimeout bounds each read the transport makes of a response
	// body on its own behalf (see Policy.ReadTimeout): 1 s.
	DefaultReadTimeout = time.Second
)

// Policy says how the transport treats the requests of one host: how often
// and how long to retry, which outcomes to retry, and what the retries may
// cost. It is a plain value; copy it freely.
//
// The zero Policy is AWS standard retry mode, the same as [Standard]: every
// zero field means the default its comment names. Each optional feature is
// one field, off when it is nil or zero: ServerDelay, Failover, Hedge,
// Penalty, Limiter, RateLimit, Breaker, Concurrency, Budget. A pointer to a feature's settings
// (Failover, Hedge, Penalty) turns the feature on, so a non-nil one must be
// able to act: Validate rejects one that never could. The two things a
// zero Policy does that take an explicit value to switch off are retries,
// with MaxAttempts 1, and the retry quota, with Quota quota.None.
//
// # Which scope pays
//
// The transport keeps its quotas and limiters per scope (see Scope), and
// with Failover a request's attempts may go to several. Quota is paid in
// the scope each retry or hedge is sent to, so that a dead endpoint does
// not drain a healthy one's bucket. Budget is paid in the request's own
// scope, whichever endpoint a retry goes to, since it bounds what the
// caller's requests cost in all. Limiter and RateLimit pace each attempt in
// the scope it is sent to.
//
// # Out-of-range values
//
// Each field's comment says what a negative or otherwise out-of-range value
// does, and [Policy.Validate], [Policy.WithDefaults] (which New applies) and
// the comment agree: a value the comment gives a meaning, such as "zero or
// negative means the default", passes Validate and WithDefaults resolves it
// to that meaning; a value the comment calls an error fails Validate, and
// New still uses the value the comment names, usually zero.
//
// # Nil pointers
//
// A nil pointer of this module's types in Quota, Budget, Limiter,
// RateLimit, Breaker or Concurrency (a *quota.Bucket, *quota.Budget,
// *ratelimit.Adaptive, *ratelimit.Fixed, *breaker.Circuit,
// *concurrency.Adaptive or *concurrency.Fixed declared and never set) means
// what nil means there:
// Validate reports it, naming the field, and New, WithDefaults,
// MarshalJSON and FromEnv treat it as nil.
type Policy struct {
	// MaxAttempts is the number of attempts, the first included. A
	// Limiter that paces throttled scopes may allow a few retries after
	// throttles on top, which do not count (ratelimit.Adaptive's
	// ThrottleRetries): MaxAttempts then bounds the attempts spent on
	// failures the limiter cannot prevent. Zero means DefaultMaxAttempts
	// (3); 1 disables retries, those after throttles too. A negative value
	// is an error, which Validate reports (other libraries read -1 as no
	// limit); New treats it as zero.
	MaxAttempts int

	// Backoff gives the wait before each retry when the server asked for
	// none. Nil means backoff.FullJitter{}: uniform in
	// [0, min(2^(n-1) s, 20 s)) before retry n.
	Backoff backoff.Strategy

	// ThrottleBackoff, if set, replaces Backoff for retries after a
	// Throttle outcome: throttled servers usually need a longer pause than
	// flaky ones (the newer AWS SDKs of docs/aws.md wait from 1 s after a
	// throttle and from 50 ms otherwise). Nil means Backoff for every
	// outcome.
	ThrottleBackoff backoff.Strategy

	// MaxDelay caps every wait before a retry. A computed backoff longer
	// than MaxDelay is cut to it; a server's delay longer than MaxDelay is
	// not slept at all: the response is returned to the caller at once.
	// With Failover, a server's delay binds only a retry that goes back to
	// the endpoint that asked for it; a retry that fails over to another
	// endpoint waits its backoff. Zero or negative means DefaultMaxDelay
	// (20 s).
	MaxDelay time.Duration

	// ServerDelay says which response headers may ask for a delay before a
	// retry (Retry-After and its kin), and how far that delay is trusted.
	// The zero ServerDelay trusts every header retryafter knows, as given.
	ServerDelay ServerDelay

	// AttemptTimeout bounds each attempt until its response headers arrive;
	// an attempt that takes longer is abandoned, classified as a Timeout,
	// and may be retried. Reading the returned response's body is bounded
	// only by the caller's context. Zero means no per-attempt timeout.
	// Validate rejects a negative value, which New treats as zero, and one
	// longer than a non-zero MaxTotalTime, which then bounds every attempt.
	AttemptTimeout time.Duration

	// MaxTotalTime is a budget for the whole request, every attempt and
	// wait included, until the last response's headers (Azure's
	// MaximumExecutionTime). No wait is started that would end past it, no
	// attempt is started once it is spent, and each attempt is abandoned
	// when it runs out; the error then wraps ErrTimeLimit (package
	// retrytransport). Zero means no budget beyond the caller's context.
	// Validate rejects a negative value, which New treats as zero, and a
	// budget shorter than the delays that Backoff is certain to make
	// (backoff.Constant, backoff.Incremental, a backoff.Schedule's lower
	// bound) before the last attempt, which could never be sent.
	MaxTotalTime time.Duration

	// MaxTotalWait caps the time one request spends waiting before its
	// attempts, backoff, Retry-After, quota and send-token waits together
	// (Cosmos DB's MaxRetryWaitTimeInSeconds): no wait is started that
	// would take the request past it, and the caller then gets the last
	// response (Stop wraps ErrTimeLimit, package retrytransport). Unlike
	// MaxTotalTime, the attempts themselves do not count. Zero means no cap.
	// Validate rejects a negative value, which New treats as zero.
	MaxTotalWait time.Duration

	// TerminationBuffer keeps a retry from starting when, after its wait,
	// less than the buffer would be left of the request's time, the
	// context's deadline or MaxTotalTime, whichever comes first (Service
	// Bus's TerminationTimeBuffer): an attempt with too little time to
	// finish is not worth sending. It has no effect on a request with
	// neither. Zero means no buffer. Validate rejects a negative value,
	// which New treats as zero, and one not shorter than a non-zero
	// MaxTotalTime, which would let no retry start.
	TerminationBuffer time.Duration

	// Penalty slows a scope down for a while after the server signals that
	// it is overloaded, as Service Bus's clients do after a ServerBusy
	// error. Nil means none. Validate rejects a Penalty that can never
	// apply, which New treats as nil (see Penalty).
	Penalty *Penalty

	// Classify decides each attempt's outcome. Nil means classify.Default.
	Classify classify.Func

	// Quota is the retry quota (a circuit breaker) whose per-scope buckets
	// pay for retries and hedges: each is paid in the scope it is sent to,
	// so with Failover a dead primary does not drain the bucket of a
	// healthy secondary (docs/aws.md). Nil means a *quota.Bucket with
	// the AWS defaults that belongs to the Transport built with this
	// policy: each New has its own. quota.None turns it off: retries
	// are then limited by MaxAttempts, Budget and time alone. Any other
	// value is used as given, so putting one value in several policies or
	// transports shares its buckets on purpose; an implementation kept in a
	// shared store (module redisretry) shares them across processes.
	// Validate rejects a quota that counts requests (a *quota.Budget),
	// whose place is Budget: New still pays it as a Quota, in the scope
	// each retry is sent to. A nil *quota.Bucket means nil (see Nil
	// pointers).
	Quota quota.Quota

	// Budget is a retry budget that every retry and hedge must pay as well
	// as Quota: usually a *quota.Budget, which holds retries to a share
	// of the requests of a sliding window, beside Quota's bucket, which
	// stops them once an outage has drained it. It is kept in the request's
	// own scope, whichever endpoint a retry goes to, since it bounds what
	// the caller's requests cost in all. Nil, or a nil *quota.Budget, means
	// none. Like Quota, it is used as given.
	Budget quota.Quota

	// RetryNonIdempotent treats every request as idempotent, so a POST or
	// PATCH is retried after any retryable outcome, not only when the
	// server provably did not process it. Set it for APIs whose every
	// operation is idempotent by design, such as the AWS SDKs'.
	RetryNonIdempotent bool

	// MaxBodyBuffer is how many bytes of a request body without GetBody
	// are recorded, as the base transport reads them, for replay. A
	// request whose body was partly sent and grew past it is not retried.
	// Zero or negative means DefaultMaxBodyBuffer (1 MiB).
	MaxBodyBuffer int64

	// Limiter paces every attempt of a scope, the first included, and
	// learns from their outcomes: AWS adaptive retry mode's client-side rate
	// limiter (docs/aws.md), a *ratelimit.Adaptive, whose send rate follows
	// the throttles the scope receives, so a client offered more load than
	// the server admits slows to the server's capacity instead of
	// collecting 429s. [Adaptive] sets a new one. Nil, or a nil
	// *ratelimit.Adaptive, means no such pacing. It is used as given: the
	// same value in several policies or transports shares its per-scope
	// state on purpose, and one kept in a shared store (module redisretry)
	// paces a fleet. If it implements ratelimit.Recorder it hears every
	// attempt's outcome (and, as a ratelimit.Releaser, of every attempt
	// that ended without one; as a ratelimit.QuotaRecorder, with the quota
	// a response publishes, in the same call), and a retry after a throttle is then free of the
	// quota, since the limiter already bounds the scope's load, unless its
	// ChargesThrottles method says otherwise, as a *ratelimit.Adaptive's
	// does in reference mode.
	Limiter ratelimit.Limiter

	// RateLimit paces every attempt of a scope at a fixed rate with a burst,
	// for APIs that publish their limit (SNS maxReceivesPerSecond). Nil, or
	// a nil *ratelimit.Fixed, means no fixed rate. Like Limiter, it is used
	// as given. An attempt is paced after the checks that may refuse it; a
	// send token it took is not given back if it still cannot be sent
	// (MaxTotalTime ran out in the moment between), which delays the
	// scope's next send by at most 1/Rate. A *ratelimit.Fixed paces each
	// process on its own; an implementation kept in a shared store (module
	// redisretry) paces a fleet at one published limit.
	RateLimit ratelimit.Limiter

	// Breaker stops sending to a scope whose server seems to be in
	// trouble: after failures that mean so (by default timeouts and
	// connection errors, the failures of a server that does not answer;
	// 5xx responses too if its Trips says so; never a 429, the rate
	// limiters' business, nor another 4xx), every
	// attempt of the scope, first ones included, fails at once with an
	// error matching breaker.ErrOpen that carries the last failure, until a
	// probe finds the server well again. A *breaker.Circuit keeps each
	// process's circuits; one kept in a shared store (module redisretry)
	// lets a fleet share them, and one replica probe for all. Nil, or a nil
	// *breaker.Circuit, means none. Like Limiter, it is used as given. A
	// request refused by it is not retried (with Failover, a read goes to
	// the next endpoint at once instead).
	Breaker breaker.Breaker

	// Concurrency limits how many attempts of a scope may be in flight at
	// once: a *concurrency.Adaptive learns the limit from latency (latency
	// above the scope's no-load latency means a queue is building at the
	// server), a *concurrency.Fixed keeps a constant one (a bulkhead). An
	// attempt over the limit waits at most the limiter's MaxWait for a
	// place, and is otherwise refused with an error matching
	// concurrency.ErrLimited, and not retried into the same overload. Nil,
	// or a nil *concurrency.Adaptive or *concurrency.Fixed, means no limit.
	// Like Limiter, it is used as given.
	Concurrency concurrency.Limiter

	// Scope maps a request to the key of its retry quota bucket (and rate
	// limiter state): requests with the same key share them, and trouble in
	// one scope never slows another. Nil means the request URL's Host
	// (host and port), lower-cased and without the trailing dot of a fully
	// qualified name, so that every spelling of one server shares its
	// state. A function can split finer, for example by a
	// DynamoDB table name taken from a header, so that one throttled table
	// does not starve requests to the others. It must be fast and safe for
	// concurrent use.
	Scope func(req *http.Request) string

	// Failover sends retries to alternate hosts of the same API (a
	// read-only secondary, regional mirrors). Nil means every attempt goes
	// to the request's own host. Validate rejects a Failover without
	// Endpoints, which New treats as nil (see Failover).
	Failover *Failover

	// Hedge sends a copy of a safe request whose attempt is slow to
	// answer, and takes the first response. Nil means no hedging. Validate
	// rejects a Hedge with neither a Delay nor a Quantile, which would
	// hedge nothing and which New treats as nil (see Hedge).
	Hedge *Hedge

	// MaxDrain is how many bytes of a failed response's body are read and
	// discarded before it is closed, so that its connection is reused.
	// Zero or negative means DefaultMaxDrain (64 KiB). A body that declares
	// a longer Content-Length is closed unread.
	MaxDrain int64

	// ReadTimeout bounds each read of a response body that the transport
	// makes on its own behalf, so that a server trickling or stalling a body
	// cannot hold a request: the peek for an error code while an attempt is
	// classified (at most classify.MaxPeek bytes), and the drain of a failed
	// response before the next attempt (at most MaxDrain bytes). A peek cut
	// short classifies on the bytes that arrived, and the body then returns
	// those bytes and an error saying it timed out; a drain cut short closes
	// the body, and its connection is not reused. It never bounds the
	// caller's own reading of the response it gets. Zero or negative means
	// DefaultReadTimeout (1 s).
	ReadTimeout time.Duration

	// AttemptHeader names a request header in which every attempt tells the
	// server its number: "1" for the first, "2" for the first retry, as
	// Envoy's x-envoy-attempt-count does. The caller's request keeps its
	// own headers; each attempt sends a copy. Empty means no such header.
	AttemptHeader string

	// IgnoreSDKAttempts turns off the detection of SDKs that retry on their
	// own. By default a request whose sender marks its attempts and will
	// retry it is sent once per SDK attempt: with the AWS SDKs'
	// amz-sdk-request header ("attempt=1; max=3"), only the SDK's last
	// attempt gets the policy's remaining attempts, so that the server
	// never sees more attempts per call than the larger of the SDK's and
	// the policy's MaxAttempts; with the Google Cloud clients'
	// gccl-attempt-count, which gives no maximum, every attempt after the
	// first is sent once (docs/sdk.md). Set it only when the header lies.
	IgnoreSDKAttempts bool
}

// WithDefaults returns p with every zero field replaced by the default its
// comment names, and out-of-range values as the comments say the
// transport treats them: the default, or zero. Quota stays nil when unset:
// the transport creates it, so that it is never shared by accident. A nil
// pointer in Quota, Budget, Limiter or RateLimit (a nil *quota.Bucket,
// *quota.Budget, *ratelimit.Adaptive or *ratelimit.Fixed) becomes nil,
// which it means. A
// non-nil Hedge, Penalty or Failover is replaced by a normalised copy, its
// lists copied too, so that the result shares nothing with p's pointed-to
// values and the caller's are never changed; one that can never act (a
// Hedge without a positive Delay or Quantile, a Penalty without a positive
// Delay or a signal, a Failover without Endpoints) becomes nil, as the
// transport treats it. A Failover.Mode that is not a mode, and a Penalty's
// statuses and codes, are kept as they are.
func (p Policy) WithDefaults() Policy {
	p = p.withoutNilPointers()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.Backoff == nil {
		p.Backoff = backoff.FullJitter{}
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.Classify == nil {
		p.Classify = classify.Default
	}
	if p.MaxBodyBuffer <= 0 {
		p.MaxBodyBuffer = DefaultMaxBodyBuffer
	}
	if p.MaxDrain <= 0 {
		p.MaxDrain = DefaultMaxDrain
	}
	if p.ReadTimeout <= 0 {
		p.ReadTimeout = DefaultReadTimeout
	}
	p.ServerDelay = p.ServerDelay.normalised()
	if p.AttemptTimeout < 0 {
		p.AttemptTimeout = 0
	}
	if p.MaxTotalTime < 0 {
		p.MaxTotalTime = 0
	}
	if p.MaxTotalWait < 0 {
		p.MaxTotalWait = 0
	}
	if p.TerminationBuffer < 0 {
		p.TerminationBuffer = 0
	}
	p.Hedge = p.Hedge.normalised()
	p.Penalty = p.Penalty.normalised()
	p.Failover = p.Failover.normalised()
	return p
}
