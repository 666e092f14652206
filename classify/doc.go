// Package classify decides what one HTTP attempt's outcome means for a
// retrying client: Success, Transient, Throttle, Timeout or Fatal, why, and
// whether the server provably did not process the request.
//
// [Default] holds the rules of AWS standard retry mode (status codes, the
// service error codes of docs/aws.md found in a bounded prefix of the body, and
// connection errors), and makes Fatal the error of a request that net/http
// refuses to send because it is malformed. [IsIdempotent] tells which
// requests may be sent again after any retryable outcome; other requests may
// be sent again only when the outcome is Unprocessed.
//
// The package neither waits nor retries; it only looks. It is safe for
// concurrent use and has no global state that callers can change.
package classify
