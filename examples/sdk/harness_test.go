package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// A fault is what a fake API does with one hit instead of answering it.
type fault int

const (
	answer      fault = iota // answer as the real API would
	unavailable              // 503 with the API's error body
	throttled                // the API's throttling answer
	hangUp                   // take the connection and close it without a byte
)

// A hit is one request as the fake server received it.
type hit struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// script tells a fake server which faults to serve, one per hit in order
// (then it answers normally), and records every hit. It is safe for
// concurrent use.
type script struct {
	mu     sync.Mutex
	faults []fault
	hits   []hit
}

func newScript(faults ...fault) *script { return &script{faults: faults} }

// take records r, whose body it reads in full, and returns the fault to
// serve for it.
func (s *script) take(r *http.Request) (fault, []byte) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits = append(s.hits, hit{r.Method, r.URL.Path, r.Header.Clone(), body})
	if len(s.faults) == 0 {
		return answer, body
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, body
}

// Hits returns a copy of the hits so far.
func (s *script) Hits() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}

// repeat returns n copies of f.
func repeat(f fault, n int) []fault {
	out := make([]fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// An api is a fake of one API: its answers to the faults, and to the calls
// it serves.
type api struct {
	// unavailable is the body of its 503.
	unavailable string
	// throttle is its throttling answer.
	throttle reply
	// serve answers a call that no fault takes, given the request's body.
	serve func(r *http.Request, body []byte) reply
	// header sets the headers of every answer, the hit's number (from 1)
	// and the answer's body given: a content type, a request id.
	header func(h http.Header, n int, body string)
}

// A reply is one answer of a fake API.
type reply struct {
	status int
	body   string
	header http.Header // besides api.header's
}

// start starts a fake of a on 127.0.0.1, which serves the faults of s.
func (a api) start(s *script) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, body := s.take(r)
		var rp reply
		switch f {
		case hangUp:
			hangUpConn(w)
			return
		case unavailable:
			rp = reply{status: http.StatusServiceUnavailable, body: a.unavailable}
		case throttled:
			rp = a.throttle
		default:
			rp = a.serve(r, body)
		}
		h := w.Header()
		a.header(h, len(s.Hits()), rp.body)
		for k, v := range rp.header {
			h[k] = v
		}
		w.WriteHeader(rp.status)
		_, _ = w.Write([]byte(rp.body))
	}))
}

// retryAfter1 is the header of a throttle that asks for a 1 s wait.
var retryAfter1 = http.Header{"Retry-After": {"1"}}

// hangUpConn takes over the connection of w and closes it without writing,
// as a crashing server or a dropping load balancer does.
func hangUpConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("fake server cannot hijack: " + err.Error())
	}
	_ = conn.Close()
}

// rig is the client side of a test: a retrytransport.Transport on a fake
// clock over a base transport that counts the attempts.
type rig struct {
	clock    *faketime.Clock
	attempts atomic.Int64
	rt       *retrytransport.Transport
}

// newRig returns a rig whose Transport uses p. The base transport's idle
// connections are closed when the test ends.
func newRig(t *testing.T, p policy.Policy) *rig {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	r := &rig{clock: faketime.New()}
	counted := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.attempts.Add(1)
		return base.RoundTrip(req)
	})
	r.rt = retrytransport.New(counted, retrytransport.WithPolicy(p),
		retrytransport.WithClock(r.clock.Now, r.clock.Sleep))
	return r
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A target is one SDK call, made against a fresh fake of its API.
type target struct {
	name string
	// policy is the policy the SDK's API needs.
	policy func() policy.Policy
	// replayable reports whether the transport may send the call again
	// after a failure that the server may have processed (a dropped
	// connection, a 503): an idempotent method, an Idempotency-Key, or
	// RetryNonIdempotent.
	replayable bool
	// retryAfter reports whether the fake's throttling answer carries
	// Retry-After: 1.
	retryAfter bool
	// setup starts the fake with s and returns the call, made through rt.
	// The call returns nil after checking the SDK's parsed result, or the
	// SDK's error.
	setup setupFunc
	// status returns the HTTP status that err, an error of the SDK, reports
	// from the API, or 0 if it reports none (a transport error).
	status func(err error) int
	// checkHits, if set, checks what the server received.
	checkHits func(t *testing.T, hits []hit)
}

// setupFunc is target.setup.
type setupFunc func(t *testing.T, s *script, rt http.RoundTripper) func(context.Context) error

// calls returns, for an SDK whose client newClient builds for a fake of
// its API (started by newFake) and a round tripper, the setup of a target
// that makes call with that client.
func calls[C any](newFake func(*script) *httptest.Server, newClient func(t *testing.T, srv *httptest.Server, rt http.RoundTripper) C) func(call func(context.Context, C) error) setupFunc {
	return func(call func(context.Context, C) error) setupFunc {
		return func(t *testing.T, s *script, rt http.RoundTripper) func(context.Context) error {
			srv := newFake(s)
			t.Cleanup(srv.Close)
			c := newClient(t, srv, rt)
			return func(ctx context.Context) error { return call(ctx, c) }
		}
	}
}

// A scenario is a sequence of faults the fake serves to one call.
type scenario struct {
	name   string
	faults []fault
	// hits is the number of hits the server must see, for a replayable
	// call and for one that is not.
	hits, hitsNotReplayable int
	// status is the final status the SDK must report (0: success, -1: a
	// transport error), for a replayable call and for one that is not.
	status, statusNotReplayable int
}

// scenarios are the faults every SDK call meets. A throttle is retried even
// for a call that is not replayable: the server did not process it.
var scenarios = []scenario{
	{"503 burst", repeat(unavailable, 2), 3, 1, 0, 503},
	{"throttled", []fault{throttled}, 2, 2, 0, 0},
	{"dropped connection", []fault{hangUp}, 2, 1, 0, -1},
	{"persistent 503", repeat(unavailable, 20), 3, 1, 503, 503},
}

// runScenarios runs every scenario against every target, each with a
// fresh fake, client and Transport, so that the faulted call is the first
// on its connection (net/http itself resends a GET whose reused
// connection closed, which would hide the fault from the Transport).
func runScenarios(t *testing.T, targets []target) {
	for _, tg := range targets {
		for _, sc := range scenarios {
			t.Run(tg.name+"/"+sc.name, func(t *testing.T) {
				checkScenario(t, tg, sc)
			})
		}
	}
}

func checkScenario(t *testing.T, tg target, sc scenario) {
	wantHits, wantStatus := sc.hits, sc.status
	if !tg.replayable {
		wantHits, wantStatus = sc.hitsNotReplayable, sc.statusNotReplayable
	}
	s := newScript(sc.faults...)
	r := newRig(t, tg.policy())
	call := tg.setup(t, s, r.rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := call(ctx)

	switch {
	case wantStatus == 0 && err != nil:
		t.Errorf("call failed: %v; want success", err)
	case wantStatus > 0 && tg.status(err) != wantStatus:
		t.Errorf("call error = %v (status %d); want status %d", err, tg.status(err), wantStatus)
	case wantStatus < 0:
		var re *retrytransport.RetryError
		if !errors.As(err, &re) {
			t.Errorf("call error = %v; want a *retrytransport.RetryError inside the SDK's error", err)
		} else if re.Attempts != wantHits || !errors.Is(err, retrytransport.ErrNotRetryable) {
			t.Errorf("RetryError = %+v; want %d attempts, reason ErrNotRetryable", re, wantHits)
		}
	}

	hits := s.Hits()
	if len(hits) != wantHits {
		t.Errorf("server saw %d hits; want %d (the transport's attempts, never the SDK's times ours)", len(hits), wantHits)
	}
	if got := int(r.attempts.Load()); got != len(hits) {
		t.Errorf("transport made %d attempts; the server saw %d hits", got, len(hits))
	}
	for i, h := range hits[min(1, len(hits)):] {
		if h.Method != hits[0].Method || h.Path != hits[0].Path || !bytes.Equal(h.Body, hits[0].Body) {
			t.Errorf("hit %d = %s %s %q; want a replay of hit 1, %s %s %q",
				i+2, h.Method, h.Path, h.Body, hits[0].Method, hits[0].Path, hits[0].Body)
		}
	}

	sleeps := r.clock.Sleeps()
	if len(sleeps) != len(hits)-1 {
		t.Errorf("transport slept %v between %d hits; want one wait before each retry", sleeps, len(hits))
	}
	if sc.faults[0] == throttled && tg.retryAfter && !slices.Equal(sleeps, []time.Duration{time.Second}) {
		t.Errorf("transport slept %v after Retry-After: 1; want [1s]", sleeps)
	}
	if tg.checkHits != nil {
		tg.checkHits(t, hits)
	}
}
