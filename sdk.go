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
	n, max int // this attempt of the SDK's and its last; max is >= 1
}

// sdkAttemptOf reads the AWS SDKs' mark, amz-sdk-request: "attempt=2;
// max=3" (botocore adds "ttl=..."), from h. It reports false when there
// is none, or it does not parse.
func sdkAttemptOf(h http.Header) (sdkAttempt, bool) {
	v := h["Amz-Sdk-Request"] // the canonical key: no allocation
	if len(v) == 0 {
		return sdkAttempt{}, false
	}
	var a sdkAttempt
	for _, kv := range strings.Split(v[0], ";") {
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

// attemptsFor returns how many attempts the Transport may make of one SDK
// attempt, when the policy allows limit: one, unless this is the SDK's
// last attempt, which gets what is left of limit after the SDK's earlier
// ones, so that the server sees at most the larger of the two counts per
// call.
func (a sdkAttempt) attemptsFor(limit int) int {
	if a.n < a.max {
		return 1
	}
	return max(1, limit-(a.max-1))
}

// limitForSDK lowers c.max when the request's SDK retries it itself, and
// says so once per Transport.
func (c *call) limitForSDK() {
	a, ok := sdkAttemptOf(c.req.Header)
	if !ok || a.max == 1 { // no mark, or the SDK's retries are off
		return
	}
	c.max = a.attemptsFor(c.max)
	c.sdk = a.n < a.max // the SDK will retry what this call does not
	t := c.t
	if t.logger != nil && t.sdkWarned.CompareAndSwap(false, true) {
		t.logger.LogAttrs(c.ctx, slog.LevelWarn,
			"retrytransport: the AWS SDK retries its requests too (amz-sdk-request); "+
				"each of its attempts is sent once, and its last gets the policy's remaining attempts. "+
				"Turn the SDK's retries off (aws.NopRetryer) to let the policy decide alone",
			slog.String("amz-sdk-request", c.req.Header.Get("Amz-Sdk-Request")),
			slog.String("host", c.req.URL.Host))
	}
}
