// Package policy describes what a retrying transport does for the requests
// of one host: a [Policy] value, named presets, per-host maps, and loaders
// that build them from JSON documents and environment variables.
//
// A Policy is plain data. It holds no per-request state; the transport that
// uses it creates the quota buckets it needs, so one Policy value can serve
// many transports without them sharing anything by accident. A pointer
// field that is set (Quota, Limiter, RateLimit) is used as given and so is
// shared by every transport given the same value.
//
// # Presets
//
// Presets are functions that return a new Policy on every call (preset.go,
// preset_azure_services.go, sns.go), each documenting its source:
//
//   - AWS SDK retry modes (docs/aws.md): [Standard], [Adaptive], [None],
//     the SDKs' newer standard behaviour, [StandardV2], and the AWS SDK
//     for Kotlin's strategies, [KotlinStandard] and [KotlinAdaptive].
//   - Amazon SNS delivery policies (docs/sns.md): [SNSAWSManaged] and
//     [SNSCustomerManaged].
//   - Azure guidance (docs/azure.md): [AzureStorageExponential],
//     [AzureStorageLinear], [AzureStorageInteractive],
//     [AzureStorageBackground], [AzureInteractive] and [AzureBackground];
//     and per service [AzureCosmosDB] (with [AzureCosmosDBOptions] for the
//     SDK's two settings), [AzureServiceBus], [AzureSearch] and
//     [AzureActiveDirectory].
//
// [Preset] finds one by name, in any case, for configuration files and
// command lines; [PresetNames] lists the names.
//
// # Loading
//
//   - [Load] reads a Policy from this package's JSON schema (load.go,
//     backoffjson.go), and [Policy.MarshalJSON] writes one, so that the
//     two round-trip; Policy.UnmarshalJSON lets a Policy sit in a larger
//     configuration struct.
//   - [LoadSNS] reads an SNS delivery policy as AWS documents it (sns.go).
//   - [LoadMap] reads a [Map]: a default policy and one per host pattern
//     (map.go).
//   - [LoadFile] and [LoadMapFile] read the file they are given, and put
//     its name in every error.
//   - [FromEnv] applies RETRYTRANSPORT_RETRY_MODE and
//     RETRYTRANSPORT_MAX_ATTEMPTS, or the AWS SDKs' AWS_RETRY_MODE and
//     AWS_MAX_ATTEMPTS, through a getenv function that the caller passes;
//     [FromEnviron] takes os.Environ()'s list instead, and also reports an
//     unknown RETRYTRANSPORT_ variable (env.go).
//
// Every loader rejects unknown fields and reports each bad setting as a
// *[FieldError] naming the field, the value and what is allowed, or the
// name it was probably meant to be, and malformed JSON as a
// *[SyntaxError] with its line and column (decode.go, suggest.go); it
// checks its result with [Policy.Validate].
//
// # Not here
//
// The package reads no file but the one LoadFile or LoadMapFile is given,
// never reads the environment on its own, keeps no state between calls, and
// does not retry anything: package retrytransport applies the policies.
package policy
