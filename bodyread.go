package retrytransport

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// The transport reads response bodies on its own behalf twice: classify
// peeks at a failed response for an error code, and a failed response is
// drained before the next attempt so that its connection is reused. A
// server that trickles or stalls a body must not hold the request there, so
// both reads are bounded in time by Policy.ReadTimeout. A read is cut short
// by closing the body, which ends a Read in progress: net/http's response
// bodies, HTTP/1 and HTTP/2, allow Close during Read.

// errReadTimeout is what a response body returns once the transport's own
// read of it ran out of time and closed it. It wraps os.ErrDeadlineExceeded,
// the error of a read past a connection's deadline.
var errReadTimeout = fmt.Errorf("retrytransport: response body stalled while the transport read it (Policy.ReadTimeout): %w", os.ErrDeadlineExceeded)

// timedBody bounds the reads that classification makes of a response body.
// The first Read arms a timer for d; when it fires, the body is closed and
// every Read from then on returns errReadTimeout. disarm stops the timer
// once classification is over; reads then pass through, unbounded, for the
// caller. Read and disarm are called from one goroutine at a time.
type timedBody struct {
	rc      io.ReadCloser
	d       time.Duration
	timer   *time.Timer // nil until the first Read
	done    bool        // disarmed: no timer is armed any more
	expired atomic.Bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.expired.Load() {
		return 0, errReadTimeout
	}
	if b.timer == nil && !b.done {
		b.timer = time.AfterFunc(b.d, b.expire)
	}
	n, err := b.rc.Read(p)
	if err != nil && b.expired.Load() {
		err = errReadTimeout
	}
	return n, err
}

func (b *timedBody) expire() {
	b.expired.Store(true)
	b.rc.Close()
}

func (b *timedBody) Close() error {
	b.disarm()
	return b.rc.Close()
}

// disarm stops the timer, and reports whether the body was never read.
func (b *timedBody) disarm() (untouched bool) {
	b.done = true
	if b.timer == nil {
		return true
	}
	b.timer.Stop()
	return false
}

// boundReads puts resp's body under a timedBody with bound d, for the
// transport's own reads of it (classification, a penalty's code); release
// ends the bound.
func boundReads(resp *http.Response, d time.Duration) *timedBody {
	tb := &timedBody{rc: resp.Body, d: d}
	resp.Body = tb
	return tb
}

// release stops b's bound, and, if nobody read resp's body, hands the body
// back as it came; a body that was read keeps b, disarmed, as its reader.
func (b *timedBody) release(resp *http.Response) {
	if b.disarm() && resp.Body == b {
		resp.Body = b.rc
	}
}

// mayBeRead reports whether classifying resp may read its body: a
// classifier that reads any body (readsAny, a custom one) may; the standard
// one reads only those of failed responses (status 400 and above). Bodies
// without readable content (see hasReadableBody) are left alone.
func mayBeRead(resp *http.Response, readsAny bool) bool {
	return hasReadableBody(resp) && (readsAny || resp.StatusCode >= 400)
}

// drain reads up to max bytes of a failed response's body, for at most d,
// and closes it, so that its connection goes back to the pool instead of
// being dropped. A body that declares more than max bytes is closed at
// once: reading part of it would not save its connection.
func drain(resp *http.Response, max int64, d time.Duration) {
	if resp == nil || resp.Body == nil {
		return
	}
	body := resp.Body
	if body != http.NoBody && resp.ContentLength <= max {
		stop := time.AfterFunc(d, func() { body.Close() })
		_, _ = io.CopyN(io.Discard, body, max)
		stop.Stop()
	}
	body.Close()
}
