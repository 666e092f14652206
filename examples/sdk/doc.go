// Package sdk shows how to put a retrytransport.Transport under four SDKs
// that have their own HTTP clients: the AWS SDK for Go v2 (DynamoDB),
// stripe-go, go-github and go-elasticsearch. It has no code of its own;
// its tests and examples are the documentation.
//
// It is a separate module, so that the SDKs never enter the go.mod of
// retrytransport itself.
//
// For every SDK the rule is the same: turn the SDK's own retries off and
// let the Transport make every attempt, or the server sees the product of
// the two (3 SDK attempts of 3 Transport attempts each is 9 requests for
// one call). The tests run each SDK against a local fake of its API that
// answers a 503 burst, a throttle, a dropped connection and a persistent
// 503, and check that the server received exactly the Transport's attempts
// and that every replayed body was byte-identical.
//
// # AWS SDK for Go v2
//
// Set aws.Config.Retryer to return aws.NopRetryer{}, and use
// policy.Standard() with RetryNonIdempotent: AWS designs its operations to
// be idempotent, and DynamoDB's JSON protocol sends every operation, reads
// included, as a POST. Errors keep their SDK types: after the last attempt
// the SDK sees the final response (a 503 becomes an *awshttp.ResponseError
// in a *smithy.OperationError), or the Transport's *RetryError inside the
// SDK's send error. The SDK signs the amz-sdk-request header with SigV4,
// so it is replayed unchanged ("attempt=1; max=1" with NopRetryer). If the
// SDK's retryer is left on, the Transport reads that header and sends each
// SDK attempt once, so that a call costs at most the larger of the two
// attempt counts.
//
// # stripe-go
//
// Set BackendConfig.MaxNetworkRetries to stripe.Int64(0) and put the
// Transport in BackendConfig.HTTPClient. policy.Standard() fits: stripe-go
// puts an Idempotency-Key on every POST, PUT, PATCH and DELETE whether or
// not it retries, so the Transport may send a POST again after a dropped
// connection, and Stripe answers the replay from its idempotency cache.
// Errors are unchanged: a final error response is a *stripe.Error, and a
// transport failure carries the *RetryError.
//
// # go-github
//
// go-github never retries on its own (unless the caller asks it to wait
// out a primary rate limit with SleepUntilPrimaryRateLimitResetWhenRateLimited),
// so github.NewClient(&http.Client{Transport: t}) is all it needs, with
// policy.Standard(): GETs are retried after any retryable outcome, and
// POSTs such as Issues.Create only after a throttle, which proves GitHub
// did not process them. A secondary rate limit answered with 429 and
// Retry-After, and a primary one (403 or 429 with X-RateLimit-Remaining:
// 0, until X-RateLimit-Reset), are throttles: the Transport waits them out
// when the wait fits in MaxDelay (20 s) and otherwise returns the response
// at once. A rate-limit response that reaches go-github makes it refuse
// further calls, without a request, until the limit has passed.
//
// # go-elasticsearch
//
// Set Config.DisableRetry and put the Transport in Config.Transport. By
// default the client sends a request up to 4 times after a 502, 503 or 504
// and after any transport error, for every method: a dropped connection
// makes it index a document without id twice. With policy.Standard() the
// Transport retries GET, PUT (indexing with an id) and DELETE, and a POST
// (indexing without an id, and every search) only after a throttle. The
// client calls the Transport's RoundTrip directly, without an http.Client,
// so a transport failure reaches the caller as the *RetryError itself; a
// final error response is an ordinary *esapi.Response with IsError true.
package sdk
