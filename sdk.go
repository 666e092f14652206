package retrytransport

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// sdkAttempt is what an SDK says in a request header about its own
// retries of the request.
type sdkAttempt struct {
	n, max int      // this attempt of the SDK's, and its last; max is 0 when the SDK does not say
	sdk    *sdkMark // the SDK that said so
}

// sdkMark is a header in which an SDK marks its attempts, and how to turn
// that SDK's retries off.
type sdkMark struct {
	name, header, off string
}

var (
	awsMark = &sdkMark{"the AWS SDK", "amz-sdk-request", "aws.NopRetryer, or retry.AddWithMaxAttempts(r, 1)"}
	// The Google Cloud clients count their attempts without saying how
	// many they will make, and Cloud Storage counts them even with its
	// retries off: only a second attempt proves that the client retries.
	googleMark = &sdkMark{"the Google Cloud client", "x-goog-api-client", "its retry option (storage: WithPolicy(RetryNever); google.golang.org/api: no WithRetry)"}
)

// sdkAttemptOf reads from h the mark of an SDK that retries the request on
// its own: the AWS SDKs' amz-sdk-request, "attempt=2; max=3" (botocore
// adds "ttl=..."), or, from the second attempt on, the Google clients'
// gccl-attempt-count/2 in x-goog-api-client. It reports false when there is none, or it does not
// parse.
func sdkAttemptOf(h http.Header) (sdkAttempt, bool) {
	if v := h["Amz-Sdk-Request"]; len(v) > 0 { // canonical keys: no allocation
		return awsAttempt(v[0])
	}
	if v := h["X-Goog-Api-Client"]; len(v) > 0 {
		return googleAttempt(v[0])
	}
	return sdkAttempt{}, false
}

// awsAttempt parses an amz-sdk-request value.
func awsAttempt(v string) (sdkAttempt, bool) {
	a := sdkAttempt{sdk: awsMark}
	for _, kv := range strings.Split(v, ";") {
		k, val, _ := strings.Cut(kv, "=")
		var dst *int
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "attempt":
			dst = &a.n
		case "max":
			dst = &a.max
		default: // botocore also sends ttl=<time>
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 1 {
			return sdkAttempt{}, false
		}
		*dst = n
	}
	if a.n < 1 || a.max < 1 || a.n > a.max {
		return sdkAttempt{}, false
	}
	return a, true
}

// googleAttempt finds gccl-attempt-count/N among the space-separated
// tokens of an x-goog-api-client value, and reports it only from N = 2 on:
// a client that has retried once may retry again, but a first attempt
// says nothing of the client's retries.
func googleAttempt(v string) (sdkAttempt, bool) {
	const key = "gccl-attempt-count/"
	i := strings.Index(v, key)
	if i < 0 || i > 0 && v[i-1] != ' ' {
		return sdkAttempt{}, false
	}
	num, _, _ := strings.Cut(v[i+len(key):], " ")
	n, err := strconv.Atoi(num)
	if err != nil || n < 2 {
		return sdkAttempt{}, false
	}
	return sdkAttempt{n: n, sdk: googleMark}, true
}

// retries reports whether the SDK will send another attempt of its own
// after this one, if it fails: it says so, or does not say how many.
func (a sdkAttempt) retries() bool { return a.max == 0 || a.n < a.max }

// attemptsFor returns how many attempts the Transport may make of one SDK
// attempt, when the policy allows limit: one, unless this is the SDK's
// last attempt, which gets what is left of limit after the SDK's earlier
// ones, so that the server sees at most the larger of the two counts per
// call.
func (a sdkAttempt) attemptsFor(limit int) int {
	if a.retries() {
		return 1
	}
	return max(1, limit-(a.max-1))
}

// limitForSDK lowers r.max when the request's SDK retries it itself, and
// says so once per Transport. Every attempt of a marked request counts,
// those after paced throttles too: the SDK's count bounds them.
func (r *request) limitForSDK() {
	a, ok := sdkAttemptOf(r.req.Header)
	if !ok || a.max == 1 { // no mark, or the SDK's retries are off
		return
	}
	r.max = a.attemptsFor(r.max)
	r.sdk, r.extra = a.retries(), 0
	t := r.t
	if t.logger != nil && t.sdkWarned.CompareAndSwap(false, true) {
		t.logger.LogAttrs(r.ctx, slog.LevelWarn,
			"retrytransport: "+a.sdk.name+" retries its requests too ("+a.sdk.header+"): "+
				"each of its attempts is sent once, and only its last, when it says which, gets the policy's other attempts. "+
				"Turn its retries off ("+a.sdk.off+") to let the policy decide alone",
			slog.String(a.sdk.header, r.req.Header.Get(a.sdk.header)),
			slog.String("host", r.req.URL.Host))
	}
}
