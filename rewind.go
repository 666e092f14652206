package retrytransport

import (
	"errors"
	"io"
	"sync"
)

// errStaleBody is what an earlier attempt's body reader returns once a
// later attempt has started: only one attempt may consume the original body.
var errStaleBody = errors.New("retrytransport: request body taken over by a later attempt")

// errNotReplayable is what rewinding a body returns once it has grown past
// the recording cap or its source has failed.
var errNotReplayable = errors.New("retrytransport: request body cannot be replayed: it grew past Policy.MaxBodyBuffer or its reader failed")

// replayBuffer makes a request body without GetBody replayable. It records the
// bytes the base transport reads, up to max, and hands each attempt a
// cursor that replays the recorded bytes and then goes on reading the
// original body (recording as it goes). Every attempt thus sends the
// identical bytes. Once more than max bytes have been read, recording stops,
// the buffer is released and the request is no longer replayable.
//
// The original body is closed once the transport is done with the request
// and the current attempt's cursor has been closed by the base transport,
// which may happen after RoundTrip returns.
type replayBuffer struct {
	readMu sync.Mutex // serialises reads of src; never held with mu waiting on it
	src    io.ReadCloser

	mu       sync.Mutex // guards the fields below
	buf      []byte
	max      int64
	read     int64 // bytes read from src so far
	err      error // sticky error from src, io.EOF at the end
	overflow bool  // read > max: buf released, not replayable
	cur      *cursor
	done     bool // the transport will create no more cursors
	orphaned bool // done, and the request failed: no attempt will close its copy
	closed   bool // src closed
}

func newReplayBuffer(src io.ReadCloser, max int64) *replayBuffer {
	return &replayBuffer{src: src, max: max}
}

// claim returns a cursor for a new attempt that will yield the whole body,
// and makes every earlier cursor stale. It reports false, and changes
// nothing, when it cannot: the body grew past the cap or its source failed,
// or an earlier attempt's writer is in the middle of reading the source,
// so that what the body will hold is not known yet. It is called just
// before the attempt is sent, once the earlier attempts have had their
// chance to finish with the body.
func (r *replayBuffer) claim() (*cursor, bool) {
	if !r.readMu.TryLock() {
		return nil, false
	}
	defer r.readMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.replayableLocked() {
		return nil, false
	}
	r.cur = &cursor{r: r}
	return r.cur, true
}

// current reports whether body is the cursor that the last claim handed
// out.
func (r *replayBuffer) current(body io.ReadCloser) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := body.(*cursor)
	return ok && c == r.cur
}

// rewind is a GetBody for attempt requests: a new cursor if the body can
// still be replayed whole.
func (r *replayBuffer) rewind() (io.ReadCloser, error) {
	c, ok := r.claim()
	if !ok {
		return nil, errNotReplayable
	}
	return c, nil
}

// replayable reports whether a new cursor would yield the whole body: no
// bytes were lost past the cap, and the source has not failed.
func (r *replayBuffer) replayable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replayableLocked()
}

// replayableLocked is replayable for a caller that holds r.mu.
func (r *replayBuffer) replayableLocked() bool {
	return !r.overflow && (r.err == nil || r.err == io.EOF)
}

// failure returns the error the source returned, if it failed: an error
// of the caller's body, not of the network.
func (r *replayBuffer) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// length returns the body's length once the source has been read to its
// end, and false before.
func (r *replayBuffer) length() (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read, r.err == io.EOF
}

// finish marks that no more cursors will be made, and closes the source if
// the current cursor is already closed (or none was handed out). When the
// request failed (it ends without a response), the base transport is done
// with the body, though it may not have closed its copy: net/http's HTTP/2
// transport drops a copy it rewound when the request's context ends during
// its own backoff. The source is then closed at once, or, if a read of it
// is in flight, as soon as that read ends.
func (r *replayBuffer) finish(failed bool) {
	r.mu.Lock()
	r.done = true
	r.orphaned = failed
	closeNow := r.cur == nil || r.cur.closed
	r.mu.Unlock()
	switch {
	case closeNow:
		r.closeSrc()
	case failed && r.readMu.TryLock():
		r.closeSrc()
		r.readMu.Unlock()
	}
}

func (r *replayBuffer) closeSrc() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.src.Close()
}

// cursor is one attempt's view of the body.
type cursor struct {
	r      *replayBuffer
	pos    int64 // guarded by r.mu
	closed bool  // guarded by r.mu
}

// failure returns the error the body's source returned, if it failed.
func (c *cursor) failure() error { return c.r.failure() }

// took reports whether the base transport read any byte of this cursor.
func (c *cursor) took() bool {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.pos > 0
}

// fromBuf serves c's read from the recording if it can. The caller holds
// r.mu. handled is false when c must read on from the source.
func (c *cursor) fromBuf(p []byte) (n int, err error, handled bool) {
	r := c.r
	switch {
	case r.cur != c:
		return 0, errStaleBody, true
	case c.closed, r.closed:
		return 0, errors.New("retrytransport: read on closed request body"), true
	case c.pos < int64(len(r.buf)):
		n = copy(p, r.buf[c.pos:])
		c.pos += int64(n)
		return n, nil, true
	case c.pos < r.read:
		// Bytes past the cap were consumed by an earlier attempt; this
		// cursor cannot serve them. replayable prevents getting here.
		return 0, errStaleBody, true
	case r.err != nil:
		return 0, r.err, true
	}
	return 0, nil, false
}

func (c *cursor) Read(p []byte) (int, error) {
	r := c.r
	r.mu.Lock()
	n, err, handled := c.fromBuf(p)
	r.mu.Unlock()
	if handled || len(p) == 0 {
		return n, err
	}
	r.readMu.Lock()
	defer r.readMu.Unlock()
	// Another cursor may have read while this one waited for readMu.
	r.mu.Lock()
	n, err, handled = c.fromBuf(p)
	r.mu.Unlock()
	if handled {
		return n, err
	}
	n, err = r.src.Read(p)
	r.mu.Lock()
	r.read += int64(n)
	c.pos += int64(n)
	// Once the transport is done no attempt will replay the bytes, so they
	// are not recorded; the current cursor reads on from the source.
	if !r.overflow && !r.done {
		if r.read > r.max {
			r.overflow = true
			r.buf = nil
		} else {
			r.buf = append(r.buf, p[:n]...)
		}
	}
	if err != nil {
		r.err = err
	}
	orphaned := r.orphaned
	r.mu.Unlock()
	if orphaned { // finish found this read in flight and left the closing to it
		r.closeSrc()
	}
	return n, err
}

// Close marks the cursor closed. The source is closed when the transport
// is done and this is the last cursor.
func (c *cursor) Close() error {
	r := c.r
	r.mu.Lock()
	c.closed = true
	closeNow := r.done && r.cur == c
	r.mu.Unlock()
	if closeNow {
		r.closeSrc()
	}
	return nil
}
