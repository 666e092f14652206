package retrytransport_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// halfJitter is a backoff whose draws are always 0.5, so delays are exact:
// retry n waits 2^(n-1) s / 2.
var halfJitter = backoff.FullJitter{Rand: func() float64 { return 0.5 }}

// step is one scripted answer of a fake server: a status (with optional
// header and body) or a transport error.
type step struct {
	status int
	header http.Header
	body   string
	err    error
	unread bool // fail with err without reading the request body, as a dial error does
}

// script answers the n-th call with steps[n], repeating the last step, and
// records every request body it received.
type script struct {
	mu     sync.Mutex
	steps  []step
	calls  int
	bodies []string
}

func (s *script) respond(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	if st := s.steps[min(s.calls, len(s.steps)-1)]; st.unread {
		s.calls++
		s.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, st.err
	}
	s.mu.Unlock()
	var body string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		body = string(b)
	}
	s.mu.Lock()
	i := min(s.calls, len(s.steps)-1)
	s.calls++
	s.bodies = append(s.bodies, body)
	st := s.steps[i]
	s.mu.Unlock()
	if st.err != nil {
		return nil, st.err
	}
	resp := httpmock.NewStringResponse(st.status, st.body)
	for k, v := range st.header {
		resp.Header[k] = v
	}
	resp.Request = req
	return resp, nil
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

// newTransport builds a Transport over the script with a fake clock and the
// exact halfJitter backoff unless p sets a backoff with its own Rand.
func newTransport(t *testing.T, s *script, p policy.Policy, opts ...retrytransport.Option) (*retrytransport.Transport, *faketime.Clock) {
	t.Helper()
	clock := faketime.NewAt(time.Now())
	if fj, ok := p.Backoff.(backoff.FullJitter); p.Backoff == nil || ok && fj.Rand == nil {
		p.Backoff = halfJitter
	}
	opts = append([]retrytransport.Option{
		retrytransport.WithPolicy(p),
		retrytransport.WithClock(clock.Now, clock.Sleep),
	}, opts...)
	return retrytransport.New(mockBase(s), opts...), clock
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
