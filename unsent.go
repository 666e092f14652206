package retrytransport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retrytransport/retrytransport/classify"
)

// A request that is not idempotent may be sent again only when the server
// provably did not process the attempt that failed. The proof must hold
// against everything the transport knows of the attempt, never rest on the
// error's type alone: an error that looks like a failed dial may come from
// the caller's own body reader, half-way through a body that was being
// written to a live connection.
//
// What the transport knows comes from two watchers, which only requests
// that are not idempotent pay for: a connection trace (connWatch) and, for
// bodies, what the base transport took from the body and what the body's
// own reader returned (attemptBody): a body that may fail is wrapped to see
// both; an in-memory body, which cannot fail, is only looked at.

// connWatch records, through an httptrace.ClientTrace, whether the current
// attempt asked for a connection and whether it obtained one. An attempt
// whose last request for a connection got none (GetConn with no GotConn
// after it) never sent a byte on it; net/http asks again within one
// attempt only after an earlier connection wrote nothing. A base transport
// that reports no trace events proves nothing either way.
type connWatch struct {
	asked atomic.Bool // GetConn since the attempt began
	got   atomic.Bool // GotConn since the last GetConn
	ever  atomic.Bool // GotConn at any time in the attempt
	trace httptrace.ClientTrace
	mem   memBody // the attempt's body, when it is an in-memory reader
}

// context returns ctx with a trace that records GetConn and GotConn,
// composed with any trace the caller installed. It is called once per
// request: composing mutates the trace, so it must not be repeated for each
// attempt.
func (w *connWatch) context(ctx context.Context) context.Context {
	w.trace.GetConn = func(string) {
		w.got.Store(false)
		w.asked.Store(true)
	}
	w.trace.GotConn = func(httptrace.GotConnInfo) {
		w.got.Store(true)
		w.ever.Store(true)
	}
	return httptrace.WithClientTrace(ctx, &w.trace)
}

// reset forgets the previous attempt, before a new attempt.
func (w *connWatch) reset() {
	w.asked.Store(false)
	w.got.Store(false)
	w.ever.Store(false)
}

// neverConnected reports whether the current attempt provably wrote
// nothing: its last request for a connection obtained none.
func (w *connWatch) neverConnected() bool { return w.asked.Load() && !w.got.Load() }

// connected reports whether the current attempt obtained a connection.
func (w *connWatch) connected() bool { return w.ever.Load() }

// attemptBody is what the transport learns of an attempt's request body
// from wrapping it: whether the base transport took any byte of it, and
// the error the body's own reader returned, if it failed.
type attemptBody interface {
	took() bool
	failure() error
}

// memBody observes, without wrapping it, a request body that is an
// in-memory reader: reading it cannot fail, and its Len says how much the
// base transport took. Wrapping such a body would hide it from net/http,
// which sends the headers and an in-memory body in one write, and so cost
// every request more than the attempt loop itself.
type memBody struct {
	r      interface{ Len() int }
	before int
}

func (m *memBody) took() bool     { return m.r.Len() < m.before }
func (m *memBody) failure() error { return nil }

// inMemory returns the in-memory reader under body: a *bytes.Reader,
// *bytes.Buffer or *strings.Reader, bare or inside io.NopCloser, as
// http.NewRequest and its GetBody make them. It looks into io.NopCloser as
// net/http does, through reflect on that one standard type, whose only
// field is the embedded Reader.
func inMemory(body io.Reader) (interface{ Len() int }, bool) {
	switch r := body.(type) {
	case *bytes.Reader:
		return r, true
	case *bytes.Buffer:
		return r, true
	case *strings.Reader:
		return r, true
	}
	if t := reflect.TypeOf(body); t == nopCloserType || t == nopCloserWriterToType {
		inner, _ := reflect.ValueOf(body).Field(0).Interface().(io.Reader)
		return inMemory(inner)
	}
	return nil, false
}

// The two types io.NopCloser returns, for inMemory.
var (
	nopCloserType         = reflect.TypeOf(io.NopCloser(nil))
	nopCloserWriterToType = reflect.TypeOf(io.NopCloser(strings.NewReader("")))
)

// watchedBody wraps a request body (from GetBody, or the caller's own on
// the first attempt) to observe it as an attemptBody. The base transport
// may read it from another goroutine.
type watchedBody struct {
	rc   io.ReadCloser
	read atomic.Bool
	mu   sync.Mutex
	err  error // the first error other than io.EOF; guarded by mu
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.read.Store(true)
	}
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

func (b *watchedBody) took() bool { return b.read.Load() }

func (b *watchedBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// unprocessed reports whether the server provably did not process an
// attempt whose outcome is out, so that a request that is not idempotent
// may be sent again. watch and body describe the attempt; either may be nil.
//
//   - An attempt whose last request for a connection got none wrote
//     nothing, whatever the error says.
//   - Otherwise the outcome must say Unprocessed. A response saying so (a
//     throttle) is the server's own word.
//   - An error saying so is not believed when the error came from the
//     request body's reader, nor, once a connection was obtained or the
//     base transport took body bytes, unless it is the server's refusal of
//     an HTTP/2 stream, the one proof that comes after bytes were sent.
func unprocessed(out classify.Outcome, resp *http.Response, err error, watch *connWatch, body attemptBody) bool {
	if watch != nil && watch.neverConnected() {
		return true
	}
	if !out.Unprocessed {
		return false
	}
	if resp != nil {
		return true
	}
	if body != nil {
		if f := body.failure(); f != nil && errors.Is(err, f) {
			return false
		}
	}
	if (watch != nil && watch.connected()) || (body != nil && body.took()) {
		return classify.RefusedStream(err)
	}
	return true
}
