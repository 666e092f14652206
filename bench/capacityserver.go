package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// capacity is a throttling server's: a token bucket of rate requests per
// second holding up to burst; a request finding it empty gets a 429.
type capacity struct {
	rate  float64 // requests per second
	burst int
}

func (c capacity) String() string { return fmt.Sprintf("%.0f req/s (burst %d)", c.rate, c.burst) }

// capacityServer admits what its capacity allows and answers the rest as
// the throttled scenario's server does without Retry-After: a 429 with the
// AWS throttling code (writeThrottled). It counts the hits and the 429s
// from the start given to count until its end, apart before and after a
// split (the first second of a closed-loop run, the start-up).
type capacityServer struct {
	*server
	start, split, end atomic.Int64 // UnixNano
	hits, throttles   [2]atomic.Int64
}

// newCapacityServer starts a server of capacity c that counts nothing
// until count is called.
func newCapacityServer(c capacity) *capacityServer {
	limiter := rate.NewLimiter(rate.Limit(c.rate), c.burst)
	s := &capacityServer{}
	s.server = newServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		now := time.Now().UnixNano()
		counted := now >= s.start.Load() && now < s.end.Load()
		half := 0
		if now >= s.split.Load() {
			half = 1
		}
		if counted {
			s.hits[half].Add(1)
		}
		if limiter.Allow() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		if counted {
			s.throttles[half].Add(1)
		}
		writeThrottled(w, false)
	})
	return s
}

// count makes the server count the hits in [start, end), apart before and
// after split.
func (s *capacityServer) count(start, split, end time.Time) {
	s.split.Store(split.UnixNano())
	s.end.Store(end.UnixNano())
	s.start.Store(start.UnixNano())
}

// share429 is the share of the hits counted answered 429: all of them, and
// those after the split; NaN where no hit was counted.
func (s *capacityServer) share429() (all, afterSplit float64) {
	h0, h1 := s.hits[0].Load(), s.hits[1].Load()
	t0, t1 := s.throttles[0].Load(), s.throttles[1].Load()
	return ratioOf(t0+t1, h0+h1), ratioOf(t1, h1)
}

// ratioOf is n/d, NaN when d is 0.
func ratioOf(n, d int64) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(n) / float64(d)
}

// throttleFirstServer admits everything, except that after throttleNext(k)
// it answers the next k hits 429 as the throttled scenario's server does
// without Retry-After (writeThrottled), then admits everything again.
type throttleFirstServer struct {
	*server
	left atomic.Int64 // 429s still to send
}

// newThrottleFirstServer starts a server that admits everything until
// throttleNext is called.
func newThrottleFirstServer() *throttleFirstServer {
	s := &throttleFirstServer{}
	s.server = newServer(func(w http.ResponseWriter, r *http.Request) {
		if s.takeThrottle() {
			_, _ = io.Copy(io.Discard, r.Body)
			writeThrottled(w, false)
			return
		}
		okHandler(w, r)
	})
	return s
}

// throttleNext makes the server answer the next k hits 429.
func (s *throttleFirstServer) throttleNext(k int) { s.left.Store(int64(k)) }

// takeThrottle reports whether this hit is one of the 429s still to send,
// and counts it off.
func (s *throttleFirstServer) takeThrottle() bool {
	for {
		n := s.left.Load()
		if n <= 0 {
			return false
		}
		if s.left.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
