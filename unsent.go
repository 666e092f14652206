package retrytransport

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// connWatch records whether an attempt asked for a connection and whether
// it obtained one. An attempt that asked (GetConn) but never got one
// (GotConn) never sent a byte, which makes even a POST safe to send again
// (DESIGN "Knowing that a request was never sent"): it catches what the
// error alone may hide, such as a TLS handshake timeout or a failed proxy
// CONNECT. A base transport that reports no trace events at all proves
// nothing, so GetConn must have fired. Only non-idempotent requests pay for
// the trace; the others may be retried anyway.
type connWatch struct {
	asked atomic.Bool
	got   atomic.Bool
	trace httptrace.ClientTrace
}

// context returns ctx with a trace that records GetConn and GotConn,
// composed with any trace the caller installed. It is called once per
// request: composing mutates the trace, so it must not be repeated for each
// attempt.
func (w *connWatch) context(ctx context.Context) context.Context {
	w.trace.GetConn = func(string) { w.asked.Store(true) }
	w.trace.GotConn = func(httptrace.GotConnInfo) { w.got.Store(true) }
	return httptrace.WithClientTrace(ctx, &w.trace)
}

// reset forgets the previous attempt, before a new attempt.
func (w *connWatch) reset() {
	w.asked.Store(false)
	w.got.Store(false)
}

// neverConnected reports whether the current attempt provably obtained no
// connection: it asked for one and got none.
func (w *connWatch) neverConnected() bool { return w.asked.Load() && !w.got.Load() }
