package classify

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// MaxPeek is the most bytes of a response body that Code reads to find an
// error code. AWS, Azure and most REST error documents are far smaller; a
// code further in is not seen, and the body is never read whole.
const MaxPeek = 4 << 10

// throttlingCodes and transientCodes are the retryable error codes of
// docs/aws.md, split by what they cost the retry quota. They are unexported
// so no caller can change them for the whole process; ThrottlingCodes and
// TransientCodes hand out copies.
var (
	throttlingCodes = []string{
		"BandwidthLimitExceeded", "EC2ThrottledException", "LimitExceededException",
		"PriorRequestNotComplete", "ProvisionedThroughputExceededException",
		"RequestLimitExceeded", "RequestThrottled", "RequestThrottledException",
		"SlowDown", "ThrottledException", "Throttling", "ThrottlingException",
		"TooManyRequestsException", "TransactionInProgressException",
	}
	transientCodes = []string{
		"IDPCommunicationError", "RequestTimeout", "RequestTimeoutException",
	}
)

// ThrottlingCodes returns a copy of the error codes that mark a throttle.
func ThrottlingCodes() []string { return append([]string(nil), throttlingCodes...) }

// TransientCodes returns a copy of the error codes that mark a transient
// failure.
func TransientCodes() []string { return append([]string(nil), transientCodes...) }

func isThrottlingCode(c string) bool { return contains(throttlingCodes, c) }
func isTransientCode(c string) bool  { return contains(transientCodes, c) }

func contains(list []string, c string) bool {
	for _, s := range list {
		if s == c {
			return true
		}
	}
	return false
}

// Code returns the service error code of resp, or "" if it finds none. It
// looks, in order, at the x-amzn-ErrorType header ("Code:detail"), then at
// the first MaxPeek bytes of the body: a JSON "__type" member (its
// "namespace#Code" form included), a JSON "code" or "Code" member, or an XML
// <Code> element.
//
// Code restores resp.Body so that the caller reads every byte, in order, as
// if it had never been touched; a read error met while peeking, such as the
// io.ErrUnexpectedEOF of a body whose connection was cut, is returned to the
// caller's read after the peeked bytes, never turned into io.EOF. Closing
// the restored body closes the original.
func Code(resp *http.Response) string {
	if v := resp.Header.Get("X-Amzn-Errortype"); v != "" {
		return sanitize(v)
	}
	prefix := peek(resp, MaxPeek)
	return CodeFromBody(prefix)
}

// CodeFromBody returns the error code in an error document's bytes, or "".
// It is the body half of Code, for callers that already hold the bytes.
func CodeFromBody(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if b[0] == '<' {
		return xmlCode(b)
	}
	for _, key := range [...]string{`"__type"`, `"code"`, `"Code"`} {
		if v, ok := jsonString(b, key); ok {
			if v = sanitize(v); v != "" {
				return v
			}
		}
	}
	return ""
}

// sanitize reduces an AWS error type to its bare code: the part before the
// first ':' ("Code:http://internal..."), then the part after the last '#'
// ("aws.namespace#Code").
func sanitize(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// jsonString finds the first member named key (quoted) whose value is a
// string without escapes, and returns that value. It is a scan, not a
// parser: error documents are small, flat and machine-written, and a scan
// needs no allocation and tolerates a prefix cut at MaxPeek.
func jsonString(b []byte, key string) (string, bool) {
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return "", false
		}
		b = b[i+len(key):]
		rest := bytes.TrimLeft(b, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '"' {
			continue
		}
		rest = rest[1:]
		end := bytes.IndexByte(rest, '"')
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			continue
		}
		return string(rest[:end]), true
	}
}

// xmlCode returns the text of the first <Code> element, as S3, EC2 and the
// query-protocol services write it.
func xmlCode(b []byte) string {
	const open, closeTag = "<Code>", "</Code>"
	i := bytes.Index(b, []byte(open))
	if i < 0 {
		return ""
	}
	b = b[i+len(open):]
	j := bytes.Index(b, []byte(closeTag))
	if j < 0 {
		return ""
	}
	return string(bytes.TrimSpace(b[:j]))
}

// peek reads up to n bytes of resp.Body and puts them back in front of the
// rest of the body. The restored body ends as the original does: with
// io.EOF only where the original ended cleanly, and otherwise with the
// original's error, io.ErrUnexpectedEOF of a body whose connection was cut
// included.
func peek(resp *http.Response, n int) []byte {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	buf := make([]byte, n)
	m, err := fill(resp.Body, buf)
	buf = buf[:m]
	var rest io.Reader = resp.Body
	switch err {
	case nil:
	case io.EOF:
		rest = eofReader{}
	default:
		rest = errReader{err}
	}
	resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), closer: resp.Body}
	return buf
}

// fill reads from r into buf until buf is full or a Read fails, and
// returns the bytes read and the error as r gave it: io.EOF for a clean
// end. io.ReadFull does not serve here: it reports a clean end after some
// bytes as io.ErrUnexpectedEOF, the very error net/http gives for a body
// whose connection was cut, so the two could not be told apart.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// peekedBody is a response body whose first bytes were read by Code and are
// served again before the rest.
type peekedBody struct {
	io.Reader
	closer io.Closer
}

func (b *peekedBody) Close() error { return b.closer.Close() }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
