package retrytransport_test

// Faults at the connection: resets before, after and during the request,
// and responses cut short, to GETs and POSTs. Each test checks, besides
// its own point, that no non-idempotent request reaches the handler twice,
// that bodies arrive byte for byte, and that no goroutine or connection
// outlives it.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

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
				f, srv := newFlaky(t, 1, resetConn)
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
			f, srv := newFlaky(t, 1, rawWrite(tt.raw))
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
