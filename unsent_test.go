package retrytransport_test

// Requests the server never saw: a POST is sent again when no connection
// was made, and not when its body failed like a dial once it had one.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// failingBody yields n bytes of payload and then fails with err, as a body
// streamed from another upstream does when that upstream goes away.
type failingBody struct {
	left int
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, b.err
	}
	n := min(len(p), b.left)
	clear(p[:n])
	b.left -= n
	return n, nil
}

func (b *failingBody) Close() error { return nil }

// enteredCounter is a handler that counts the requests that reached it and
// reads their bodies, whatever becomes of them.
type enteredCounter struct{ n atomic.Int32 }

func (e *enteredCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.n.Add(1)
	io.Copy(io.Discard, r.Body)
}

// TestPostNotSentAgainWhenItsBodyFailsLikeADial: a POST with GetBody whose
// body reader fails half-way with an error that looks like a failed dial
// (a refused connection) or like an HTTP/2 refusal. The connection was
// obtained and 32 KiB were written, so the server may have acted: the
// request is not sent again, and the caller gets the body's error.
func TestPostNotSentAgainWhenItsBodyFailsLikeADial(t *testing.T) {
	lookalikes := []struct {
		name string
		err  error
	}{
		{"DialRefused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		{"H2GracefulGoAway", errors.New("http2: Transport received Server's graceful shutdown GOAWAY")},
	}
	for _, tt := range lookalikes {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			h := &enteredCounter{}
			srv := newFaultServer(t, h)
			c := e2eClient(t, policy.Standard())
			req, err := http.NewRequest("POST", srv.URL, nil)
			if err != nil {
				t.Fatalf("http.NewRequest: %v", err)
			}
			req.ContentLength = 64 << 10
			req.GetBody = func() (io.ReadCloser, error) { return &failingBody{left: 32 << 10, err: tt.err}, nil }
			req.Body, _ = req.GetBody()
			var trace connTrace
			resp, err := c.Do(trace.attach(req))
			if resp != nil {
				resp.Body.Close()
				t.Fatalf("POST = %d; want an error", resp.StatusCode)
			}
			if !trace.sentOnce() {
				t.Errorf("POST written on %v; want one connection: a body that failed after bytes went out was sent again", trace.events)
			}
			if n := h.n.Load(); n > 1 {
				t.Errorf("handler entered %d times; want at most 1", n)
			}
			if !errors.Is(err, retrytransport.ErrNotRetryable) || !errors.Is(err, tt.err) {
				t.Errorf("POST error = %v; want ErrNotRetryable and the body's error", err)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// TestPostSentAgainWhenNoConnectionWasMade: the proof that still holds. A
// dial that fails sends nothing, so even a POST is sent again, and its
// body arrives whole when the server comes back.
func TestPostSentAgainWhenNoConnectionWasMade(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	var attempts atomic.Int32
	c := e2eClient(t, policy.Standard(), retrytransport.WithObserver(func(retrytransport.Event) { attempts.Add(1) }))
	req, err := http.NewRequest("POST", "http://"+addr+"/", bytes.NewReader([]byte("charge $10")))
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	_, err = c.Do(req)
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("POST to a closed port: %v; want a *RetryError after 3 attempts wrapping ECONNREFUSED", err)
	}
}
