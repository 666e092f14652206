package retrytransport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// attemptTimer abandons an attempt that has no response headers after a
// timeout (Policy.AttemptTimeout, or what is left of MaxTotalTime). It
// cancels the attempt's own context, never the caller's, so the outcome is a
// Timeout that may be retried. Once headers arrive the timer is stopped and
// the context lives on until the response body is closed, so reading the
// body is bounded only by the caller.
//
// It runs on a real timer even under WithClock: it races a real server, and
// only tests of real servers use it.
type attemptTimer struct {
	timer  *time.Timer
	cancel context.CancelFunc
}

// errAttemptTimeout replaces the error of an attempt abandoned by its
// timer: the base transport reports the cancellation as context.Canceled,
// which would read as the caller's own.
var errAttemptTimeout = fmt.Errorf("retrytransport: attempt timed out (Policy.AttemptTimeout or MaxTotalTime): %w", context.DeadlineExceeded)

// startAttemptTimer returns a copy of req whose context is cancelled after d.
func startAttemptTimer(req *http.Request, d time.Duration) (*http.Request, *attemptTimer) {
	ctx, cancel := context.WithCancel(req.Context())
	at := &attemptTimer{cancel: cancel}
	at.timer = time.AfterFunc(d, cancel)
	return req.WithContext(ctx), at
}

// stop stops the timer once the attempt has returned, and reports whether
// it had already fired. The context is released now if the timer fired or
// there is no response body to read, and otherwise when resp.Body is closed.
func (at *attemptTimer) stop(resp *http.Response) (fired bool) {
	if !at.timer.Stop() {
		at.cancel()
		return true
	}
	if resp != nil && resp.Body != nil {
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: at.cancel}
		return false
	}
	at.cancel()
	return false
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
