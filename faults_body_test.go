package retrytransport_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

const gib = 1 << 30

// hugeFailure is a handler that answers status with a body of up to 1 GiB
// of zeros, written until the client goes away. It counts the bytes its
// writes accepted, and signals each return on finished.
type hugeFailure struct {
	status   int
	chunked  bool // no Content-Length: the body is chunked
	written  atomic.Int64
	finished chan struct{}
}

func newHugeFailure(status int, chunked bool) *hugeFailure {
	return &hugeFailure{status: status, chunked: chunked, finished: make(chan struct{}, 16)}
}

func (h *hugeFailure) fail(w http.ResponseWriter, r *http.Request) {
	defer func() { h.finished <- struct{}{} }()
	if !h.chunked {
		w.Header().Set("Content-Length", strconv.Itoa(gib))
	}
	w.WriteHeader(h.status)
	zeros := make([]byte, 64<<10)
	for sent := 0; sent < gib && r.Context().Err() == nil; sent += len(zeros) {
		n, err := w.Write(zeros)
		h.written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// bodyCounter is a base RoundTripper that counts the bytes read from the
// body of each response it passes on, in the order of the responses.
type bodyCounter struct {
	base http.RoundTripper

	mu    sync.Mutex
	reads []*atomic.Int64
}

func (b *bodyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	n := new(atomic.Int64)
	b.mu.Lock()
	b.reads = append(b.reads, n)
	b.mu.Unlock()
	resp.Body = &countedBody{ReadCloser: resp.Body, n: n}
	return resp, nil
}

// CloseIdleConnections forwards to the base, as http.Client expects.
func (b *bodyCounter) CloseIdleConnections() {
	if ci, ok := b.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (b *bodyCounter) counts() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int64, len(b.reads))
	for i, n := range b.reads {
		out[i] = n.Load()
	}
	return out
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestFaultHugeErrorBodyDrainIsBounded: a 503 whose body is 1 GiB. The
// transport reads at most Policy.MaxDrain of it before closing it, the
// server gets to write no more than the socket buffers hold, the retry
// succeeds on a new connection, and the process allocates a bounded amount.
func TestFaultHugeErrorBodyDrainIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name     string
		method   string
		status   int
		chunked  bool
		maxDrain int64
	}{
		{"Get503ContentLength", "GET", 503, false, 0},
		{"Get503Chunked", "GET", 503, true, 0},
		{"Put502SmallDrain", "PUT", 502, false, 1 << 10},
		{"Post429", "POST", 429, false, 0},
		{"Get500LargeDrain", "GET", 500, true, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			huge := newHugeFailure(tt.status, tt.chunked)
			f, srv := newTrackedFlaky(t, 1, huge.fail)
			counter := &bodyCounter{}
			p := policy.Policy{Backoff: fastBackoff, MaxDrain: tt.maxDrain}
			c := pooledClient(t, func(rt http.RoundTripper) http.RoundTripper { counter.base = rt; return counter }, p)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			resp, err := do(t, c, tt.method, srv.URL, "r", strings.NewReader("payload"))
			if err != nil {
				t.Fatalf("%s after a %d with a 1 GiB body: %v", tt.method, tt.status, err)
			}
			if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
				t.Errorf("%s after a %d with a 1 GiB body = %d %q; want 200 ok", tt.method, tt.status, resp.StatusCode, got)
			}
			if elapsed := time.Since(start); elapsed > leakBound {
				t.Errorf("%s after a %d with a 1 GiB body took %v; want well under %v", tt.method, tt.status, elapsed, leakBound)
			}
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("%s after a %d with a 1 GiB body allocated %d MiB; want < 64 MiB", tt.method, tt.status, alloc>>20)
			}

			limit := max(policy.Policy{MaxDrain: tt.maxDrain}.WithDefaults().MaxDrain, classify.MaxPeek)
			if got := counter.counts(); len(got) != 2 || got[0] > limit {
				t.Errorf("bytes read from each response body = %v; want 2 responses, the first read up to %d bytes", got, limit)
			}
			select {
			case <-huge.finished:
			case <-time.After(leakBound):
				t.Fatalf("the 1 GiB handler still writes after the transport closed its body")
			}
			if w := huge.written.Load(); w > 16<<20 {
				t.Errorf("server wrote %d MiB of the 1 GiB body; want < 16 MiB (the transport must not read it all)", w>>20)
			}
			f.expectBodies(t, "r", []byte("payload"), 2)
			if got := srv.conns.accepted.Load(); got != 2 {
				t.Errorf("server accepted %d connections; want 2 (the undrained one closed, a new one for the retry)", got)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// lazyBody is a response body of size bytes, made on demand: prefix, then
// patternByte(i) at offset i. It counts the bytes read and the closes.
type lazyBody struct {
	prefix string
	size   int64
	off    int64
	closes int
}

func patternByte(i int64) byte { return byte(i % 251) }

func (b *lazyBody) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.size-b.off)]
	for i := range p {
		if o := b.off + int64(i); o < int64(len(b.prefix)) {
			p[i] = b.prefix[o]
		} else {
			p[i] = patternByte(o)
		}
	}
	b.off += int64(len(p))
	return len(p), nil
}

func (b *lazyBody) Close() error { b.closes++; return nil }

// TestFaultErrorBodyPeekIsBounded: classification looks for an error code
// in at most classify.MaxPeek bytes of a 1 GiB error body, a retried
// response is drained up to MaxDrain and closed, and the response the
// caller gets reads from its first byte, unchanged.
func TestFaultErrorBodyPeekIsBounded(t *testing.T) {
	noLeaks(t)
	const throttling = `{"__type":"ThrottlingException"}`
	tests := []struct {
		name     string
		status   int
		prefix   string
		attempts int
	}{
		{"400NoCode", 400, "", 1},
		{"403NoCode", 403, `<Error><Message>denied</Message>`, 1},
		{"502NoCode", 502, "", 2},
		{"503NoCode", 503, "", 2},
		{"500NotPeeked", 500, "", 2},
		{"400ThrottlingCode", 400, throttling, 2},
		{"400CodePastPeek", 400, strings.Repeat(" ", classify.MaxPeek) + throttling, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bodies []*lazyBody
			mt := httpmock.NewMockTransport()
			mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
				b := &lazyBody{prefix: tt.prefix, size: gib}
				bodies = append(bodies, b)
				return &http.Response{StatusCode: tt.status, Header: http.Header{}, Body: b, ContentLength: gib, Request: req}, nil
			})
			clock := faketime.New()
			tr := retrytransport.New(mt, retrytransport.WithPolicy(policy.Policy{MaxAttempts: 2}), retrytransport.WithClock(clock.Now, clock.Sleep))
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatalf("RoundTrip(%s): %v", tt.name, err)
			}
			defer resp.Body.Close()
			if len(bodies) != tt.attempts {
				t.Fatalf("RoundTrip(%s) made %d attempts; want %d", tt.name, len(bodies), tt.attempts)
			}
			for i, b := range bodies[:len(bodies)-1] {
				if b.off > policy.DefaultMaxDrain || b.closes != 1 {
					t.Errorf("%s: retried response %d: read %d bytes, closed %d times; want <= %d and 1", tt.name, i+1, b.off, b.closes, policy.DefaultMaxDrain)
				}
			}
			last := bodies[len(bodies)-1]
			if last.off > classify.MaxPeek {
				t.Errorf("%s: returned response: %d bytes read before the caller; want <= %d", tt.name, last.off, classify.MaxPeek)
			}
			got := make([]byte, 256<<10)
			if _, err := io.ReadFull(resp.Body, got); err != nil {
				t.Fatalf("%s: reading the returned body: %v", tt.name, err)
			}
			want := make([]byte, len(got))
			copy(want, tt.prefix)
			for i := int64(len(tt.prefix)); i < int64(len(want)); i++ {
				want[i] = patternByte(i)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: the returned body's first %d bytes differ from what the server sent", tt.name, len(got))
			}
		})
	}
}
