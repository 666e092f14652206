package retrytransport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// attemptTimer abandons an attempt that has no response headers after a
// timeout (Policy.AttemptTimeout, or what is left of MaxTotalTime). It
// cancels the attempt's own context, never the caller's, so the outcome is a
// Timeout that may be retried.
//
// The timer covers the wait for headers only. Whether the headers came in
// time is settled once, atomically, when the base transport returns: either
// the timer is disarmed first, and the attempt's context then lives on until
// the response body is closed, so classifying the response and reading its
// body are bounded by other means; or the timer fired first, and the
// attempt is a Timeout even if a response arrived with it, since its body
// would fail when read.
//
// It runs on a real timer even under WithClock: it races a real server, and
// only tests of real servers use it.
type attemptTimer struct {
	timer  *time.Timer
	cancel context.CancelFunc
	state  atomic.Int32 // timerArmed, then timerFired or timerDisarmed
}

const (
	timerArmed int32 = iota
	timerFired
	timerDisarmed
)

// errAttemptTimeout replaces the error of an attempt abandoned by its
// timer: the base transport reports the cancellation as context.Canceled,
// which would read as the caller's own.
var errAttemptTimeout = fmt.Errorf("retrytransport: attempt timed out (Policy.AttemptTimeout or MaxTotalTime): %w", context.DeadlineExceeded)

// startAttemptTimer returns a copy of req whose context is cancelled after
// d, unless the timer is disarmed by end first.
func startAttemptTimer(req *http.Request, d time.Duration) (*http.Request, *attemptTimer) {
	ctx, cancel := context.WithCancel(req.Context())
	at := &attemptTimer{cancel: cancel}
	at.timer = time.AfterFunc(d, at.fire)
	return req.WithContext(ctx), at
}

func (at *attemptTimer) fire() {
	if at.state.CompareAndSwap(timerArmed, timerFired) {
		at.cancel()
	}
}

// end settles the attempt once the base transport has returned, and
// reports whether the timer had fired first. If it had, resp is closed and
// dropped, as its body is cut.
func (at *attemptTimer) end(resp *http.Response) (_ *http.Response, fired bool) {
	if !at.state.CompareAndSwap(timerArmed, timerDisarmed) {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, true
	}
	at.timer.Stop()
	return resp, false
}

// release releases the attempt's context once the attempt is classified:
// now, when there is no response body that needs it, and otherwise when
// resp.Body is closed.
func (at *attemptTimer) release(resp *http.Response) {
	if resp == nil || !needsContext(resp) {
		at.cancel()
		return
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: at.cancel}
}

// needsContext reports whether reading resp's body depends on the
// attempt's context staying alive. http.NoBody does not, and neither does
// the connection that net/http hands over with a 101 Switching Protocols
// response: it is detached from the request once the response is returned.
// Leaving those bodies unwrapped keeps what net/http promises of them: the
// http.NoBody identity, and a 101 body that is an io.ReadWriteCloser.
func needsContext(resp *http.Response) bool { return hasReadableBody(resp) }

// hasReadableBody reports whether resp has a body that is read as a body:
// not nil, not http.NoBody, and not the connection of a 101 Switching
// Protocols, which the caller takes over. Such a body is neither wrapped
// nor read by the transport.
func hasReadableBody(resp *http.Response) bool {
	return resp.Body != nil && resp.Body != http.NoBody && resp.StatusCode != http.StatusSwitchingProtocols
}

// cancelOnClose releases an attempt's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
