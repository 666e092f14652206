package retrytransport_test

// The test rig: a Transport on a fake clock (newRig) over a fake server of
// scripted answers (script), and the small helpers the tests share.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// halfJitter is a backoff whose draws are always 0.5, so delays are exact:
// retry n waits 2^(n-1) s / 2.
var halfJitter = backoff.FullJitter{Rand: func() float64 { return 0.5 }}

// everySecond waits one second before every retry, so that a test's
// retry waits are told apart from its hedge delays at a glance.
var everySecond = backoff.Constant{Interval: time.Second}

// step is one scripted answer of a fake server: a status (with optional
// header and body) or a transport error.
type step struct {
	status int
	header http.Header
	body   string
	err    error
	unread bool // fail with err without reading the request body, as a dial error does
}

// script is the scripted answers of a fake server. It answers call n
// (1-based) with answer(n, req) when answer is set, and otherwise with
// steps[n-1], repeating the last step. It records every request body it
// read. A script is a base RoundTripper (see also mockBase) and an
// http.Handler for a real server (see serve).
type script struct {
	steps  []step
	answer func(n int, req *http.Request) step

	mu     sync.Mutex
	calls  int
	bodies []string
}

// next takes the step of the next call and counts the call.
func (s *script) next(req *http.Request) step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.answer != nil {
		return s.answer(s.calls, req)
	}
	return s.steps[min(s.calls, len(s.steps))-1]
}

// peekUnread returns whether the next call's step leaves the body unread.
func (s *script) peekUnread() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answer != nil {
		return false
	}
	return s.steps[min(s.calls, len(s.steps)-1)].unread
}

func (s *script) respond(req *http.Request) (*http.Response, error) {
	if s.peekUnread() {
		st := s.next(req)
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, st.err
	}
	var body string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		body = string(b)
	}
	st := s.next(req)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if st.err != nil {
		return nil, st.err
	}
	return st.response(req), nil
}

// response returns the step's answer to req as a response (its err aside).
func (st step) response(req *http.Request) *http.Response {
	resp := httpmock.NewStringResponse(st.status, st.body)
	for k, v := range st.header {
		resp.Header[k] = v
	}
	resp.Request = req
	return resp
}

// RoundTrip answers req from the script, with no network.
func (s *script) RoundTrip(req *http.Request) (*http.Response, error) { return s.respond(req) }

// ServeHTTP answers r from the script. A step with an error aborts the
// response, so the client sees the connection close.
func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	st := s.next(r)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	if st.err != nil {
		panic(http.ErrAbortHandler)
	}
	for k, v := range st.header {
		w.Header()[k] = v
	}
	w.WriteHeader(st.status)
	io.WriteString(w, st.body)
}

// serve returns a 127.0.0.1 server that answers from s, closed when the
// test ends.
func serve(t *testing.T, s *script) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *script) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// mockBase returns an httpmock transport that answers every method and URL
// with the script.
func mockBase(s *script) *httpmock.MockTransport {
	mt := httpmock.NewMockTransport()
	mt.RegisterNoResponder(s.respond)
	return mt
}

// rig is a Transport under test. It waits on a fake clock, so a test
// asserts on the recorded sleeps and never waits for real, and it records
// the events its observers heard when built with recordEvents or
// recordFinals.
type rig struct {
	*retrytransport.Transport
	clock *faketime.Clock

	mu     sync.Mutex
	events []retrytransport.Event // heard by WithObserver
	finals []retrytransport.Event // heard by WithFinalObserver
}

// rigSetup is what newRig builds a rig from besides its base and policy.
type rigSetup struct {
	clock    *faketime.Clock
	sleep    func(context.Context, time.Duration) error
	events   bool
	finals   bool
	fallback backoff.Strategy
	adaptive bool
	opts     []retrytransport.Option
}

// rigOption changes how newRig builds a rig.
type rigOption func(*rigSetup)

// onClock makes the rig wait on c rather than on a clock of its own.
func onClock(c *faketime.Clock) rigOption { return func(s *rigSetup) { s.clock = c } }

// sleepingWith makes the rig wait with sleep (nil: its clock's Sleep).
func sleepingWith(sleep func(context.Context, time.Duration) error) rigOption {
	return func(s *rigSetup) { s.sleep = sleep }
}

// recordEvents records every Event a WithObserver observer hears.
func recordEvents() rigOption { return func(s *rigSetup) { s.events = true } }

// recordFinals records every Event a WithFinalObserver observer hears.
func recordFinals() rigOption { return func(s *rigSetup) { s.finals = true } }

// backoffUnlessSet gives a policy without a Backoff b instead of halfJitter.
func backoffUnlessSet(b backoff.Strategy) rigOption {
	return func(s *rigSetup) { s.fallback = b }
}

// adaptiveOnRig gives the policy a new ratelimit.Adaptive on the rig's
// clock as its Limiter, in place of any it has: policy.Adaptive() with
// the fake clock. A limiter keeps its own clock, which WithClock does not
// replace, so a limiter on the real clock would see no time pass during
// the rig's waits.
func adaptiveOnRig() rigOption { return func(s *rigSetup) { s.adaptive = true } }

// withOptions passes opts to New after the rig's own, so they win.
func withOptions(opts ...retrytransport.Option) rigOption {
	return func(s *rigSetup) { s.opts = append(s.opts, opts...) }
}

// newRig builds a rig: a Transport over base with p, on a fake clock
// started at the real time. A *script base answers through mockBase, an
// httpmock transport; a nil base is a real http.Transport whose idle
// connections are closed when the test ends, for 127.0.0.1 servers. A
// policy without a Backoff, or with a FullJitter that draws at random,
// gets the exact halfJitter (or the backoffUnlessSet one).
func newRig(t *testing.T, base http.RoundTripper, p policy.Policy, opts ...rigOption) *rig {
	t.Helper()
	var s rigSetup
	for _, o := range opts {
		o(&s)
	}
	if s.clock == nil {
		s.clock = faketime.NewAt(time.Now())
	}
	if s.sleep == nil {
		s.sleep = s.clock.Sleep
	}
	if s.adaptive {
		p.Limiter = &ratelimit.Adaptive{Now: s.clock.Now}
	}
	if sc, ok := base.(*script); ok {
		base = mockBase(sc)
	}
	if base == nil {
		hb := &http.Transport{}
		t.Cleanup(hb.CloseIdleConnections)
		base = hb
	}
	switch fj, ok := p.Backoff.(backoff.FullJitter); {
	case p.Backoff == nil && s.fallback != nil:
		p.Backoff = s.fallback
	case p.Backoff == nil || ok && fj.Rand == nil:
		p.Backoff = halfJitter
	}
	r := &rig{clock: s.clock}
	all := []retrytransport.Option{
		retrytransport.WithPolicy(p),
		retrytransport.WithClock(s.clock.Now, s.sleep),
	}
	if s.events {
		all = append(all, retrytransport.WithObserver(func(ev retrytransport.Event) {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}))
	}
	if s.finals {
		all = append(all, retrytransport.WithFinalObserver(func(ev retrytransport.Event) {
			r.mu.Lock()
			r.finals = append(r.finals, ev)
			r.mu.Unlock()
		}))
	}
	r.Transport = retrytransport.New(base, append(all, s.opts...)...)
	return r
}

// heard returns the events recorded by recordEvents, in order.
func (r *rig) heard() []retrytransport.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]retrytransport.Event(nil), r.events...)
}

// finalEvents returns the events recorded by recordFinals, in order.
func (r *rig) finalEvents() []retrytransport.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]retrytransport.Event(nil), r.finals...)
}

// stop returns the Stop of the last final Event recorded by recordEvents,
// or nil if there was none.
func (r *rig) stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].Final {
			return r.events[i].Stop
		}
	}
	return nil
}

// byScope returns the rig's Snapshot keyed by scope.
func (r *rig) byScope() map[string]retrytransport.ScopeStats {
	m := make(map[string]retrytransport.ScopeStats)
	for _, s := range r.Snapshot() {
		m[s.Scope] = s
	}
	return m
}

// scopeStats returns the Snapshot entry of scope, or the zero ScopeStats
// if the Snapshot has none.
func (r *rig) scopeStats(scope string) retrytransport.ScopeStats { return r.byScope()[scope] }

// get sends a GET to url through r and closes the response.
func (r *rig) get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := r.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip(GET %s): %v", url, err)
	}
	resp.Body.Close()
	return resp
}

// client returns an http.Client over r whose idle connections are closed
// when the test ends.
func (r *rig) client(t *testing.T) *http.Client {
	c := &http.Client{Transport: r}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func newReq(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatalf("http.NewRequest(%q, %q): %v", method, url, err)
	}
	return req
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading response body: %v", err)
	}
	return string(b)
}

// getBody sends a GET to url through client, stops the test on an error,
// and returns the response with its body, read and closed.
func getBody(t *testing.T, client *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

func retryAfter(secs int) http.Header {
	return http.Header{"Retry-After": {strconv.Itoa(secs)}}
}

// attemptsFor sends one GET to url through tr and returns how many attempts
// the script s answered for it.
func attemptsFor(t *testing.T, tr http.RoundTripper, s *script, url string) int {
	t.Helper()
	before := s.count()
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip(%s): %v", url, err)
	}
	resp.Body.Close()
	return s.count() - before
}

// roundTripFunc is a base RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// h builds a header from key, value pairs; a key may repeat.
func h(kv ...string) http.Header {
	out := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

// countingBase counts the attempts a Transport hands to its base.
type countingBase struct {
	base  http.RoundTripper
	calls atomic.Int32
}

func (c *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.base.RoundTrip(req)
}

// calls records the method calls of the test implementations below.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}
