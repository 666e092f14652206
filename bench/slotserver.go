package main

import (
	"net/http"
	"sync/atomic"
	"time"
)

// slotServer is a server that does not announce its overload: it serves
// a fixed number of requests at once, each for a fixed service time, and
// queues the rest, first come first served, for as long as it takes. It
// never answers 429 or 503, and it does not look at a request's context
// while the request waits or is served: a request whose client has gone
// is served all the same when its turn comes, as by most servers, and
// that work is wasted.
//
// The slots keep a schedule: a request that waited starts when its slot
// fell free on the schedule, not when the goroutine that held the slot
// woke up, so that a late timer on this busy machine is not charged to
// the next request and the capacity stays slots per service time.
//
// It counts, for the services that end within the window given to count,
// the requests served and, of them, those whose client had gone when
// their service ended (the server cancels a request's context when its
// client closes the connection), and at any time the most requests it has
// served at once.
type slotServer struct {
	*server
	service time.Duration
	sleep   func(time.Duration) // time.Sleep; tests oversleep
	// slots holds a token per free slot: when the slot's last service
	// ended, on the schedule. Go hands a channel's values to the
	// goroutines blocked on it in the order they came, which makes the
	// queue first come first served.
	slots   chan time.Time
	closing chan struct{} // closed by close: queued requests give up

	from, until    atomic.Int64 // UnixNano: the window of count
	served, wasted atomic.Int64
	busy, peak     atomic.Int64 // requests in service, now and at most
}

// newSlotServer starts a slot server with slots slots and a service time
// of service, counting nothing until count is called.
func newSlotServer(slots int, service time.Duration) *slotServer {
	return newSlotServerSleeping(slots, service, time.Sleep)
}

// newSlotServerSleeping is newSlotServer whose services wait with sleep.
func newSlotServerSleeping(slots int, service time.Duration, sleep func(time.Duration)) *slotServer {
	s := &slotServer{service: service, sleep: sleep, slots: make(chan time.Time, slots), closing: make(chan struct{})}
	for range slots {
		s.slots <- time.Time{}
	}
	s.server = newServer(s.serve)
	return s
}

// serve queues r for a slot, holds the slot for the service time on the
// slot's schedule, and answers 200.
func (s *slotServer) serve(w http.ResponseWriter, r *http.Request) {
	queued := time.Now()
	var free time.Time
	select {
	case free = <-s.slots:
	case <-s.closing:
		panic(http.ErrAbortHandler) // the run is over: no answer, no log line
	}
	n := s.busy.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); {
		p = s.peak.Load()
	}
	end := later(queued, free).Add(s.service)
	s.sleep(time.Until(end))
	s.busy.Add(-1)
	gone := r.Context().Err() != nil
	if at := end.UnixNano(); at >= s.from.Load() && at < s.until.Load() {
		s.served.Add(1)
		if gone {
			s.wasted.Add(1)
		}
	}
	s.slots <- end
	okHandler(w, r)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// count makes the server count the services that end in [from, until).
func (s *slotServer) count(from, until time.Time) {
	s.until.Store(until.UnixNano())
	s.from.Store(from.UnixNano())
}

// results returns the services counted, those of them wasted, and the
// most requests served at once.
func (s *slotServer) results() (served, wasted, peak int64) {
	return s.served.Load(), s.wasted.Load(), s.peak.Load()
}

// close drops the queue, without answering it, and stops the server once
// the requests in service are done.
func (s *slotServer) close() {
	close(s.closing)
	s.CloseClientConnections()
	s.Close()
}
