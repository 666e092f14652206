package main

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// hangServer answers 200 after a short latency, except while it hangs:
// from the instant given to hang until the one given to recover, it
// accepts every request and reads it, and never answers it, not even
// after it recovers; the handler lets go only when the client closes the
// connection (giving up) or the server closes. It records when each
// request it hung on arrived, and from which fleet client
// (fleetClientHeader), if any.
type hangServer struct {
	*server
	latency           time.Duration // of a healthy answer
	hangAt, recoverAt atomic.Int64  // UnixNano; zero: never hangs
	closing           chan struct{}
	mu                sync.Mutex
	hung              []hungRequest
}

// hungRequest is a request the hanging server received while it hung.
type hungRequest struct {
	at     time.Time
	client int // fleetClientOf the request: -1 if none
}

// newHangServer starts a server that answers after latency, and hangs
// only once hang is called.
func newHangServer(latency time.Duration) *hangServer {
	s := &hangServer{latency: latency, closing: make(chan struct{})}
	s.server = newServer(s.serve)
	return s
}

// hang makes the server hang from at until recoverAt.
func (s *hangServer) hang(at, recoverAt time.Time) {
	s.recoverAt.Store(recoverAt.UnixNano())
	s.hangAt.Store(at.UnixNano())
}

func (s *hangServer) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	_, _ = io.Copy(io.Discard, r.Body)
	if at := now.UnixNano(); at >= s.hangAt.Load() && at < s.recoverAt.Load() {
		s.mu.Lock()
		s.hung = append(s.hung, hungRequest{now, fleetClientOf(r)})
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		panic(http.ErrAbortHandler) // close the connection without an answer
	}
	time.Sleep(s.latency)
	_, _ = w.Write([]byte("ok"))
}

// hungRequests returns the requests the server hung on, in the order they
// arrived.
func (s *hangServer) hungRequests() []hungRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hungRequest(nil), s.hung...)
}

// close lets go of the requests it hangs on, without an answer, and stops
// the server.
func (s *hangServer) close() {
	close(s.closing)
	s.Close()
}
