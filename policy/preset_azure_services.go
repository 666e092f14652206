package policy

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/retryafter"
)

// This file holds the presets of the Azure guide's service sections
// (docs/azure.md): Cosmos DB, Service Bus, Azure Search and Azure Active
// Directory. As in preset.go, MaxAttempts is one more than the service's
// retry count, and the retry quota is kept. Where a service retries only
// some statuses, its preset's Classify makes every other status of 400 or
// more final; a transport error (no response) is still classified by
// classify.Default, as the guide's general rules for REST services say:
// a connection that failed is worth another attempt whatever the service.

// Cosmos DB's RetryOptions defaults and the SDK's wait for a 429 that asks
// for none (docs/azure.md).
const (
	cosmosDBMaxRetryAttempts    = 9
	cosmosDBMaxRetryWaitSeconds = 30
	cosmosDBNoRetryAfter        = 5 * time.Second
)

// AzureCosmosDBOptions are the settings of Cosmos DB's retries of throttled
// requests (docs/azure.md), named as the SDK's RetryOptions names them so
// that a team can carry its settings over as written. [AzureCosmosDBOptions.Policy]
// turns them into a Policy; the zero value gives the SDK's defaults, the
// same as [AzureCosmosDB]. The guide's example, 5 retries and at most 15 s
// of waiting, reads
//
//	p := policy.AzureCosmosDBOptions{
//		MaxRetryAttemptsOnThrottledRequests: 5,
//		MaxRetryWaitTimeInSeconds:           15,
//	}.Policy()
type AzureCosmosDBOptions struct {
	// MaxRetryAttemptsOnThrottledRequests is how many times a request
	// that the service throttled (status 429) is retried. Zero or negative
	// means 9, the SDK's default. Unlike the SDK's property, zero does not
	// turn the retries off: use None, or set MaxAttempts 1 on the Policy.
	MaxRetryAttemptsOnThrottledRequests int

	// MaxRetryWaitTimeInSeconds caps, in whole seconds, the time one
	// request spends waiting before its retries, all the waits together
	// (Policy.MaxTotalWait). Zero or negative means 30, the SDK's default.
	MaxRetryWaitTimeInSeconds int
}

// Policy returns the Policy that o describes, with the SDK's defaults for
// its zero fields (shown in parentheses):
//
//	MaxAttempts          MaxRetryAttemptsOnThrottledRequests + 1 (10)
//	MaxTotalWait         MaxRetryWaitTimeInSeconds (30s): no wait starts
//	                     that would take the request's waits past it
//	MaxDelay             the same, so that one wait may use all of it
//	ServerDelay.Headers  retryafter.MSRetryAfterMS: each 429 asks for its
//	                     wait in x-ms-retry-after-ms, and no other field
//	                     is read
//	Backoff              backoff.Constant{Interval: 5s}: the SDK's wait
//	                     when a 429 asks for none
//	Classify             429 is retried; every other status is final
//
// With the defaults, 429s that ask for 1 s each are retried 9 times; 429s
// that ask for 4 s are retried 7 times (28 s), since an eighth wait would
// pass 30 s; a 429 that asks for more than 30 s is returned at once. A
// transport error is classified by classify.Default, retried at 5 s.
// Policy returns a new value on every call.
func (o AzureCosmosDBOptions) Policy() Policy {
	retries := o.MaxRetryAttemptsOnThrottledRequests
	if retries <= 0 {
		retries = cosmosDBMaxRetryAttempts
	}
	seconds := int64(o.MaxRetryWaitTimeInSeconds)
	if seconds <= 0 {
		seconds = cosmosDBMaxRetryWaitSeconds
	}
	wait := time.Duration(min(seconds, math.MaxInt64/int64(time.Second))) * time.Second
	return Policy{
		MaxAttempts:  attemptsFor(retries),
		Backoff:      backoff.Constant{Interval: cosmosDBNoRetryAfter},
		MaxDelay:     wait,
		ServerDelay:  ServerDelay{Headers: retryafter.MSRetryAfterMS},
		MaxTotalWait: wait,
		Classify:     retryStatuses(func(s int) bool { return s == http.StatusTooManyRequests }),
	}
}

// AzureCosmosDB returns the Cosmos DB (formerly DocumentDB) SDK's default
// retries of throttled requests (docs/azure.md): 9 retries after a 429,
// each waiting what the response's x-ms-retry-after-ms asks for, with at
// most 30 s of waiting in all. It is AzureCosmosDBOptions{}.Policy(); see
// [AzureCosmosDBOptions.Policy] for the fields.
func AzureCosmosDB() Policy { return AzureCosmosDBOptions{}.Policy() }

// AzureServiceBus returns the Service Bus client's RetryExponential as the
// guide sets it (docs/azure.md): minBackoff 0.1 s, maxBackoff 30 s and 3
// retries, the defaults the guide lists for the settings its example leaves
// out (deltaBackoff 3 s, a TerminationTimeBuffer of 5 s), and the client's
// server-busy mode:
//
//	MaxAttempts        4
//	Backoff            backoff.Exponential{MinBackoff: 100ms, MaxBackoff:
//	                   30s, DeltaBackoff: 3s}: retry 1 waits 0.1s, retry 2
//	                   0.1s + [2.4s, 3.6s), retry 3 0.1s + [7.2s, 10.8s);
//	                   about 0.1, 3.1 and 9.1 s
//	MaxDelay           30s
//	TerminationBuffer  5s: no retry starts when, after its wait, less than
//	                   5 s would be left of the request's time (its
//	                   context's deadline or MaxTotalTime; the preset sets
//	                   no MaxTotalTime, so without a deadline the buffer
//	                   does nothing)
//	Penalty            after a response with the error code ServerBusy,
//	                   every wait of the scope is 10 s longer, for 10 s
//
// Classify is classify.Default, the guide's rules for REST services, with
// ServerBusy a throttling code: the service turned the request away
// without acting on it, so a send (a POST) is retried as well, as the
// client retries a ServerBusyException.
func AzureServiceBus() Policy {
	return Policy{
		Classify:          classify.Classifier{ThrottlingCodes: []string{"ServerBusy"}}.Classify,
		MaxAttempts:       4,
		Backoff:           backoff.Exponential{MinBackoff: 100 * time.Millisecond, MaxBackoff: 30 * time.Second, DeltaBackoff: 3 * time.Second},
		MaxDelay:          30 * time.Second,
		TerminationBuffer: 5 * time.Second,
		Penalty:           &Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 10 * time.Second},
	}
}

// AzureSearch returns the default retry policy of the Azure Search .NET
// SDK, that of the AutoRest client runtime it is built on (docs/azure.md):
// exponential backoff after a 408 or a 5xx response:
//
//	MaxAttempts  4 (3 retries)
//	Backoff      backoff.Exponential{MinBackoff: 1s, MaxBackoff: 10s,
//	             DeltaBackoff: 10s, FastFirstRetry: true}: retry 1 waits
//	             nothing, retry 2 min(1s + [8s, 12s), 10s), so 9 to 10 s,
//	             retry 3 10s
//	Classify     408 and every 5xx but 501 and 505 are retried; every
//	             other status is final
//
// MaxDelay keeps its default, 20 s, above the backoff's 10 s cap.
func AzureSearch() Policy {
	return Policy{
		MaxAttempts: 4,
		Backoff:     backoff.Exponential{MinBackoff: time.Second, MaxBackoff: 10 * time.Second, DeltaBackoff: 10 * time.Second, FastFirstRetry: true},
		Classify: retryStatuses(func(s int) bool {
			return s == http.StatusRequestTimeout ||
				(s >= 500 && s <= 599 && s != http.StatusNotImplemented && s != http.StatusHTTPVersionNotSupported)
		}),
	}
}

// AzureActiveDirectory returns the guide's policy for Azure Active
// Directory's REST API (docs/azure.md): Topaz's ExponentialBackoff with 5
// retries, minBackoff 0, maxBackoff 60 s and deltaBackoff 2 s, within the
// section's 60 s end-to-end budget, the same as [AzureBackground], but
// retrying only 500, 502, 503 and 504, as the section says: every other
// status, 408 and 429 included, is final. The waits are 0 and then about 2,
// 6, 14 and 30 s.
func AzureActiveDirectory() Policy {
	p := AzureBackground()
	p.Classify = retryStatuses(func(s int) bool {
		switch s {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	})
	return p
}

// retryStatuses returns the classify.Func of a service that retries only
// the statuses that retry accepts. A response of 400 or more with any other
// status is Fatal. One with a status that retry accepts is what
// classify.Status makes of it when that is retryable (429 a Throttle, 503 a
// Transient unless a throttling code says otherwise), and Transient when
// Status would not retry it (506, say). A transport error and a response
// below 400 are classified by classify.Default.
func retryStatuses(retry func(status int) bool) classify.Func {
	rule := func(_ *http.Request, resp *http.Response, err error) (classify.Outcome, bool) {
		if err != nil || resp == nil || resp.StatusCode < 400 {
			return classify.Outcome{}, false
		}
		if !retry(resp.StatusCode) {
			return classify.Outcome{Kind: classify.Fatal, Reason: "status not retryable"}, true
		}
		if o := classify.Status(resp); o.Retryable() {
			return o, true
		}
		return classify.Outcome{Kind: classify.Transient, Reason: "status " + strconv.Itoa(resp.StatusCode)}, true
	}
	return classify.Classifier{Rules: []classify.Rule{rule}}.Classify
}

// attemptsFor returns the attempts that make retries retries, the first
// included, for retries >= 0, saturating at the largest int.
func attemptsFor(retries int) int {
	if retries == math.MaxInt {
		return retries
	}
	return retries + 1
}
