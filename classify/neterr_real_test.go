package classify_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

// The tests in this file classify errors that net/http itself returns.

func TestErrorOfRealRefusedConnectionIsUnprocessed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen failed: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("payload"))
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Skipf("RoundTrip to closed port %s succeeded; something else listens there", addr)
	}
	got := classify.Error(req, err)
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

func TestErrorOfRealUntrustedCertificateIsFatal(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is expected
	srv.StartTLS()
	defer srv.Close()
	tr := &http.Transport{} // does not trust the test server's certificate
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("GET", srv.URL, nil)
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip(%s) with an untrusted certificate succeeded; want an error", srv.URL)
	}
	got := classify.Error(req, err)
	if diff := cmp.Diff(fatal, got, ignoreReason); diff != "" {
		t.Errorf("Error(GET, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

// HTTP/2 frame types and error codes (RFC 9113) for the scripted server.
const (
	h2FrameHeaders   = 0x1
	h2FrameRSTStream = 0x3
	h2FrameSettings  = 0x4
	h2FrameGoAway    = 0x7

	h2FlagAck        = 0x1
	h2FlagEndHeaders = 0x4

	h2InternalError = 0x2
	h2RefusedStream = 0x7
)

// h2Server is a scripted HTTP/2 server without TLS (prior knowledge). For
// each request stream it calls onHeaders, which writes what the test wants.
type h2Server struct {
	t         *testing.T
	ln        net.Listener
	onHeaders func(w *h2Writer, stream uint32)
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

// h2Writer writes frames to one connection.
type h2Writer struct{ c net.Conn }

func (w *h2Writer) frame(typ, flags byte, stream uint32, payload []byte) {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	w.c.Write(append(h[:], payload...))
}

// status200 sends response headers ":status: 200" (HPACK static index 8).
func (w *h2Writer) status200(stream uint32) {
	w.frame(h2FrameHeaders, h2FlagEndHeaders, stream, []byte{0x88})
}

func (w *h2Writer) rstStream(stream, code uint32) {
	w.frame(h2FrameRSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, code))
}

func (w *h2Writer) goAway(lastStream, code uint32) {
	p := binary.BigEndian.AppendUint32(nil, lastStream)
	w.frame(h2FrameGoAway, 0, 0, binary.BigEndian.AppendUint32(p, code))
}

func newH2Server(t *testing.T, onHeaders func(w *h2Writer, stream uint32)) *h2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen failed: %v", err)
	}
	s := &h2Server{t: t, ln: ln, onHeaders: onHeaders}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *h2Server) url() string { return "http://" + s.ln.Addr().String() + "/" }

func (s *h2Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *h2Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(r, preface); err != nil {
		return
	}
	w := &h2Writer{c: c}
	w.frame(h2FrameSettings, 0, 0, nil)
	for {
		var h [9]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return
		}
		typ, flags, stream := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
		switch {
		case typ == h2FrameSettings && flags&h2FlagAck == 0:
			w.frame(h2FrameSettings, h2FlagAck, 0, nil)
		case typ == h2FrameHeaders:
			s.onHeaders(w, stream)
		}
	}
}

func (s *h2Server) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// h2cTransport returns a Transport that speaks HTTP/2 without TLS.
func h2cTransport(t *testing.T) *http.Transport {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// onlyReader hides every method but Read, so that http.NewRequest sets no
// GetBody and net/http cannot replay the body.
type onlyReader struct{ io.Reader }

// A real net/http HTTP/2 stream error: the server sends response headers,
// then resets the stream with the given code. net/http returns its
// unexported StreamError from the body read.
func realStreamError(t *testing.T, code uint32) error {
	t.Helper()
	gotResp := make(chan struct{})
	srv := newH2Server(t, func(w *h2Writer, stream uint32) {
		w.status200(stream)
		<-gotResp
		w.rstStream(stream, code)
	})
	tr := h2cTransport(t)
	req, err := http.NewRequest("GET", srv.url(), nil)
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp, err := tr.RoundTrip(req)
	close(gotResp)
	if err != nil {
		t.Fatalf("RoundTrip(%s) error = %v; want the response headers", srv.url(), err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("RoundTrip(%s) used %s; want HTTP/2", srv.url(), resp.Proto)
	}
	_, err = io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("reading a body reset with code %d succeeded; want a stream error", code)
	}
	return err
}

func TestErrorOfRealHTTP2RefusedStreamIsUnprocessed(t *testing.T) {
	err := realStreamError(t, h2RefusedStream)
	if !strings.Contains(err.Error(), "REFUSED_STREAM") {
		t.Fatalf("stream reset with REFUSED_STREAM gave error %q; want it to name REFUSED_STREAM", err)
	}
	got := classify.Error(newReq(t, "POST"), err)
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

func TestErrorOfRealHTTP2InternalErrorIsNotUnprocessed(t *testing.T) {
	err := realStreamError(t, h2InternalError)
	got := classify.Error(newReq(t, "POST"), err)
	if diff := cmp.Diff(transient, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

// A GOAWAY that excludes the request's stream: net/http cannot replay a body
// without GetBody, so RoundTrip returns the GOAWAY error at once, as text.
func TestErrorOfRealHTTP2GOAWAYBeforeStreamIsUnprocessed(t *testing.T) {
	srv := newH2Server(t, func(w *h2Writer, stream uint32) {
		w.goAway(0, 0)
	})
	tr := h2cTransport(t)
	req, err := http.NewRequest("POST", srv.url(), onlyReader{strings.NewReader("payload")})
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip(POST %s) answered by GOAWAY succeeded; want an error", srv.url())
	}
	got := classify.Error(req, err)
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

// REFUSED_STREAM for the request itself (RFC 9113 §8.7: the server did not
// process it). net/http cannot replay a body without GetBody, so RoundTrip
// returns at once, but it formats the StreamError into a new error with %v,
// so no typed check can see it. The transport's recorded bodies have no
// GetBody, so this is the error a POST with such a body gets.
func TestErrorOfRealHTTP2RefusedRequestStreamIsUnprocessed(t *testing.T) {
	srv := newH2Server(t, func(w *h2Writer, stream uint32) {
		w.rstStream(stream, h2RefusedStream)
	})
	tr := h2cTransport(t)
	req, err := http.NewRequest("POST", srv.url(), onlyReader{strings.NewReader("payload")})
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip(POST %s) answered by REFUSED_STREAM succeeded; want an error", srv.url())
	}
	got := classify.Error(req, err)
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}
