package classify

import "net/http"

// IsIdempotent reports whether req may be sent again after any retryable
// outcome: its method is idempotent ([IdempotentMethod]), or it carries an
// Idempotency-Key or X-Idempotency-Key header, which net/http's own Transport
// also takes as the caller's promise that a repeat is harmless.
func IsIdempotent(req *http.Request) bool {
	if IdempotentMethod(req.Method) {
		return true
	}
	// Direct map access: the keys are canonical already, and this avoids
	// the canonicalisation Header.Get would do.
	_, ok := req.Header["Idempotency-Key"]
	if !ok {
		_, ok = req.Header["X-Idempotency-Key"]
	}
	return ok
}

// IdempotentMethod reports whether method is idempotent under RFC 9110
// §9.2.2: GET, HEAD, OPTIONS, TRACE, PUT or DELETE; an empty method means
// GET. Two requests with such a method do what one does, even when they
// are in flight at once, which an idempotency key does not promise
// (docs/hedging.md).
func IdempotentMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
