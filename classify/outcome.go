package classify

import (
	"net/http"
	"strconv"
)

// Kind is the category of one attempt's outcome. The categories cost the
// retry quota differently (docs/aws.md): a retry after a Transient outcome costs
// the retry cost, after a Throttle or Timeout the timeout cost.
type Kind uint8

const (
	// Success means the attempt produced a response that is not an error
	// worth retrying; it is final and refills the retry quota.
	Success Kind = iota
	// Transient is a failure that may go away: a 5xx, a connection error.
	Transient
	// Throttle means the server refused the request because of its rate:
	// 429, 509, or a throttling error code. The server did not process it.
	Throttle
	// Timeout is a client-side or server-reported timeout (408, 504 are
	// transient statuses; Timeout is for the client's own timeouts).
	Timeout
	// Fatal is a failure that retrying cannot fix: most 4xx, certificate
	// errors, malformed URLs, the caller's own cancellation.
	Fatal
)

var kindNames = [...]string{"success", "transient", "throttle", "timeout", "fatal"}

// String returns the lower-case name of k, such as "throttle".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Retryable reports whether another attempt may fix an outcome of kind k:
// true for Transient, Throttle and Timeout.
func (k Kind) Retryable() bool { return k == Transient || k == Throttle || k == Timeout }

// Outcome is what classification says of one attempt.
// The zero value is a Success with no reason.
type Outcome struct {
	// Kind is the category of the outcome.
	Kind Kind
	// Reason says why, in a few words: "status 503", "error code SlowDown",
	// "connection refused". It is a constant string on the common paths, so
	// classifying does not allocate.
	Reason string
	// Unprocessed reports that the server provably did not act on the
	// request: the connection was never established, the HTTP/2 stream was
	// refused, or the server throttled it. Only such outcomes make a request
	// with a non-idempotent method safe to send again (see IsIdempotent).
	Unprocessed bool
}

// Retryable reports whether o.Kind is a retryable kind.
func (o Outcome) Retryable() bool { return o.Kind.Retryable() }

// Func classifies one attempt: the request as sent, and either the response
// it received or the transport error (exactly one of resp and err is non-nil,
// as the http.RoundTripper contract says). A Func may read a bounded prefix
// of resp.Body but must leave the body readable from the start for the
// caller, as Default does.
type Func func(req *http.Request, resp *http.Response, err error) Outcome
