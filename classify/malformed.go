package classify

import (
	"net/http"
	"strings"
)

// The reasons malformed gives, one for each check net/http's Transport
// makes before it sends a request. They are whole Outcome reasons, so that
// classifying does not allocate.
const (
	reasonNilHeader     = "malformed request: nil Header"
	reasonHeaderName    = "malformed request: invalid header field name"
	reasonHeaderValue   = "malformed request: invalid header field value"
	reasonTrailerName   = "malformed request: invalid trailer field name"
	reasonTrailerValue  = "malformed request: invalid trailer field value"
	reasonMethod        = "malformed request: invalid method"
	reasonURLControl    = "malformed request: control character in URL"
	reasonLengthNilBody = "malformed request: ContentLength with nil Body"
)

// malformed returns why net/http's Transport refuses to send req, as an
// Outcome reason, or "" if it sends it. The checks and the errors net/http
// returns for them (plain error strings, without a type to match):
//
//   - a nil Header: "http: nil Request.Header";
//   - a header or trailer field name that is not a token, or a value with a
//     control character other than horizontal tab: "net/http: invalid
//     header field name ...", "... field value ...", "net/http: invalid
//     trailer ...";
//   - a method that is neither empty (GET) nor a token: "net/http: invalid
//     method ...";
//   - a control character in the request target: "net/http: can't write
//     control character in Request.URL";
//   - a non-zero ContentLength with a nil Body: "http: Request.ContentLength=5
//     with nil Body".
//
// req's URL must be non-nil: Error rules out a missing URL, host or http(s)
// scheme first. A ContentLength that differs from the length of a non-nil
// Body is not checked here; only the transport knows the body. An invalid
// Host is not malformed here: net/http refuses it only through a proxy or
// over HTTP/2, and sends it as an empty Host over HTTP/1, which clients of
// Unix sockets rely on, so a connection error for it may well be worth
// another attempt.
func malformed(req *http.Request) string {
	if req.Header == nil {
		return reasonNilHeader
	}
	if r := invalidFields(req.Header, reasonHeaderName, reasonHeaderValue); r != "" {
		return r
	}
	if r := invalidFields(req.Trailer, reasonTrailerName, reasonTrailerValue); r != "" {
		return r
	}
	if req.Method != "" && !isToken(req.Method) {
		return reasonMethod
	}
	// net/url escapes the path, so only the raw parts of the request
	// target can carry a control byte.
	if hasControl(req.URL.Opaque) || hasControl(req.URL.RawQuery) {
		return reasonURLControl
	}
	// net/http fails -1 (unknown length) with a nil Body as well as a
	// positive length.
	if req.ContentLength != 0 && req.Body == nil {
		return reasonLengthNilBody
	}
	return ""
}

// invalidFields returns badName if a field name of h is not a token,
// badValue if a field value has a control character other than horizontal
// tab (RFC 9110 §5.5 allows bytes from 0x80 up), and "" otherwise.
func invalidFields(h http.Header, badName, badValue string) string {
	for name, values := range h {
		if !isToken(name) {
			return badName
		}
		for _, v := range values {
			for i := 0; i < len(v); i++ {
				if isControl(v[i]) && v[i] != '\t' {
					return badValue
				}
			}
		}
	}
	return ""
}

// isToken reports whether s is a token of RFC 9110 §5.6.2: one or more
// letters, digits and the characters !#$%&'*+-.^_`|~.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte("!#$%&'*+-.^_`|~", c) < 0 {
			return false
		}
	}
	return true
}

// hasControl reports whether s has an ASCII control byte.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if isControl(s[i]) {
			return true
		}
	}
	return false
}

// isControl reports whether c is an ASCII control byte (0x00-0x1F, 0x7F).
func isControl(c byte) bool { return c < ' ' || c == 0x7f }

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
