package retrytransport_test

// The real-network rig of the fault suites (faults_*_test.go, soak_test.go,
// e2e_test.go and the tests of bodies and timeouts against 127.0.0.1):
// servers whose connections are tracked, the flaky server that fails the
// first attempts of each request, raw TCP servers, the ways a server
// misbehaves (resets, hang-ups, raw or cut responses), clients over a
// pooled transport, and the checks that no goroutine or connection
// outlives a test and that no request was sent twice.

import (
	"bufio"
	"crypto/sha256"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"go.uber.org/goleak"
)

// leakBound bounds how long a fault test waits for something that must
// happen promptly (a cancelled call returning, a connection closing). It is
// a limit on a bug, not a wait: a passing test never comes near it.
const leakBound = 5 * time.Second

// noLeaks makes t fail if a goroutine started during the test still runs
// after the test and its other cleanups (closing servers and idle client
// connections). Call it first, so that its cleanup runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// connTracker counts a test server's connections through
// http.Server.ConnState: all it accepted, those still open (neither closed
// nor hijacked), and the most open at once.
type connTracker struct {
	accepted, open, peak atomic.Int64
}

func (c *connTracker) track(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.accepted.Add(1)
		n := c.open.Add(1)
		for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
		}
	case http.StateClosed, http.StateHijacked:
		c.open.Add(-1)
	}
}

// expectAllClosed closes the client's idle connections and fails t if a
// server connection is still open leakBound later: the client holds a
// connection nobody will release, such as one under a response body that
// was never closed.
func (c *connTracker) expectAllClosed(t *testing.T, client *http.Client) {
	t.Helper()
	client.CloseIdleConnections()
	for end := time.Now().Add(leakBound); c.open.Load() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("%d server connections still open after CloseIdleConnections; want 0 (a leaked connection)", c.open.Load())
			return
		}
	}
}

// faultServer is an httptest server whose connections are tracked.
type faultServer struct {
	*httptest.Server
	conns connTracker
}

// host returns the server's host:port.
func (s *faultServer) host() string { return strings.TrimPrefix(s.URL, "http://") }

// newFaultServer starts a plain HTTP/1.1 faultServer for h.
func newFaultServer(t *testing.T, h http.Handler) *faultServer {
	t.Helper()
	return startFaultServer(t, h, (*httptest.Server).Start)
}

// startFaultServer builds a faultServer for h and starts it with start
// (Start, or StartTLS after setting EnableHTTP2).
func startFaultServer(t *testing.T, h http.Handler, start func(*httptest.Server)) *faultServer {
	t.Helper()
	s := &faultServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = s.conns.track
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	start(s.Server)
	t.Cleanup(s.Close)
	return s
}

// flaky is a test server that fails the first failures attempts of each
// logical request (told apart by the X-Request-Id header) in the way fail
// says, then answers 200 with the request body's hash.
type flaky struct {
	failures int
	fail     func(w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	attempts map[string]int
	hashes   map[string][][32]byte
}

// newFlaky serves a flaky handler from a faultServer, so that its
// connections are tracked too.
func newFlaky(t *testing.T, failures int, fail func(w http.ResponseWriter, r *http.Request)) (*flaky, *faultServer) {
	t.Helper()
	f := flakyHandler(failures, fail)
	return f, newFaultServer(t, f)
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id := r.Header.Get("X-Request-Id")
	f.mu.Lock()
	f.attempts[id]++
	n := f.attempts[id]
	f.hashes[id] = append(f.hashes[id], sha256.Sum256(body))
	f.mu.Unlock()
	if n <= f.failures {
		f.fail(w, r)
		return
	}
	w.Write([]byte("ok"))
}

func (f *flaky) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[id]
}

func (f *flaky) bodyHashes(id string) [][32]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][32]byte(nil), f.hashes[id]...)
}

// flakyHandler is the handler of newFlaky, to serve from another server.
func flakyHandler(failures int, fail func(http.ResponseWriter, *http.Request)) *flaky {
	return &flaky{failures: failures, fail: fail, attempts: map[string]int{}, hashes: map[string][][32]byte{}}
}

// expectBodies fails t unless the server saw request id exactly want
// times, each time with payload's bytes.
func (f *flaky) expectBodies(t *testing.T, id string, payload []byte, want int) {
	t.Helper()
	hashes := f.bodyHashes(id)
	if len(hashes) != want {
		t.Errorf("request %s reached the handler %d times; want %d", id, len(hashes), want)
	}
	sum := sha256.Sum256(payload)
	for i, h := range hashes {
		if h != sum {
			t.Errorf("request %s: attempt %d's body differs from the %d bytes sent", id, i+1, len(payload))
		}
	}
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		w.Write([]byte(strings.Repeat("error detail ", 100)))
	}
}

// hangUp closes the connection without a response, after reading the request.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// resetConn hijacks the connection and closes it with SO_LINGER 0, so the
// client gets a TCP RST instead of a FIN.
func resetConn(w http.ResponseWriter, _ *http.Request) {
	if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
		rst(c)
	}
}

// rst closes c abortively: the peer gets a TCP RST (ECONNRESET).
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// rawWrite hijacks the connection, writes raw as the whole response, and
// closes the connection: for responses net/http's server would refuse to
// produce (a body shorter than its Content-Length, cut headers).
func rawWrite(raw string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.WriteString(raw)
		buf.Flush()
		c.Close()
	}
}

// tcpServer is a raw TCP server on 127.0.0.1 for faults below HTTP. Each
// connection goes to serve on its own goroutine, with its 1-based number.
// When the test ends the listener and every connection are closed, and the
// goroutines are waited for, so serve must return once its connection is
// closed.
type tcpServer struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup

	mu     sync.Mutex
	live   map[net.Conn]bool
	closed bool
}

func newTCPServer(t *testing.T, serve func(c net.Conn, n int32)) *tcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	s := &tcpServer{ln: ln, live: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.acceptLoop(serve)
	t.Cleanup(s.shutdown)
	return s
}

func (s *tcpServer) acceptLoop(serve func(net.Conn, int32)) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := s.accepted.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.live[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serve(c, n)
			c.Close()
			s.mu.Lock()
			delete(s.live, c)
			s.mu.Unlock()
		}()
	}
}

func (s *tcpServer) shutdown() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.live {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *tcpServer) url(scheme string) string { return scheme + "://" + s.ln.Addr().String() + "/" }

// readHead reads an HTTP/1.1 request head from r, up to the blank line,
// and reports whether it got one.
func readHead(r *bufio.Reader) bool {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if line == "\r\n" {
			return true
		}
	}
}

// connTrace records, through an httptrace.ClientTrace on the caller's
// request, every connection asked for ("get") and obtained ("got") over all
// the attempts. An attempt can write its request only once it got one.
type connTrace struct {
	mu     sync.Mutex
	events []string
}

func (ct *connTrace) add(e string) {
	ct.mu.Lock()
	ct.events = append(ct.events, e)
	ct.mu.Unlock()
}

// attach returns req with the trace in its context.
func (ct *connTrace) attach(req *http.Request) *http.Request {
	return req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GetConn: func(string) { ct.add("get") },
		GotConn: func(httptrace.GotConnInfo) { ct.add("got") },
	}))
}

// sentOnce reports whether at most one attempt got a connection, and no
// attempt followed it: the request was written at most once.
func (ct *connTrace) sentOnce() bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	got := slices.Index(ct.events, "got")
	return got < 0 || !slices.Contains(ct.events[got+1:], "get")
}

// pooledClient is an http.Client over a fresh pooled transport, wrapped by
// wrap if it is not nil, under a retrying Transport that waits on real
// timers: for the tests where a wait must really be under way when
// something happens, or whose backoff is short anyway.
func pooledClient(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper, p policy.Policy, opts ...retrytransport.Option) *http.Client {
	t.Helper()
	pooled := cleanhttp.DefaultPooledTransport()
	t.Cleanup(pooled.CloseIdleConnections)
	var base http.RoundTripper = pooled
	if wrap != nil {
		base = wrap(pooled)
	}
	return &http.Client{Transport: retrytransport.New(base, append([]retrytransport.Option{retrytransport.WithPolicy(p)}, opts...)...)}
}

// fastBackoff keeps real waits between attempts to a few milliseconds.
var fastBackoff = backoff.FullJitter{Base: time.Millisecond, Max: 5 * time.Millisecond}

// e2eClient is pooledClient on a fake clock, so waits take no real time,
// with halfJitter for a policy without a Backoff.
func e2eClient(t *testing.T, p policy.Policy, opts ...retrytransport.Option) *http.Client {
	t.Helper()
	clock := faketime.NewAt(time.Now())
	if p.Backoff == nil {
		p.Backoff = halfJitter
	}
	return pooledClient(t, nil, p, append([]retrytransport.Option{retrytransport.WithClock(clock.Now, clock.Sleep)}, opts...)...)
}

// do sends a request with body through c, marked as logical request id
// (the X-Request-Id header a flaky server tells requests apart by).
func do(t *testing.T, c *http.Client, method, url, id string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	req.Header.Set("X-Request-Id", id)
	return c.Do(req)
}
