// Package policy describes what a retrying transport does for the requests
// of one host: how often and how long to retry, which outcomes to retry,
// and what the retries may cost.
//
// A [Policy] is a struct with one field per setting. The zero Policy is AWS
// standard retry mode, and each optional feature is one field that is off
// when nil or zero: ServerDelay (the server's Retry-After and its kin),
// Failover (alternate hosts), Hedge (a copy of a slow request), Penalty
// (a slower pace after an overload signal), Limiter (adaptive client-side
// pacing), RateLimit (a fixed rate), Budget (retries as a share of the
// requests). A non-nil pointer turns its feature on, so [Policy.Validate]
// rejects one that could never act; switching off what the zero Policy does
// takes an explicit value: MaxAttempts 1 for retries, quota.None for
// the retry quota.
//
// [Standard] returns AWS standard retry mode (3 attempts, full jitter
// backoff, a retry quota per scope), and [Adaptive] the same with a new
// *ratelimit.Adaptive in Limiter, AWS adaptive mode's client-side rate
// limiter. A [Map] holds a policy per host pattern ("api.example.com",
// "*.example.com") and a default for the other hosts.
//
// # Which scope pays
//
// Quotas and limiters are kept per scope (the request URL's host and port
// by default; see Policy.Scope), and with a Failover the attempts of one request may go
// to several. Each is charged where it bounds what it is meant to bound:
//
//   - Quota, the retry quota: the scope each retry or hedge is sent to, so
//     that a dead primary does not drain a healthy secondary's bucket.
//   - Budget: the request's own scope, whichever endpoint a retry goes to,
//     since it bounds what the caller's requests cost in all. A quota that
//     counts requests, such as a *quota.Budget, belongs here, and
//     Validate rejects one in Quota.
//   - Limiter and RateLimit: the scope each attempt is sent to, the first
//     included.
//
// A Policy is plain data. It holds no per-request state, and a nil Quota
// means a bucket that each transport creates for itself, so one Policy
// value can serve many transports without them sharing anything by
// accident. A pointer field that is set (Quota, Budget, Limiter,
// RateLimit) is used as given and so is shared, per scope, by every
// transport given the same value: the limiter of the policy [Adaptive]
// returns paces every transport built from that one value together; call
// Adaptive once per transport for a limiter each.
//
// # Other presets
//
// Presets are functions that return a new Policy on every call, each
// documenting its source: [None], [StandardV2], [KotlinStandard] and
// [KotlinAdaptive] (docs/aws.md); [SNSAWSManaged] and [SNSCustomerManaged]
// (docs/sns.md); [AzureStorageExponential], [AzureStorageLinear],
// [AzureStorageInteractive], [AzureStorageBackground], [AzureInteractive],
// [AzureBackground], [AzureCosmosDB] (with [AzureCosmosDBOptions]),
// [AzureServiceBus], [AzureSearch] and [AzureActiveDirectory]
// (docs/azure.md). [Preset] finds one by name, in any case, and
// [PresetNames] lists the names.
//
// # Loading
//
// [Load] and [LoadFile] read a Policy from this package's JSON schema,
// which mirrors the struct, and [Policy.MarshalJSON] writes one back;
// [LoadMap] and [LoadMapFile] read a Map; [LoadSNS] reads an SNS delivery
// policy as AWS documents it. [FromEnv] and [FromEnviron] apply the retry
// mode and attempt count of RETRYTRANSPORT_RETRY_MODE and
// RETRYTRANSPORT_MAX_ATTEMPTS, or of the AWS SDKs' AWS_RETRY_MODE and
// AWS_MAX_ATTEMPTS, and the circuit breaker and the concurrency limit of
// RETRYTRANSPORT_BREAKER, RETRYTRANSPORT_CONCURRENCY and their settings.
// Every loader reports each bad setting as a
// *[FieldError] naming the field, the value and what is allowed, or the
// name it was probably meant to be, malformed JSON as a *[SyntaxError]
// with its line and column, and checks its result with Validate.
//
// # Not here
//
// The package reads no file but the one LoadFile or LoadMapFile is given,
// never reads the environment on its own, keeps no state between calls, and
// does not retry anything: package retrytransport applies the policies.
package policy
