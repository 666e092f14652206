package classify_test

import (
	"net/http"
	"testing"

	"github.com/retrytransport/retrytransport/classify"
)

func TestIsIdempotentByMethod(t *testing.T) {
	tests := []struct {
		method string
		want   bool
	}{
		{"", true}, // net/http sends GET
		{http.MethodGet, true},
		{http.MethodHead, true},
		{http.MethodOptions, true},
		{http.MethodTrace, true},
		{http.MethodPut, true},
		{http.MethodDelete, true},
		{http.MethodPost, false},
		{http.MethodPatch, false},
		{http.MethodConnect, false},
		{"PROPFIND", false},
		{"get", false}, // methods are case-sensitive (RFC 9110 §9.1)
	}
	for _, tt := range tests {
		req := newReq(t, "GET")
		req.Method = tt.method
		if got := classify.IsIdempotent(req); got != tt.want {
			t.Errorf("IsIdempotent(%q) = %t; want %t", tt.method, got, tt.want)
		}
		if got := classify.IdempotentMethod(tt.method); got != tt.want {
			t.Errorf("IdempotentMethod(%q) = %t; want %t", tt.method, got, tt.want)
		}
	}
	// A key makes a request idempotent, not its method.
	req := newReq(t, http.MethodPost)
	req.Header.Set("Idempotency-Key", "k")
	if !classify.IsIdempotent(req) || classify.IdempotentMethod(req.Method) {
		t.Error("a keyed POST: want IsIdempotent and not IdempotentMethod")
	}
}

func TestIsIdempotentWithIdempotencyKeyHeader(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodPatch, "PROPPATCH"} {
		for _, key := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
			for _, value := range []string{"3f2c9a", ""} {
				req := newReq(t, method)
				req.Header.Set(key, value)
				if !classify.IsIdempotent(req) {
					t.Errorf("IsIdempotent(%s with %s: %q) = false; want true", method, key, value)
				}
			}
		}
	}
}

// As in net/http, a header that is present with no values (a nil slice
// under the key) still counts: presence is the promise.
func TestIsIdempotentWithIdempotencyKeyPresentWithoutValues(t *testing.T) {
	for _, key := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
		req := newReq(t, http.MethodPost)
		req.Header[key] = nil
		if !classify.IsIdempotent(req) {
			t.Errorf("IsIdempotent(POST with Header[%q] = nil) = false; want true", key)
		}
	}
}

// The header is looked up by its canonical key, as net/http's Transport does;
// a non-canonical key put straight into the map is not seen.
func TestIsIdempotentIgnoresNonCanonicalKeySetInMap(t *testing.T) {
	for _, key := range []string{"idempotency-key", "x-idempotency-key", "IDEMPOTENCY-KEY"} {
		req := newReq(t, http.MethodPost)
		req.Header[key] = []string{"3f2c9a"}
		if classify.IsIdempotent(req) {
			t.Errorf("IsIdempotent(POST with Header[%q] set directly) = true; want false", key)
		}
	}
}

func TestIsIdempotentPOSTWithoutKey(t *testing.T) {
	req := newReq(t, http.MethodPost)
	req.Header.Set("Idempotency", "x")
	req.Header.Set("X-Request-Id", "x")
	if classify.IsIdempotent(req) {
		t.Errorf("IsIdempotent(POST with unrelated headers) = true; want false")
	}
	req.Header = nil
	if classify.IsIdempotent(req) {
		t.Errorf("IsIdempotent(POST with nil Header) = true; want false")
	}
}
