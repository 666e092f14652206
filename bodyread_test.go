package retrytransport_test

// The bodies of failed responses: the peek for an error code and the drain
// before the next attempt are bounded in time (ReadTimeout, MaxTotalTime)
// and size (MaxDrain), against servers that stall, trickle or send a GiB;
// and a body whose connection is cut reaches the caller cut, whether the
// peek read it or not.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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
	"github.com/retrytransport/retrytransport/quota"
)

// stallingFailure answers the first failures requests with status and a
// body that declares length bytes, sends first, and then sends one more
// byte every every (never, if every is zero) until the client goes away;
// later requests get 200 "ok".
type stallingFailure struct {
	failures int32
	status   int
	length   int
	first    string
	every    time.Duration
	hits     atomic.Int32
}

func (s *stallingFailure) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if s.hits.Add(1) > s.failures {
		io.WriteString(w, "ok")
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(s.length))
	w.WriteHeader(s.status)
	io.WriteString(w, s.first)
	w.(http.Flusher).Flush()
	bound := time.NewTimer(leakBound) // a bound on a bug, not a wait
	defer bound.Stop()
	var tick <-chan time.Time
	if s.every > 0 {
		tk := time.NewTicker(s.every)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-bound.C:
			return
		case <-tick:
			if _, err := io.WriteString(w, "x"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// boundedCall sends a GET to url through c under a caller's deadline that
// only bounds a bug, and fails t if that deadline is what ended it.
func boundedCall(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leakBound)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := c.Do(req)
	if ctx.Err() != nil {
		t.Fatalf("GET ended at the caller's deadline (%v); want the policy's own bound to end it", err)
	}
	return resp, err
}

// TestStalledFailedBodyIsNotWaitedFor: a 500 that sends 10 of its 1000
// bytes and stalls, after AttemptTimeout (here, until the headers) or
// MaxTotalTime gave the attempt its time. Its drain before the next attempt
// ends at ReadTimeout: the body is closed, not waited for, and the retry
// succeeds.
func TestStalledFailedBodyIsNotWaitedFor(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"AttemptTimeout", policy.Policy{AttemptTimeout: time.Second, ReadTimeout: 50 * time.Millisecond}},
		{"MaxTotalTime", policy.Policy{MaxTotalTime: 10 * time.Second, ReadTimeout: 50 * time.Millisecond}},
		{"NoTimeBound", policy.Policy{ReadTimeout: 50 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			h := &stallingFailure{failures: 1, status: 500, length: 1000, first: "0123456789"}
			srv := newFaultServer(t, h)
			c := e2eClient(t, tt.p)
			resp, err := boundedCall(t, c, srv.URL)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
				t.Errorf("GET = %d %q; want 200 ok after the stalled 500", resp.StatusCode, got)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// TestTricklingErrorDocumentIsNotWaitedFor: a 503 that declares 1 GiB and
// sends a byte every 20 ms would keep a 4 KiB peek for an error code busy
// for a minute and a half. The peek ends at ReadTimeout; the body, too long
// to drain, is closed at once; the retry succeeds. When the 503 is the last
// response, the caller gets it, status and headers intact, and its body
// gives the bytes that arrived and then an error that says it timed out.
func TestTricklingErrorDocumentIsNotWaitedFor(t *testing.T) {
	p := policy.Policy{ReadTimeout: 50 * time.Millisecond}
	t.Run("Retried", func(t *testing.T) {
		noLeaks(t)
		h := &stallingFailure{failures: 1, status: 503, length: 1 << 30, every: 20 * time.Millisecond}
		srv := newFaultServer(t, h)
		c := e2eClient(t, p)
		resp, err := boundedCall(t, c, srv.URL)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" || h.hits.Load() != 2 {
			t.Errorf("GET = %d %q after %d hits; want 200 ok after 2", resp.StatusCode, got, h.hits.Load())
		}
		srv.conns.expectAllClosed(t, c)
	})
	t.Run("Last", func(t *testing.T) {
		noLeaks(t)
		h := &stallingFailure{failures: 3, status: 503, length: 1 << 30, first: "<Error>", every: 20 * time.Millisecond}
		srv := newFaultServer(t, h)
		c := e2eClient(t, p)
		resp, err := boundedCall(t, c, srv.URL)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.ContentLength != 1<<30 || string(b[:min(len(b), 7)]) != "<Error>" {
			t.Errorf("GET = %d (Content-Length %d), body %q; want the 503 as sent, from its first bytes", resp.StatusCode, resp.ContentLength, b)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("reading the 503's body: %v; want an error wrapping os.ErrDeadlineExceeded", err)
		}
		srv.conns.expectAllClosed(t, c)
	})
}

// TestDrainKeepsWithinMaxTotalTime: draining the previous response (a
// 500 whose body stalls) takes at most half of what is left of
// MaxTotalTime, and the retry's timer is armed with what is left after the
// drain, so the request ends at the time limit, not a drain later.
func TestDrainKeepsWithinMaxTotalTime(t *testing.T) {
	noLeaks(t)
	var hits atomic.Int32
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			// A 500 (no peek for an error code) whose body stalls.
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(500)
			io.WriteString(w, "0123456789")
			w.(http.Flusher).Flush()
		}
		stall(w, r) // the first's body, and the second's headers, never come
	}))
	const limit = 500 * time.Millisecond
	c := pooledClient(t, nil, policy.Policy{
		MaxAttempts:  2,
		Backoff:      fastBackoff,
		MaxTotalTime: limit,
		ReadTimeout:  450 * time.Millisecond,
		Quota:        quota.None,
	})
	ctx, cancel := context.WithTimeout(context.Background(), leakBound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	resp, err := c.Do(req)
	elapsed := time.Since(start)
	if err == nil {
		resp.Body.Close()
	}
	if elapsed > limit+300*time.Millisecond { // a bound on a bug: the drain alone was 450 ms
		t.Errorf("GET with MaxTotalTime %v took %v (error %v); want it to end at the time limit", limit, elapsed, err)
	}
	srv.conns.expectAllClosed(t, c)
}

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
			f, srv := newFlaky(t, 1, huge.fail)
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

// bodyErrors is a base RoundTripper that records the error with which the
// body of the last response it passed on ended: nil until a Read fails,
// io.EOF for a body read to its clean end.
type bodyErrors struct {
	base http.RoundTripper

	mu   sync.Mutex
	last *erringBody
}

func (b *bodyErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	eb := &erringBody{ReadCloser: resp.Body}
	resp.Body = eb
	b.mu.Lock()
	b.last = eb
	b.mu.Unlock()
	return resp, nil
}

// CloseIdleConnections forwards to the base, as http.Client expects.
func (b *bodyErrors) CloseIdleConnections() {
	if ci, ok := b.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// lastErr returns the error that ended the last response's body.
func (b *bodyErrors) lastErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		return nil
	}
	return b.last.err()
}

// erringBody keeps the first error its body's Read returned.
type erringBody struct {
	io.ReadCloser
	mu    sync.Mutex
	first error
}

func (e *erringBody) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err != nil {
		e.mu.Lock()
		if e.first == nil {
			e.first = err
		}
		e.mu.Unlock()
	}
	return n, err
}

func (e *erringBody) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.first
}

// TestCutErrorDocumentReachesCallerCut: a failure response whose
// connection is cut mid-body, short of its Content-Length or in the middle
// of a chunk, before or after the first classify.MaxPeek bytes. The caller
// gets the last response and reads exactly the bytes that came, then the
// error the base transport's body gave (io.ErrUnexpectedEOF), never a
// clean io.EOF that would pass the cut document off as whole. The cut
// does not change how the response is classified: by its status, and by
// an error code if one arrived whole before the cut. A 400 or 403 without
// one is Fatal, sent once; a 502 or 503, or a 400 whose code says
// throttling, is retried until the attempts run out.
func TestCutErrorDocumentReachesCallerCut(t *testing.T) {
	const (
		jsonPart = `{"message":"Invalid parameter: name is requi`
		xmlPart  = `<Error><Message>the service is unavaila`
		code     = `{"__type":"ThrottlingException","message":"Rate exce`
	)
	long := `{"message":"` + strings.Repeat("detail ", 900) // past the peek
	tests := []struct {
		name     string
		status   int
		chunked  bool
		declared int    // Content-Length, or the size of the chunk that is cut
		sent     string // the bytes of the body that come before the cut
		attempts int
	}{
		{"400ShortOfContentLength", 400, false, 1000, jsonPart, 1},
		{"400ChunkedCutMidChunk", 400, true, 0x1000, jsonPart, 1},
		{"403ShortOfContentLength", 403, false, 1000, jsonPart, 1},
		{"403ChunkedCutMidChunk", 403, true, 0x1000, jsonPart, 1},
		{"502ShortOfContentLength", 502, false, 1000, xmlPart, 3},
		{"502ChunkedCutMidChunk", 502, true, 0x1000, xmlPart, 3},
		{"503ShortOfContentLength", 503, false, 1000, xmlPart, 3},
		{"503ChunkedCutMidChunk", 503, true, 0x1000, xmlPart, 3},
		{"503NoBodyBytes", 503, false, 1000, "", 3},
		{"400ThrottlingCodeBeforeCut", 400, false, 1000, code, 3},
		{"400PastPeekShortOfContentLength", 400, false, 100000, long, 1},
		{"400PastPeekChunkedCutMidChunk", 400, true, 0x10000, long, 1},
		{"503PastPeekShortOfContentLength", 503, false, 100000, long, 3},
		{"503PastPeekChunkedCutMidChunk", 503, true, 0x10000, long, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			head := fmt.Sprintf("HTTP/1.1 %d %s\r\n", tt.status, http.StatusText(tt.status))
			if tt.chunked {
				head += fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n", tt.declared)
			} else {
				head += fmt.Sprintf("Content-Length: %d\r\n\r\n", tt.declared)
			}
			f, srv := newFlaky(t, 100, rawWrite(head+tt.sent))
			errs := &bodyErrors{}
			clock := faketime.NewAt(time.Now())
			c := pooledClient(t, func(rt http.RoundTripper) http.RoundTripper { errs.base = rt; return errs },
				policy.Policy{Backoff: halfJitter}, retrytransport.WithClock(clock.Now, clock.Sleep))
			resp, err := do(t, c, "GET", srv.URL, "r", nil)
			if err != nil {
				t.Fatalf("GET answered %d with a cut body: %v; want the response", tt.status, err)
			}
			got, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			baseErr := errs.lastErr()
			if baseErr == nil || baseErr == io.EOF {
				t.Fatalf("the base transport's body ended with %v; want the error of a cut body", baseErr)
			}
			if resp.StatusCode != tt.status || string(got) != tt.sent {
				t.Errorf("GET = %d with a %d-byte body; want %d with the %d bytes sent", resp.StatusCode, len(got), tt.status, len(tt.sent))
			}
			if !errors.Is(rerr, baseErr) {
				t.Errorf("reading the %d's cut body ended with %v; want the base transport's %v", tt.status, rerr, baseErr)
			}
			f.expectBodies(t, "r", nil, tt.attempts)
			srv.conns.expectAllClosed(t, c)
		})
	}
}
