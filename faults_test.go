package retrytransport_test

// Fault injection (issue 5.3): servers that misbehave below and above HTTP,
// on loopback only. Every test here checks, besides its own point, that no
// non-idempotent request reaches the handler twice, that bodies arrive
// byte for byte, and that no goroutine or connection outlives it. The
// helpers for those checks are in this file; the faults themselves are
// grouped by kind in faults_*_test.go and soak_test.go.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
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

// newTrackedFlaky serves a flaky handler (see newFlaky) from a faultServer,
// so that its connections are tracked too.
func newTrackedFlaky(t *testing.T, failures int, fail func(http.ResponseWriter, *http.Request)) (*flaky, *faultServer) {
	t.Helper()
	f := flakyHandler(failures, fail)
	return f, newFaultServer(t, f)
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

// TestFaultResetBeforeRequestRead: a server that accepts and at once closes
// the connection, without reading a byte. A GET is sent again on a new
// connection each time. A POST or PATCH may be sent again only if the
// transport can prove the attempt wrote nothing: the connect itself failed
// (Linux reports a reset that beats the connect's completion as a dial
// error, although the server accepted the connection). Once an attempt had
// a connection to write on, there is no other.
func TestFaultResetBeforeRequestRead(t *testing.T) {
	closers := []struct {
		name  string
		close func(net.Conn)
	}{
		{"RST", rst},
		{"FIN", func(c net.Conn) { c.Close() }},
	}
	for _, cl := range closers {
		for _, method := range []string{"GET", "PUT", "POST", "PATCH"} {
			t.Run(cl.name+"_"+method, func(t *testing.T) {
				noLeaks(t)
				srv := newTCPServer(t, func(c net.Conn, _ int32) { cl.close(c) })
				c := e2eClient(t, policy.Standard())
				var body io.Reader
				if method != "GET" {
					body = strings.NewReader("charge $10")
				}
				req, err := http.NewRequest(method, srv.url("http"), body)
				if err != nil {
					t.Fatalf("http.NewRequest: %v", err)
				}
				var trace connTrace
				resp, err := c.Do(trace.attach(req))
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s to a server that closes at once = %d; want an error", method, resp.StatusCode)
				}
				var re *retrytransport.RetryError
				if !errors.As(err, &re) {
					t.Fatalf("%s to a server that closes at once: error = %v; want a *RetryError", method, err)
				}
				if got := srv.accepted.Load(); int(got) != re.Attempts {
					t.Errorf("%s to a server that closes at once: %d connections for %d attempts; want one each", method, got, re.Attempts)
				}
				switch idempotent := method == "GET" || method == "PUT"; {
				case idempotent && (re.Attempts != 3 || !errors.Is(err, retrytransport.ErrExhausted)):
					t.Errorf("%s to a server that closes at once: error = %v; want ErrExhausted after 3 attempts", method, err)
				case !idempotent && !trace.sentOnce():
					t.Errorf("%s to a server that closes at once: connections %v; want no attempt after one that got a connection", method, trace.events)
				}
			})
		}
	}
}

// TestFaultResetThenServed: the first connection is reset before the
// request is read, the second is answered; a GET gets the answer.
func TestFaultResetThenServed(t *testing.T) {
	noLeaks(t)
	srv := newTCPServer(t, func(c net.Conn, n int32) {
		if n == 1 {
			rst(c)
			return
		}
		if readHead(bufio.NewReader(c)) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		}
	})
	c := e2eClient(t, policy.Standard())
	resp, err := do(t, c, "GET", srv.url("http"), "r", nil)
	if err != nil {
		t.Fatalf("GET after one reset connection: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
		t.Errorf("GET after one reset connection = %d %q; want 200 ok", resp.StatusCode, got)
	}
	if got := srv.accepted.Load(); got != 2 {
		t.Errorf("server accepted %d connections; want 2", got)
	}
}

// TestFaultResetAfterRequestRead: the handler reads the whole request, then
// resets the connection. The server may have acted, so a POST or PATCH
// reaches the handler exactly once and the caller gets the error; GET, PUT
// and DELETE are sent again, with the identical body, and succeed.
func TestFaultResetAfterRequestRead(t *testing.T) {
	payload := bytes.Repeat([]byte("payload-"), 8<<10) // 64 KiB
	bodies := []struct {
		name string
		body func() io.Reader
	}{
		{"GetBody", func() io.Reader { return bytes.NewReader(payload) }},
		{"Recorded", func() io.Reader { return io.MultiReader(bytes.NewReader(payload)) }},
	}
	for _, b := range bodies {
		for _, tt := range []struct {
			method string
			want   int // times the handler sees the request
		}{{"PUT", 2}, {"DELETE", 2}, {"POST", 1}, {"PATCH", 1}} {
			t.Run(b.name+"_"+tt.method, func(t *testing.T) {
				noLeaks(t)
				f, srv := newTrackedFlaky(t, 1, resetConn)
				c := e2eClient(t, policy.Standard())
				resp, err := do(t, c, tt.method, srv.URL, "r", b.body())
				switch {
				case tt.want == 1 && !errors.Is(err, retrytransport.ErrNotRetryable):
					t.Errorf("%s reset after it was read: error = %v; want ErrNotRetryable", tt.method, err)
				case tt.want > 1 && err != nil:
					t.Errorf("%s reset after it was read: %v; want it sent again and answered", tt.method, err)
				}
				if resp != nil {
					if got := readBody(t, resp); got != "ok" {
						t.Errorf("%s reset after it was read: body %q; want ok", tt.method, got)
					}
				}
				f.expectBodies(t, "r", payload, tt.want)
				srv.conns.expectAllClosed(t, c)
			})
		}
	}
}

// TestFaultResetDuringUpload: the server reads the request head, then
// resets while the body, larger than the socket buffers, is still being
// sent. Whether any of it arrived is unknowable, so a POST is not sent
// again; a PUT is, on a new connection each time, its body rewound with
// GetBody or replayed by the recorder from its start.
func TestFaultResetDuringUpload(t *testing.T) {
	payload := bytes.Repeat([]byte("z"), 4<<20)
	p := policy.Policy{MaxBodyBuffer: 8 << 20}
	for _, tt := range []struct {
		name   string
		method string
		body   func() io.Reader
		conns  int32
	}{
		{"PostGetBody", "POST", func() io.Reader { return bytes.NewReader(payload) }, 1},
		{"PostRecorded", "POST", func() io.Reader { return io.MultiReader(bytes.NewReader(payload)) }, 1},
		{"PutGetBody", "PUT", func() io.Reader { return bytes.NewReader(payload) }, 3},
		{"PutRecorded", "PUT", func() io.Reader { return io.MultiReader(bytes.NewReader(payload)) }, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			srv := newTCPServer(t, func(c net.Conn, _ int32) {
				if readHead(bufio.NewReader(c)) {
					rst(c)
				}
			})
			c := e2eClient(t, p)
			resp, err := do(t, c, tt.method, srv.url("http"), "r", tt.body())
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s reset during upload = %d; want an error", tt.method, resp.StatusCode)
			}
			if got := srv.accepted.Load(); got != tt.conns {
				t.Errorf("%s reset during upload: %d connections (error %v); want %d", tt.method, got, err, tt.conns)
			}
		})
	}
}

// TestFaultTruncatedResponses: responses cut short. A truncated success is
// the caller's (the body read fails with io.ErrUnexpectedEOF after exactly
// the bytes sent); a truncated failure is drained as far as it goes and the
// request sent again; headers cut short are a transport error, retried for
// a GET and not for a POST.
func TestFaultTruncatedResponses(t *testing.T) {
	const part = "0123456789"
	tests := []struct {
		name    string
		method  string
		raw     string
		want    int    // times the handler sees the request
		status  int    // status the caller gets; 0 for an error
		body    string // what reading the body yields before failing
		readErr error  // the error reading the body ends with; nil for a clean EOF
	}{
		{"SuccessShortOfContentLength", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + part, 1, 200, part, io.ErrUnexpectedEOF},
		{"SuccessChunkedCutMidChunk", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n" + part, 1, 200, part, io.ErrUnexpectedEOF},
		{"FailureShortOfContentLength", "GET", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100000\r\n\r\n" + part, 2, 200, "ok", nil},
		{"FailureChunkedCutMidChunk", "PUT", "HTTP/1.1 502 Bad Gateway\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n" + part, 2, 200, "ok", nil},
		{"ThrottleShortOfContentLength", "POST", "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5000\r\n\r\n" + part, 2, 200, "ok", nil},
		{"HeadersCutGet", "GET", "HTTP/1.1 200 OK\r\nContent-Le", 2, 200, "ok", nil},
		{"HeadersCutPost", "POST", "HTTP/1.1 200 OK\r\nContent-Le", 1, 0, "", nil},
		{"StatusLineOnlyPost", "POST", "HTTP/1.1 2", 1, 0, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			f, srv := newTrackedFlaky(t, 1, rawWrite(tt.raw))
			c := e2eClient(t, policy.Standard())
			resp, err := do(t, c, tt.method, srv.URL, "r", strings.NewReader("payload"))
			if tt.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s %s = %d; want an error", tt.method, tt.name, resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatalf("%s %s: %v; want status %d", tt.method, tt.name, err, tt.status)
				}
				got, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status || string(got) != tt.body || !errors.Is(rerr, tt.readErr) || (tt.readErr == nil && rerr != nil) {
					t.Errorf("%s %s = %d, body %q, read error %v; want %d, %q, %v", tt.method, tt.name, resp.StatusCode, got, rerr, tt.status, tt.body, tt.readErr)
				}
			}
			f.expectBodies(t, "r", []byte("payload"), tt.want)
			srv.conns.expectAllClosed(t, c)
		})
	}
}
