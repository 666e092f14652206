package classify

import "net/http"

// IsIdempotent reports whether req may be sent again after any retryable
// outcome: its method is idempotent under RFC 9110 §9.2.2 (GET, HEAD,
// OPTIONS, TRACE, PUT, DELETE; an empty method means GET), or it carries an
// Idempotency-Key or X-Idempotency-Key header, which net/http's own Transport
// also takes as the caller's promise that a repeat is harmless.
func IsIdempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
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
