package classify_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// newReq returns a request for https://example.com/ with the given method.
func newReq(t *testing.T, method string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "https://example.com/resource", nil)
	if err != nil {
		t.Fatalf("http.NewRequest(%q) failed: %v", method, err)
	}
	return req
}

// newResp returns a response with the given status and body, and the given
// header key/value pairs (kv must have even length).
func newResp(t *testing.T, status int, body string, kv ...string) *http.Response {
	t.Helper()
	if len(kv)%2 != 0 {
		t.Fatalf("newResp(%d, %q, %q): odd number of header arguments", status, body, kv)
	}
	h := make(http.Header)
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{
		StatusCode: status,
		Header:     h,
		Body:       io.NopCloser(strings.NewReader(body)),
	}
}

// countingBody is a response body that serves data, then err (io.EOF when
// nil), and counts the bytes it hands out and the calls to Close. With
// errWithData, err comes with the Read that hands out the last bytes, as
// net/http's bodies may return it, rather than on the Read after.
type countingBody struct {
	data        []byte
	err         error
	errWithData bool
	read        int
	closes      int
}

func (b *countingBody) Read(p []byte) (int, error) {
	end := b.err
	if end == nil {
		end = io.EOF
	}
	if b.read >= len(b.data) {
		return 0, end
	}
	n := copy(p, b.data[b.read:])
	b.read += n
	if b.errWithData && b.read == len(b.data) {
		return n, end
	}
	return n, nil
}

func (b *countingBody) Close() error {
	b.closes++
	return nil
}
