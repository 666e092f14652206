package classify

import (
	"net/http"
	"strings"
)

// Reasons for status outcomes, constant so that classifying does not allocate.
const (
	reasonOK         = ""
	reason408        = "status 408"
	reason429        = "status 429"
	reason500        = "status 500"
	reason502        = "status 502"
	reason503        = "status 503"
	reason504        = "status 504"
	reason509        = "status 509"
	reasonStatusOnly = "status not retryable"
)

// Status classifies resp by its status code and, where the status alone does
// not decide, by the error code in its x-amzn-ErrorType header or body (see
// Code). The rules, from docs/aws.md:
//
//   - 1xx, 2xx and 3xx are Success.
//   - 429 and 509 are Throttle; the server rejected the request unprocessed.
//   - 408, 500 and 504 are Transient.
//   - 502 and 503 are Transient, unless a throttling error code says the
//     server is throttling (S3 answers SlowDown with a 503): then Throttle.
//   - 400 and 403 are Throttle or Transient only with a throttling or
//     transient error code; otherwise Fatal, as is every other status.
//
// Status reads at most MaxPeek bytes of the body, and only for 400, 403, 502
// and 503 responses without an error-type header; the body is then restored
// so that the caller reads it whole. A body cut short (its connection
// broken) is judged by the bytes that came, a code counting only if it came
// whole, and the caller's read of it ends with the original error, as
// Code says.
//
// Two server verdicts come first: a Stripe-Should-Retry header of "false"
// makes any status Fatal and "true" makes any status of 400 or more
// retryable (Transient unless the rules say Throttle); and a 403 or 429 with
// X-RateLimit-Remaining: 0 (GitHub's primary rate limit) is a Throttle,
// whose wait the X-RateLimit-Reset header gives.
func Status(resp *http.Response) Outcome {
	c := lazyCode{resp: resp}
	return verdicts(&c)
}

// verdicts is Status on a response whose error code c finds at most once.
func verdicts(c *lazyCode) Outcome {
	resp := c.resp
	if s := resp.StatusCode; s >= 400 {
		switch resp.Header.Get("Stripe-Should-Retry") {
		case "false":
			return Outcome{Kind: Fatal, Reason: "Stripe-Should-Retry: false"}
		case "true":
			if o := status(c); o.Retryable() {
				return o
			}
			return Outcome{Kind: Transient, Reason: "Stripe-Should-Retry: true"}
		}
		if (s == http.StatusForbidden || s == http.StatusTooManyRequests) && rateLimitSpent(resp.Header) {
			return Outcome{Kind: Throttle, Reason: "X-RateLimit-Remaining: 0", Unprocessed: true}
		}
	}
	return status(c)
}

// rateLimitSpent reports an X-RateLimit-Remaining of exactly 0.
func rateLimitSpent(h http.Header) bool {
	v, ok := h["X-Ratelimit-Remaining"]
	return ok && len(v) > 0 && strings.TrimSpace(v[0]) == "0"
}

// status is Status without the server verdicts.
func status(c *lazyCode) Outcome {
	switch s := c.resp.StatusCode; {
	case s < 100:
		return Outcome{Kind: Fatal, Reason: "invalid status"}
	case s < 400:
		return Outcome{Kind: Success, Reason: reasonOK}
	case s == http.StatusTooManyRequests:
		return Outcome{Kind: Throttle, Reason: reason429, Unprocessed: true}
	case s == 509: // Bandwidth Limit Exceeded, not in net/http's list
		return Outcome{Kind: Throttle, Reason: reason509, Unprocessed: true}
	case s == http.StatusRequestTimeout:
		return Outcome{Kind: Transient, Reason: reason408}
	case s == http.StatusInternalServerError:
		return Outcome{Kind: Transient, Reason: reason500}
	case s == http.StatusGatewayTimeout:
		return Outcome{Kind: Transient, Reason: reason504}
	case s == http.StatusBadGateway, s == http.StatusServiceUnavailable:
		if o, ok := codeOutcome(c.get()); ok && o.Kind == Throttle {
			return o
		}
		if s == http.StatusBadGateway {
			return Outcome{Kind: Transient, Reason: reason502}
		}
		return Outcome{Kind: Transient, Reason: reason503}
	case s == http.StatusBadRequest, s == http.StatusForbidden:
		if o, ok := codeOutcome(c.get()); ok {
			return o
		}
	}
	return Outcome{Kind: Fatal, Reason: reasonStatusOnly}
}

// lazyCode finds a response's error code on first use only, so that the
// body is peeked at most once however many rules ask.
type lazyCode struct {
	resp *http.Response
	code string
	done bool
}

func (c *lazyCode) get() string {
	if !c.done {
		c.code, c.done = Code(c.resp), true
	}
	return c.code
}

// codeOutcome returns the outcome an error code stands for, if it is a
// known throttling or transient code.
func codeOutcome(code string) (Outcome, bool) {
	if code == "" {
		return Outcome{}, false
	}
	if isThrottlingCode(code) {
		return Outcome{Kind: Throttle, Reason: "error code " + code, Unprocessed: true}, true
	}
	if isTransientCode(code) {
		return Outcome{Kind: Transient, Reason: "error code " + code}, true
	}
	return Outcome{}, false
}
