package retrytransport_test

// Faults of HTTP/2 servers, scripted frame by frame: streams refused or
// turned away by GOAWAY, with and without an error, past the body buffer,
// and a graceful shutdown with requests in flight.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/policy"
)

// HTTP/2 frames (RFC 9113 §6) that the scripted server reads or writes.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8

	flagEndStream  = 0x1 // DATA, HEADERS
	flagAck        = 0x1 // SETTINGS, PING
	flagEndHeaders = 0x4
	flagPadded     = 0x8

	codeNoError         = 0x0
	codeRefusedStream   = 0x7
	codeEnhanceYourCalm = 0xb
)

// h2Verdict is what the scripted server does with a request stream when
// its HEADERS frame arrives.
type h2Verdict int

const (
	h2Answer        h2Verdict = iota // read the body, record it, answer 200 "ok"
	h2Refuse                         // RST_STREAM REFUSED_STREAM: not processed
	h2GoAway                         // GOAWAY NO_ERROR naming the last answered stream
	h2GoAwayAngrily                  // the same GOAWAY with ENHANCE_YOUR_CALM
)

// h2Script is a scripted HTTP/2 server without TLS (prior knowledge),
// speaking just enough of the protocol for a net/http client: the
// preface, SETTINGS and PING acknowledgements, flow-control credit for the
// bodies it reads. verdict decides each request stream, from the number of
// the connection and of the stream on it, both from 1. A request is told
// apart by its body, which this server never decodes HPACK to find.
type h2Script struct {
	*tcpServer
	verdict func(conn int32, stream int) h2Verdict

	mu        sync.Mutex
	processed map[string]int // request body -> times answered
	refused   int            // streams refused or sent away
}

func newH2Script(t *testing.T, verdict func(conn int32, stream int) h2Verdict) *h2Script {
	t.Helper()
	s := &h2Script{verdict: verdict, processed: map[string]int{}}
	s.tcpServer = newTCPServer(t, s.serve)
	return s
}

// h2Conn is the server side of one connection.
type h2Conn struct {
	c        net.Conn
	s        *h2Script
	n        int32
	streams  int               // request streams seen
	bodies   map[uint32][]byte // streams being answered, with their body so far
	answered uint32            // the last stream answered
	away     bool              // GOAWAY sent: later streams are ignored
}

func (s *h2Script) serve(c net.Conn, n int32) {
	r := bufio.NewReader(c)
	if _, err := io.ReadFull(r, make([]byte, len(http2Preface))); err != nil {
		return
	}
	hc := &h2Conn{c: c, s: s, n: n, bodies: map[uint32][]byte{}}
	hc.write(frameSettings, 0, 0, nil)
	var head [9]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		payload := make([]byte, int(head[0])<<16|int(head[1])<<8|int(head[2]))
		if _, err := io.ReadFull(r, payload); err != nil {
			return
		}
		hc.frame(head[3], head[4], binary.BigEndian.Uint32(head[5:])&(1<<31-1), payload)
	}
}

const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// frame handles one frame from the client.
func (hc *h2Conn) frame(typ, flags byte, stream uint32, payload []byte) {
	switch typ {
	case frameSettings:
		if flags&flagAck == 0 {
			hc.write(frameSettings, flagAck, 0, nil)
		}
	case framePing:
		if flags&flagAck == 0 {
			hc.write(framePing, flagAck, 0, payload)
		}
	case frameHeaders:
		hc.headers(flags, stream)
	case frameData:
		body, open := hc.bodies[stream]
		if n := len(payload); n > 0 {
			hc.credit(0, n)
			if open && flags&flagEndStream == 0 {
				hc.credit(stream, n)
			}
		}
		if !open {
			return
		}
		if flags&flagPadded != 0 && len(payload) > 0 {
			payload = payload[1 : len(payload)-int(payload[0])]
		}
		hc.bodies[stream] = append(body, payload...)
		if flags&flagEndStream != 0 {
			hc.answer(stream)
		}
	}
}

func (hc *h2Conn) headers(flags byte, stream uint32) {
	if hc.away {
		return
	}
	hc.streams++
	v := hc.s.verdict(hc.n, hc.streams)
	if v != h2Answer {
		hc.s.mu.Lock()
		hc.s.refused++
		hc.s.mu.Unlock()
	}
	switch v {
	case h2Refuse:
		hc.write(frameRSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, codeRefusedStream))
	case h2GoAway, h2GoAwayAngrily:
		code := uint32(codeNoError)
		if v == h2GoAwayAngrily {
			code = codeEnhanceYourCalm
		}
		hc.away = true
		hc.write(frameGoAway, 0, 0, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, hc.answered), code))
	default:
		hc.bodies[stream] = nil
		if flags&flagEndStream != 0 {
			hc.answer(stream)
		}
	}
}

// answer records the request of stream as processed and answers 200 "ok":
// HEADERS with :status 200 (HPACK static table index 8), then DATA.
func (hc *h2Conn) answer(stream uint32) {
	hc.s.mu.Lock()
	hc.s.processed[string(hc.bodies[stream])]++
	hc.s.mu.Unlock()
	delete(hc.bodies, stream)
	hc.answered = stream
	hc.write(frameHeaders, flagEndHeaders, stream, []byte{0x88})
	hc.write(frameData, flagEndStream, stream, []byte("ok"))
}

// credit sends a WINDOW_UPDATE of n bytes for stream (0: the connection).
func (hc *h2Conn) credit(stream uint32, n int) {
	hc.write(frameWindowUpdate, 0, stream, binary.BigEndian.AppendUint32(nil, uint32(n)))
}

func (hc *h2Conn) write(typ, flags byte, stream uint32, payload []byte) {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags}
	b = binary.BigEndian.AppendUint32(b, stream)
	hc.c.Write(append(b, payload...))
}

// times returns how often the request with body was answered.
func (s *h2Script) times(body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.processed[body]
}

func (s *h2Script) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// h2cClient is a pooledClient that speaks HTTP/2 without TLS to http://
// URLs, with prior knowledge.
func h2cClient(t *testing.T, p policy.Policy) *http.Client {
	t.Helper()
	return pooledClient(t, func(rt http.RoundTripper) http.RoundTripper {
		tr := rt.(*http.Transport)
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		return tr
	}, p)
}

// h2Body is a kind of request the HTTP/2 tests send: a method, a body
// with or without GetBody, and how many bytes the body has beyond the
// request's name.
type h2Body struct {
	name   string
	method string
	body   func(s string) io.Reader
	extra  int
}

// h2Bodies are the request kinds of h2Send.
var h2Bodies = []h2Body{
	{"PostGetBody", "POST", func(s string) io.Reader { return strings.NewReader(s) }, 0},
	{"PostRecorded", "POST", func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }, 0},
	{"PatchRecorded", "PATCH", func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }, 0},
	{"PutRecorded", "PUT", func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }, 0},
	{"PostLargeRecorded", "POST", func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }, 200 << 10},
	{"PostLargeGetBody", "POST", func(s string) io.Reader { return strings.NewReader(s) }, 200 << 10},
}

// h2Send sends, one after another, a request of each kind, and checks
// that each was answered 200 "ok" and processed exactly once, with its
// whole body, and that the server's verdicts did turn some away.
func h2Send(t *testing.T, srv *h2Script, c *http.Client, kinds []h2Body) {
	t.Helper()
	sent := map[string]bool{}
	for i, b := range kinds {
		body := fmt.Sprintf("request %d %s", i, b.name) + strings.Repeat(".", b.extra)
		sent[body] = true
		resp, err := do(t, c, b.method, srv.url("http"), b.name, b.body(body))
		if err != nil {
			t.Errorf("%s %s: %v", b.method, b.name, err)
			continue
		}
		if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" || resp.ProtoMajor != 2 {
			t.Errorf("%s %s = %s %d %q; want HTTP/2 200 ok", b.method, b.name, resp.Proto, resp.StatusCode, got)
		}
		if n := srv.times(body); n != 1 {
			t.Errorf("%s %s: processed %d times; want exactly 1", b.method, b.name, n)
		}
	}
	if srv.refusals() == 0 {
		t.Errorf("the server turned no stream away; the test tests nothing")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for body := range srv.processed {
		if !sent[body] {
			t.Errorf("the server processed a %d-byte body that was never sent: a cut or mixed body", len(body))
		}
	}
}

// TestFaultH2StreamsTurnedAwayDeliverOnce: servers that turn streams away
// in the ways RFC 9113 says mean "not processed": REFUSED_STREAM (§8.7) on
// every other stream, or a GOAWAY (§6.8) naming a lower last stream, on the
// first stream of every other connection or after one answered stream per
// connection (as servers with a per-connection request limit do). Every
// request, a POST included, is sent again and processed exactly once with
// its whole body.
func TestFaultH2StreamsTurnedAwayDeliverOnce(t *testing.T) {
	for _, tt := range []struct {
		name    string
		verdict func(conn int32, stream int) h2Verdict
	}{
		{"RefusedStream", func(_ int32, stream int) h2Verdict { return cond(stream%2 == 1, h2Refuse) }},
		{"GoAwayBeforeStream", func(conn int32, stream int) h2Verdict { return cond(conn%2 == 1 && stream == 1, h2GoAway) }},
		{"GoAwayAfterEachStream", func(_ int32, stream int) h2Verdict { return cond(stream > 1, h2GoAway) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			h2Send(t, newH2Script(t, tt.verdict), h2cClient(t, policy.Policy{Backoff: fastBackoff}), h2Bodies)
		})
	}
}

// cond returns v if turnAway is true, and h2Answer otherwise.
func cond(turnAway bool, v h2Verdict) h2Verdict {
	if turnAway {
		return v
	}
	return h2Answer
}

// TestFaultH2GoAwayWithErrorBeforeStream: a GOAWAY with ENHANCE_YOUR_CALM
// whose last stream is 0, on the first stream of a connection. net/http
// does not send that stream again itself (it expects the server to go on
// refusing), so the transport sees the error: it sends an idempotent
// request again, which is processed once.
func TestFaultH2GoAwayWithErrorBeforeStream(t *testing.T) {
	sendAfterAngryGoAway(t, false)
}

// TestFaultH2GoAwayWithErrorBeforeStreamPost: the GOAWAY of
// TestFaultH2GoAwayWithErrorBeforeStream proves, whatever its error code,
// that the stream was not processed (RFC 9113 §6.8: streams above the last
// stream identifier "can be retried"), and DESIGN counts an unprocessed
// GOAWAY as proof that the request was never sent: a POST may be sent
// again, and is processed exactly once.
func TestFaultH2GoAwayWithErrorBeforeStreamPost(t *testing.T) {
	sendAfterAngryGoAway(t, true)
}

// sendAfterAngryGoAway sends each kind of request whose method is
// non-idempotent or not, as nonIdempotent says, to a fresh server that
// sends the first stream of its first connection away with an
// ENHANCE_YOUR_CALM GOAWAY, and checks it is processed once.
func sendAfterAngryGoAway(t *testing.T, nonIdempotent bool) {
	for _, b := range h2Bodies {
		if (b.method == "POST" || b.method == "PATCH") != nonIdempotent {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			noLeaks(t)
			srv := newH2Script(t, func(conn int32, stream int) h2Verdict { return cond(conn == 1 && stream == 1, h2GoAwayAngrily) })
			h2Send(t, srv, h2cClient(t, policy.Policy{Backoff: fastBackoff}), []h2Body{b})
		})
	}
}

// TestFaultH2RefusedEveryStream: a server that refuses every stream never
// processes anything; the caller's deadline ends the request with an error
// wrapping context.DeadlineExceeded, promptly.
func TestFaultH2RefusedEveryStream(t *testing.T) {
	noLeaks(t)
	srv := newH2Script(t, func(int32, int) h2Verdict { return h2Refuse })
	c := h2cClient(t, policy.Policy{Backoff: fastBackoff})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.url("http"), strings.NewReader("charge $10"))
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST to a server refusing every stream = %d; want an error", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("POST to a server refusing every stream: error = %v; want it to wrap context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > leakBound {
		t.Errorf("POST to a server refusing every stream returned after %v; want soon after the 300ms deadline", elapsed)
	}
	if n := srv.times("charge $10"); n != 0 || srv.refusals() == 0 {
		t.Errorf("POST to a server refusing every stream: processed %d times after %d refusals; want 0 and some", n, srv.refusals())
	}
}

// TestFaultH2RefusedPastBodyBuffer: a refused POST whose body (without
// GetBody) is longer than MaxBodyBuffer may have lost bytes the recorder
// could not keep. It is then not sent again; if it was (the refusal came
// before the body was read past the buffer), it is processed once, whole.
// Never twice, never cut.
func TestFaultH2RefusedPastBodyBuffer(t *testing.T) {
	noLeaks(t)
	srv := newH2Script(t, func(_ int32, stream int) h2Verdict {
		if stream == 1 {
			return h2Refuse
		}
		return h2Answer
	})
	c := h2cClient(t, policy.Policy{Backoff: fastBackoff, MaxBodyBuffer: 1 << 10})
	payload := strings.Repeat("x", 256<<10)
	resp, err := do(t, c, "POST", srv.url("http"), "big", io.MultiReader(strings.NewReader(payload)))
	n := srv.times(payload)
	switch {
	case err != nil && n != 0:
		t.Errorf("refused POST past MaxBodyBuffer failed (%v) but was processed %d times; want 0", err, n)
	case err == nil && n != 1:
		t.Errorf("refused POST past MaxBodyBuffer succeeded but was processed %d times; want 1", n)
	}
	if resp != nil {
		resp.Body.Close()
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for body, times := range srv.processed {
		if body != payload {
			t.Errorf("the server processed a %d-byte body (%d times); want only the whole %d bytes", len(body), times, len(payload))
		}
	}
}

// TestFaultH2GracefulShutdownInFlight: a real HTTP/2 server over TLS shuts
// down gracefully (GOAWAY) while requests are in flight, and more are sent
// as it does. The requests it had accepted finish with 200, each processed
// exactly once with its whole body; later ones either fail without having
// been processed or, if they got in before the GOAWAY, succeed once; every
// connection is closed in the end.
func TestFaultH2GracefulShutdownInFlight(t *testing.T) {
	noLeaks(t)
	const inFlight, late = 6, 6
	entered := make(chan struct{}, inFlight+late)
	release, open := onceCloser()
	f := flakyHandler(1, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Request-Id") != "warm-up" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})
	srv := startFaultServer(t, f, func(s *httptest.Server) {
		s.EnableHTTP2 = true
		s.StartTLS()
	})
	t.Cleanup(open) // before srv.Close, which waits for the handlers
	shutdownStarted, started := onceCloser()
	srv.Config.RegisterOnShutdown(started)
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig
	c := pooledClient(t, func(rt http.RoundTripper) http.RoundTripper {
		rt.(*http.Transport).TLSClientConfig = trusted.Clone()
		return rt
	}, policy.Policy{Backoff: fastBackoff})

	type result struct {
		late bool
		id   string
		body []byte
		err  error
	}
	results := make(chan result, inFlight+late)
	send := func(i int) {
		id := fmt.Sprintf("r%d", i)
		payload := bytes.Repeat([]byte(id), 10_000)
		var body io.Reader = bytes.NewReader(payload)
		if i%2 == 1 {
			body = io.MultiReader(body) // recorded, no GetBody
		}
		resp, err := do(t, c, []string{"POST", "PUT", "PATCH"}[i%3], srv.URL, id, body)
		if err == nil {
			if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" || resp.ProtoMajor != 2 {
				err = fmt.Errorf("got %s %d %q; want HTTP/2 200 ok", resp.Proto, resp.StatusCode, got)
			}
		}
		results <- result{i >= inFlight, id, payload, err}
	}
	// One connection first, so that the requests in flight share it rather
	// than race to dial their own, which a graceful shutdown may then wait
	// on (a server-side HTTP/2 connection that never carried a stream).
	resp, err := do(t, c, "GET", srv.URL, "warm-up", nil)
	if err != nil {
		t.Fatalf("GET to warm up: %v", err)
	}
	resp.Body.Close()
	for i := range inFlight {
		go send(i)
	}
	for range inFlight {
		select {
		case <-entered:
		case <-time.After(leakBound):
			t.Fatalf("the in-flight requests never reached the handler")
		}
	}
	shutdownDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leakBound)
		defer cancel()
		shutdownDone <- srv.Config.Shutdown(ctx)
	}()
	<-shutdownStarted
	for i := inFlight; i < inFlight+late; i++ {
		go send(i)
	}
	time.Sleep(20 * time.Millisecond) // let the late requests meet the GOAWAY
	open()
	for range inFlight + late {
		r := <-results
		switch n := f.count(r.id); {
		case !r.late && r.err != nil, r.err == nil && n != 1:
			t.Errorf("request %s: error %v, processed %d times; want 200 and once", r.id, r.err, n)
		case r.err != nil && n != 0:
			t.Errorf("request %s failed (%v) but was processed %d times; want 0", r.id, r.err, n)
		}
		if r.err == nil {
			f.expectBodies(t, r.id, r.body, 1)
		}
	}
	if err := <-shutdownDone; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if got := srv.conns.accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections; want 1, shared by every request", got)
	}
	srv.conns.expectAllClosed(t, c)
}
