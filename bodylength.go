package retrytransport

import (
	"fmt"
	"io"
	"net/http"
)

// lengthCheck is what is known of whether a request body's length matches
// its ContentLength. Its zero value knows nothing yet.
type lengthCheck uint8

const (
	lengthUnknown lengthCheck = iota
	lengthRight
	lengthWrong
)

// mismatch is lengthMismatch(req, replay, limit), remembered in c for a
// body with GetBody, so that such a body is measured at most once for all
// of req's attempts. A recorded body (replay non-nil) is asked each time:
// its length becomes known only once it has been read to its end.
func (c *lengthCheck) mismatch(req *http.Request, replay *replayBuffer, limit int64) bool {
	if replay != nil {
		return lengthMismatch(req, replay, 0)
	}
	if *c == lengthUnknown {
		*c = lengthRight
		if lengthMismatch(req, nil, limit) {
			*c = lengthWrong
		}
	}
	return *c == lengthWrong
}

// lengthMismatch reports whether req's body provably is not
// req.ContentLength bytes long. Such a request is a bug of the caller's:
// net/http refuses to finish sending it ("http: ContentLength=100 with Body
// length 50") and every attempt would fail the same way, so the failure is
// final. It is asked only after an attempt failed with an error, so the
// happy path pays nothing.
//
// A recorded body knows its length once the base transport has read it to
// its end, which net/http does before it reports the mismatch. A body with
// GetBody is measured through a fresh copy, at most ContentLength+1 bytes,
// and only up to limit bytes, so that a large upload is not read once more
// just to be checked. A body whose length is not known is not wrong.
func lengthMismatch(req *http.Request, replay *replayBuffer, limit int64) bool {
	want := req.ContentLength
	if want <= 0 || req.Body == nil || req.Body == http.NoBody {
		return false
	}
	if replay != nil {
		n, known := replay.length()
		return known && n != want
	}
	if req.GetBody == nil || want > limit {
		return false
	}
	b, err := req.GetBody()
	if err != nil || b == nil {
		return false
	}
	defer b.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(b, want+1))
	return err == nil && n != want
}

// bodyLengthError is the error of an attempt whose request body is not
// ContentLength bytes long. net/http reports the mismatch, or, when its
// reader sees the connection it closed first, only "use of closed network
// connection"; this error says what went wrong either way, and wraps
// net/http's.
type bodyLengthError struct {
	declared int64
	err      error
}

func (e *bodyLengthError) Error() string {
	return fmt.Sprintf("retrytransport: request body length differs from ContentLength=%d: %v", e.declared, e.err)
}

func (e *bodyLengthError) Unwrap() error { return e.err }
