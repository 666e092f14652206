package retrytransport_test

// Faults under cancellation: the caller cancels at every stage of a
// request, and the call returns promptly with context.Canceled, closes
// the body, sends nothing again and leaves nothing running.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// stuckBody is a request body that yields one chunk, closes started, and
// then blocks until it is closed or ctx is done: an upload from a source
// that stalls, such as a pipe from another request under the same context.
// (A Read that ignores the context blocks net/http's cancellation too:
// its Transport waits for the body write to end before it returns.)
type stuckBody struct {
	*closeSignal
	ctx     context.Context
	once    sync.Once
	started chan struct{}
}

func newStuckBody(ctx context.Context) *stuckBody {
	return &stuckBody{closeSignal: &closeSignal{done: make(chan struct{})}, ctx: ctx, started: make(chan struct{})}
}

func (b *stuckBody) Read(p []byte) (int, error) {
	n := 0
	b.once.Do(func() {
		n = copy(p, "first chunk")
		close(b.started)
	})
	if n > 0 {
		return n, nil
	}
	select {
	case <-b.done:
		return 0, io.ErrClosedPipe
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
}

// cancelCase is a request, and the moment in its life at which the caller
// cancels it.
type cancelCase struct {
	client *http.Client
	method string
	url    string
	// body is the request body, and bodyDone is closed when it is
	// closed; nil means a small body of the test's.
	body     io.ReadCloser
	bodyDone <-chan struct{}
	// cancelAt is closed when the request has reached the stage; nil
	// cancels before the request is sent, unless inBody is set: then the
	// caller cancels while reading the response body.
	cancelAt <-chan struct{}
	inBody   bool
	// seen is how often the server handled the request, wantSeen what
	// it must be.
	seen     func() int
	wantSeen int
	// conns, if not nil, are the server's connections, which must all be
	// closed once the client closes its idle ones.
	conns *connTracker
}

// onceCloser returns a channel and a func that closes it, any number of
// times.
func onceCloser() (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// cancelStages builds, for each stage of a request's life, a request that
// the caller cancels there; ctx is the request's context.
var cancelStages = []struct {
	name  string
	setup func(t *testing.T, ctx context.Context) cancelCase
}{
	{"BeforeFirstAttempt", func(t *testing.T, _ context.Context) cancelCase {
		f, srv := newFlaky(t, 0, nil)
		return cancelCase{client: e2eClient(t, policy.Standard()), method: "POST", url: srv.URL,
			seen: func() int { return f.count("c") }, wantSeen: 0, conns: &srv.conns}
	}},
	{"WaitingForTheRateLimiter", func(t *testing.T, _ context.Context) cancelCase {
		f, srv := newFlaky(t, 0, nil)
		p := policy.Standard()
		p.RateLimit = &ratelimit.Fixed{Rate: 0.1} // one send per 10 s
		c := pooledClient(t, nil, p)
		resp, err := do(t, c, "GET", srv.URL, "first", nil)
		if err != nil {
			t.Fatalf("GET taking the rate limiter's one token: %v", err)
		}
		resp.Body.Close()
		at, fire := onceCloser()
		time.AfterFunc(20*time.Millisecond, fire)
		return cancelCase{client: c, method: "PUT", url: srv.URL, cancelAt: at,
			seen: func() int { return f.count("c") }, wantSeen: 0, conns: &srv.conns}
	}},
	{"DuringTLSHandshake", func(t *testing.T, _ context.Context) cancelCase {
		at, fire := onceCloser()
		srv := newTCPServer(t, func(c net.Conn, _ int32) {
			fire()
			io.Copy(io.Discard, c) // never answers the ClientHello
		})
		return cancelCase{client: pooledClient(t, nil, policy.Standard()), method: "POST", url: srv.url("https"), cancelAt: at,
			seen: func() int { return int(srv.accepted.Load()) }, wantSeen: 1}
	}},
	{"AwaitingResponseHeaders", func(t *testing.T, _ context.Context) cancelCase {
		s, srv := newStaller(t, stallBeforeHeaders)
		return cancelCase{client: e2eClient(t, policy.Standard()), method: "POST", url: srv.URL, cancelAt: s.entered,
			seen: func() int { return int(s.seen.Load()) }, wantSeen: 1, conns: &srv.conns}
	}},
	{"DuringBackoff", func(t *testing.T, _ context.Context) cancelCase {
		f, srv := newFlaky(t, 1, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "10")
			w.WriteHeader(503)
		})
		at, fire := onceCloser()
		c := pooledClient(t, nil, policy.Standard(), retrytransport.WithObserver(func(retrytransport.Event) { fire() }))
		return cancelCase{client: c, method: "PUT", url: srv.URL, cancelAt: at,
			seen: func() int { return f.count("c") }, wantSeen: 1, conns: &srv.conns}
	}},
	{"DuringUpload", func(t *testing.T, ctx context.Context) cancelCase {
		f, srv := newFlaky(t, 0, nil)
		body := newStuckBody(ctx)
		return cancelCase{client: e2eClient(t, policy.Standard()), method: "POST", url: srv.URL, body: body, bodyDone: body.done, cancelAt: body.started,
			seen: func() int { return f.count("c") }, wantSeen: 0, conns: &srv.conns}
	}},
	{"ReadingResponseBody", func(t *testing.T, _ context.Context) cancelCase {
		s, srv := newStaller(t, stallMidBody)
		return cancelCase{client: e2eClient(t, policy.Standard()), method: "PUT", url: srv.URL, inBody: true,
			seen: func() int { return int(s.seen.Load()) }, wantSeen: 1, conns: &srv.conns}
	}},
}

// TestFaultCancelAtEveryStage: whichever stage a request has reached when
// the caller cancels it, the call (or the body read) returns promptly with
// an error wrapping context.Canceled, the request body is closed, the
// server sees the request no more than it had, and nothing is left running.
func TestFaultCancelAtEveryStage(t *testing.T) {
	for _, stage := range cancelStages {
		t.Run(stage.name, func(t *testing.T) {
			noLeaks(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cc := stage.setup(t, ctx)
			if cc.body == nil {
				b := &closeSignal{Reader: strings.NewReader("payload"), done: make(chan struct{})}
				cc.body, cc.bodyDone = b, b.done
			}
			req, err := http.NewRequestWithContext(ctx, cc.method, cc.url, cc.body)
			if err != nil {
				t.Fatalf("http.NewRequest: %v", err)
			}
			req.Header.Set("X-Request-Id", "c")

			cancelled := make(chan time.Time, 1)
			cancelNow := func() { cancelled <- time.Now(); cancel() }
			switch {
			case cc.cancelAt != nil:
				go func() {
					select {
					case <-cc.cancelAt:
					case <-time.After(leakBound):
						t.Errorf("the request never reached stage %s", stage.name)
					}
					cancelNow()
				}()
			case !cc.inBody:
				cancelNow()
			}
			err = cc.call(t, req, cancelNow)
			returned := time.Now()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s cancelled %s: error = %v; want it to wrap context.Canceled", cc.method, stage.name, err)
			}
			if took := returned.Sub(<-cancelled); took > leakBound {
				t.Errorf("%s cancelled %s returned %v after the cancellation; want at once", cc.method, stage.name, took)
			}
			if got := cc.seen(); got != cc.wantSeen {
				t.Errorf("%s cancelled %s: server handled it %d times; want %d", cc.method, stage.name, got, cc.wantSeen)
			}
			select {
			case <-cc.bodyDone:
			case <-time.After(leakBound):
				t.Errorf("%s cancelled %s: request body never closed", cc.method, stage.name)
			}
			if cc.conns != nil {
				cc.conns.expectAllClosed(t, cc.client)
			}
		})
	}
}

// call sends req and returns the error the caller sees: that of the call,
// or, for a case cancelled while the response body is read, that of the
// read, after cancelNow. A call that does not end within 2*leakBound fails
// the test; its request body is then closed, to release it.
func (cc *cancelCase) call(t *testing.T, req *http.Request, cancelNow func()) error {
	t.Helper()
	type result struct {
		resp *http.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := cc.client.Do(req)
		ch <- result{resp, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(2 * leakBound):
		t.Errorf("%s was cancelled but has not returned after %v", cc.method, 2*leakBound)
		cc.body.Close()
		r = <-ch
	}
	if r.err != nil || !cc.inBody {
		if r.err == nil {
			r.resp.Body.Close()
			t.Fatalf("%s = %d after the cancellation; want an error", cc.method, r.resp.StatusCode)
		}
		return r.err
	}
	defer r.resp.Body.Close()
	part := make([]byte, len(stallBodyPart))
	if _, err := io.ReadFull(r.resp.Body, part); err != nil {
		t.Fatalf("%s: reading the first bytes of the body: %v", cc.method, err)
	}
	cancelNow()
	_, err := io.ReadAll(r.resp.Body)
	return err
}
