package retrytransport_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/retrytransport/retrytransport/policy"
)

// earlyAnswer answers every request with a 500 header at once, then reads
// the whole request body, and only then sends the 500's body: a server that
// rejects an upload early but keeps its connection by reading the rest.
type earlyAnswer struct {
	mu     sync.Mutex
	bodies [][32]byte // hash of each body read whole
	sizes  []int      // size of each body read whole
}

func (e *earlyAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.NewResponseController(w).EnableFullDuplex()
	w.WriteHeader(500)
	w.(http.Flusher).Flush()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.bodies = append(e.bodies, sha256.Sum256(b))
	e.sizes = append(e.sizes, len(b))
	e.mu.Unlock()
	io.WriteString(w, "upload rejected")
}

// TestBodyReplayDecidedJustBeforeSending: a 3 MiB PUT without GetBody to a
// server that answers 500 at once and then reads the whole body. The first
// attempt's writer goes on reading the body, past the 1 MiB record, while
// the transport holds the 500. Whether the body can be replayed is decided
// only when the next attempt is about to go: a next attempt, if any, sends
// the identical 3 MiB, never a cut body; and when the body can no longer be
// replayed the caller gets the 500, whole, not an error.
func TestBodyReplayDecidedJustBeforeSending(t *testing.T) {
	noLeaks(t)
	h := &earlyAnswer{}
	srv := newFaultServer(t, h)
	c := e2eClient(t, policy.Standard())
	payload := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	req, err := http.NewRequest("PUT", srv.URL, io.NopCloser(bytes.NewReader(payload)))
	if err != nil {
		t.Fatalf("http.NewRequest: %v", err)
	}
	req.ContentLength = int64(len(payload))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("PUT: %v; want the 500", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 500 || got != "upload rejected" {
		t.Errorf("PUT = %d %q; want the 500 whole", resp.StatusCode, got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	want := sha256.Sum256(payload)
	for i, sum := range h.bodies {
		if sum != want {
			t.Errorf("body %d that the server read whole: %d bytes differing from the %d sent", i+1, h.sizes[i], len(payload))
		}
	}
	srv.conns.expectAllClosed(t, c)
}
