package otelretry_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// rawServer is an HTTP/1.1 server on 127.0.0.1 that scripts what each
// connection does with each request. serve is called for every request
// read, with the connection's number and the request's number on it (both
// from 1); it either writes an answer and reports true (keep the
// connection), or reports false, and the connection is closed without an
// answer.
type rawServer struct {
	*rawListener
	serve func(conn, req int, w io.Writer) bool

	mu       sync.Mutex
	requests int // requests read, on every connection
}

func newRawServer(t *testing.T, serve func(conn, req int, w io.Writer) bool) *rawServer {
	t.Helper()
	s := &rawServer{serve: serve}
	s.rawListener = listenRaw(t, s.handle)
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

// handle reads the requests of connection n, one after the other, and
// hands each to serve.
func (s *rawServer) handle(c net.Conn, n int) {
	br := bufio.NewReader(c)
	for i := 1; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		if !s.serve(n, i, c) {
			return
		}
	}
}

func (s *rawServer) counts() (conns, requests int) {
	s.rawListener.mu.Lock()
	conns = s.conns
	s.rawListener.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return conns, s.requests
}

// rawListener accepts connections on 127.0.0.1 and runs serve on each,
// with the connection's number (from 1); on close it closes them all and
// waits for their goroutines.
type rawListener struct {
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]bool
	conns  int
	closed bool
}

func listenRaw(t *testing.T, serve func(c net.Conn, n int)) *rawListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	l := &rawListener{ln: ln, open: map[net.Conn]bool{}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			if l.closed {
				l.mu.Unlock()
				c.Close()
				return
			}
			l.conns++
			n := l.conns
			l.open[c] = true
			l.wg.Add(1)
			l.mu.Unlock()
			go func() {
				defer l.wg.Done()
				serve(c, n)
				c.Close()
				l.mu.Lock()
				delete(l.open, c)
				l.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(l.close)
	return l
}

func (l *rawListener) close() {
	l.mu.Lock()
	l.closed = true
	for c := range l.open {
		c.Close()
	}
	l.mu.Unlock()
	l.ln.Close()
	l.wg.Wait()
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestTransportResendIsVisible: net/http's Transport silently sends a GET
// again on a new connection when the kept-alive connection it reused is
// closed by the server after reading the request. That is one attempt for
// the retrying transport, so one CLIENT span, but the span says the
// request went out twice, and the metrics still count one attempt.
func TestTransportResendIsVisible(t *testing.T) {
	// The first connection answers its first request and keeps alive,
	// then reads the second request and hangs up without an answer, which
	// the client sees as the reused connection's EOF before any byte of a
	// response: net/http's shouldRetryRequest resends a replayable request
	// then. Every other connection answers everything.
	hungUp := make(chan struct{})
	srv := newRawServer(t, func(conn, req int, w io.Writer) bool {
		if conn == 1 && req == 2 {
			close(hungUp)
			return false
		}
		io.WriteString(w, okAnswer)
		return true
	})
	r := newRig(t, policy.Standard())

	first, status, err := r.call(t, context.Background(), "GET", srv.url()+"/first")
	if err != nil || status != 200 {
		t.Fatalf("first GET = %d, %v; want 200", status, err)
	}
	select {
	case <-hungUp:
		t.Fatal("the server hung up on the first request already")
	default:
	}
	second, status, err := r.call(t, context.Background(), "GET", srv.url()+"/second")
	if err != nil || status != 200 {
		t.Fatalf("second GET = %d, %v; want 200 from net/http's own resend", status, err)
	}
	select {
	case <-hungUp:
	default:
		t.Fatal("the second GET did not reuse the first connection: the scenario did not happen")
	}
	conns, requests := srv.counts()
	if conns != 2 || requests != 3 {
		t.Fatalf("server: %d connections, %d requests; want 2 and 3 (the second GET sent twice)", conns, requests)
	}

	var firstSpans, secondSpans []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		switch s.Parent().SpanID() {
		case first.SpanContext().SpanID():
			firstSpans = append(firstSpans, s)
		case second.SpanContext().SpanID():
			secondSpans = append(secondSpans, s)
		}
	}
	if len(firstSpans) != 1 || len(secondSpans) != 1 {
		t.Fatalf("%d and %d attempt spans; want one attempt each", len(firstSpans), len(secondSpans))
	}
	want := spanView{Kind: trace.SpanKindClient, Parent: second.SpanContext().SpanID(), Status: "200"}
	if diff := cmp.Diff(want, viewOf(secondSpans[0])); diff != "" {
		t.Errorf("the second GET's span (-want +got):\n%s", diff)
	}
	wantEvents := []eventView{{"retrytransport.transport_resend", map[string]string{"retrytransport.transport_resends": "1"}}}
	if diff := cmp.Diff(wantEvents, eventsOf(secondSpans[0])); diff != "" {
		t.Errorf("the second GET's span events (-want +got):\n%s", diff)
	}
	if got := attrsOf(secondSpans[0].Attributes())["retrytransport.transport_resends"]; got != "1" {
		t.Errorf("retrytransport.transport_resends = %q; want 1", got)
	}
	if ev := eventsOf(firstSpans[0]); len(ev) != 0 {
		t.Errorf("the first GET, sent once, has span events %v", ev)
	}
	if got, ok := attrsOf(firstSpans[0].Attributes())["retrytransport.transport_resends"]; ok {
		t.Errorf("the first GET, sent once, has retrytransport.transport_resends = %s", got)
	}

	host, port := hostPort(t, srv.url())
	attrs := reqAttrs(host, port, "GET", "success", "")
	m := r.collect(t)
	if diff := cmp.Diff([]histogram{{attrs, 2, 2}}, histograms[int64](t, m["retrytransport.request.attempts"])); diff != "" {
		t.Errorf("attempts histogram: two requests of one attempt each (-want +got):\n%s", diff)
	}
	if a, ok := m["retrytransport.request.retries"]; ok && len(histograms[int64](t, a)) > 0 {
		t.Errorf("net/http's resend counted as a retry: %v", histograms[int64](t, a))
	}
}

// h2Server is an HTTP/2 server without TLS (prior knowledge) on
// 127.0.0.1 that speaks just enough of RFC 9113 for net/http's client:
// it acknowledges SETTINGS and PING, refuses the first request stream of
// the first connection with RST_STREAM REFUSED_STREAM (the server did not
// process it, so the client may send it again), and answers every other
// request stream with an empty 200. It never decodes a request's header
// block.
type h2Server struct {
	*rawListener
	mu      sync.Mutex
	streams int // request streams seen, on every connection
	refused int
}

// HTTP/2 frame types and flags the h2Server uses.
const (
	h2Headers   = 0x1
	h2RSTStream = 0x3
	h2Settings  = 0x4
	h2Ping      = 0x6
	h2GoAway    = 0x7

	h2Ack        = 0x1
	h2EndStream  = 0x1
	h2EndHeaders = 0x4

	h2RefusedStream = 0x7
)

func newH2Server(t *testing.T) *h2Server {
	s := &h2Server{}
	s.rawListener = listenRaw(t, s.serve)
	return s
}

func (s *h2Server) serve(c net.Conn, n int) {
	br := bufio.NewReader(c)
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" {
		return
	}
	write := func(typ, flags byte, stream uint32, payload []byte) error {
		h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags,
			byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
		_, err := c.Write(append(h, payload...))
		return err
	}
	if write(h2Settings, 0, 0, nil) != nil {
		return
	}
	hdr := make([]byte, 9)
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			return
		}
		length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags := hdr[3], hdr[4]
		stream := (uint32(hdr[5])<<24 | uint32(hdr[6])<<16 | uint32(hdr[7])<<8 | uint32(hdr[8])) & 0x7fffffff
		payload := make([]byte, length)
		if _, err := io.ReadFull(br, payload); err != nil {
			return
		}
		var err error
		switch typ {
		case h2Settings:
			if flags&h2Ack == 0 {
				err = write(h2Settings, h2Ack, 0, nil)
			}
		case h2Ping:
			if flags&h2Ack == 0 {
				err = write(h2Ping, h2Ack, 0, payload)
			}
		case h2GoAway:
			return
		case h2Headers:
			s.mu.Lock()
			s.streams++
			refuse := n == 1 && s.refused == 0
			if refuse {
				s.refused++
			}
			s.mu.Unlock()
			if refuse {
				err = write(h2RSTStream, 0, stream, []byte{0, 0, 0, h2RefusedStream})
			} else {
				// 0x88: HPACK's static table entry 8, ":status: 200".
				err = write(h2Headers, h2EndHeaders|h2EndStream, stream, []byte{0x88})
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *h2Server) counts() (streams, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams, s.refused
}

// TestTransportResendH2RefusedStream: net/http's HTTP/2 client sends a
// request again, on its own, when the server refused its stream. That is
// one attempt for the retrying transport, and its span says the request
// went out twice.
func TestTransportResendH2RefusedStream(t *testing.T) {
	srv := newH2Server(t)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	base := &http.Transport{Protocols: &protocols}
	t.Cleanup(base.CloseIdleConnections)
	r := newRigOver(t, base, policy.Standard())

	caller, status, err := r.call(t, context.Background(), "GET", "http://"+srv.ln.Addr().String()+"/")
	if err != nil || status != 200 {
		t.Fatalf("GET = %d, %v; want 200 from net/http's own resend", status, err)
	}
	// Two streams, which only HTTP/2 has: the request went out twice.
	if streams, refused := srv.counts(); streams != 2 || refused != 1 {
		t.Fatalf("server saw %d streams, refused %d; want 2 and 1", streams, refused)
	}
	_, attempts := r.ended(t)
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans; want 1", len(attempts))
	}
	want := spanView{Kind: trace.SpanKindClient, Parent: caller.SpanContext().SpanID(), Status: "200"}
	if diff := cmp.Diff(want, viewOf(attempts[0])); diff != "" {
		t.Errorf("the attempt's span (-want +got):\n%s", diff)
	}
	wantEvents := []eventView{{"retrytransport.transport_resend", map[string]string{"retrytransport.transport_resends": "1"}}}
	if diff := cmp.Diff(wantEvents, eventsOf(attempts[0])); diff != "" {
		t.Errorf("the attempt's span events (-want +got):\n%s", diff)
	}
	if got := attrsOf(attempts[0].Attributes())["retrytransport.transport_resends"]; got != "1" {
		t.Errorf("retrytransport.transport_resends = %q; want 1", got)
	}
}
