package main

import (
	"io"
	"net/http"
	"sync"
)

// requestIDHeader carries the id of a logical request. The server counts
// attempts per id; every attempt of one logical request carries the same id,
// because retrytransport sends the caller's headers again unchanged.
const requestIDHeader = "X-Request-Id"

// The paths of the flaky server, one per fault.
const (
	pathBurst    = "/burst"    // 503 to the first 2 attempts, then 200
	pathThrottle = "/throttle" // 429 with Retry-After: 1 to the first attempt, then 200
	pathDrop     = "/drop"     // hang up without a response on the first attempt, then 200
	pathOutage   = "/outage"   // 503 to every attempt
)

// burstLength is how many attempts of each request pathBurst fails.
const burstLength = 2

// flakyServer is the demo's misbehaving HTTP handler. Its faults depend on
// how many attempts of the same logical request (same X-Request-Id) it has
// seen, so a client that sends a request again eventually gets through,
// except on pathOutage. It is safe for concurrent use.
type flakyServer struct {
	mu       sync.Mutex
	hits     int            // attempts seen since the last reset
	attempts map[string]int // attempts seen per request id since the last reset
}

// newFlakyServer returns a flakyServer that has seen nothing.
func newFlakyServer() *flakyServer {
	return &flakyServer{attempts: make(map[string]int)}
}

// ServeHTTP answers one attempt according to its path and to how many
// attempts of its logical request came before it.
func (s *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.record(r.Header.Get(requestIDHeader))
	switch r.URL.Path {
	case pathBurst:
		if n <= burstLength {
			http.Error(w, "overloaded, try again", http.StatusServiceUnavailable)
			return
		}
	case pathThrottle:
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
	case pathDrop:
		if n == 1 {
			hangUp(w)
			return
		}
		// Without this, the client would keep the connection and send the
		// next request's first attempt on it. net/http's Transport itself
		// resends an idempotent request that fails on a reused connection
		// (but never on a fresh one), so the fault would never reach the
		// RoundTripper above it, retrytransport included.
		w.Header().Set("Connection", "close")
	case pathOutage:
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	default:
		http.NotFound(w, r)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// hangUp takes over the attempt's connection and closes it without writing
// a byte, as a crashing server or a dropping load balancer would.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot hang up on this connection", http.StatusInternalServerError)
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}

// record counts an attempt of request id and returns its number, 1 for the
// first.
func (s *flakyServer) record(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits++
	s.attempts[id]++
	return s.attempts[id]
}

// attemptsOf returns how many attempts of request id the server has seen
// since the last reset.
func (s *flakyServer) attemptsOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[id]
}

// reset forgets every attempt and returns how many there were, so that the
// next client meets the same faults as the previous one.
func (s *flakyServer) reset() (hits int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits = s.hits
	s.hits = 0
	clear(s.attempts)
	return hits
}
