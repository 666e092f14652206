package retrytransport

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

type countingCloser struct {
	io.Reader
	closes int
}

func (c *countingCloser) Close() error { c.closes++; return nil }

// claim returns r's cursor for a new attempt, failing t if there is none.
func claim(t *testing.T, r *replayBuffer) *cursor {
	t.Helper()
	c, ok := r.claim()
	if !ok {
		t.Fatalf("claim() = false; want a cursor")
	}
	return c
}

func TestRecorderReplaysAfterPartialRead(t *testing.T) {
	src := &countingCloser{Reader: strings.NewReader("hello, world")}
	r := newReplayBuffer(src, 1<<10)
	first := claim(t, r)
	buf := make([]byte, 5)
	if n, err := io.ReadFull(first, buf); n != 5 || err != nil {
		t.Fatalf("first attempt read = %d, %v; want 5, nil", n, err)
	}
	if !r.replayable() {
		t.Fatalf("replayable() = false after a partial read under the cap; want true")
	}
	second := claim(t, r)
	got, err := io.ReadAll(second)
	if string(got) != "hello, world" || err != nil {
		t.Errorf("second attempt read %q, %v; want the whole body", got, err)
	}
	if _, err := first.Read(buf); !errors.Is(err, errStaleBody) {
		t.Errorf("stale cursor Read error = %v; want errStaleBody", err)
	}
	third, _ := io.ReadAll(claim(t, r))
	if string(third) != "hello, world" {
		t.Errorf("third attempt read %q; want the whole body again", third)
	}
}

func TestRecorderOverflowPassesThroughAndStopsReplay(t *testing.T) {
	payload := strings.Repeat("x", 100)
	r := newReplayBuffer(&countingCloser{Reader: &chunks{s: payload, n: 7}}, 10)
	got, err := io.ReadAll(claim(t, r))
	if string(got) != payload || err != nil {
		t.Errorf("read past the cap = %d bytes, %v; want all %d", len(got), err, len(payload))
	}
	if r.replayable() {
		t.Errorf("replayable() = true after %d bytes with a cap of 10; want false", len(payload))
	}
	if r.buf != nil {
		t.Errorf("buffer kept %d bytes after overflow; want it released", len(r.buf))
	}
}

func TestRecorderExactlyAtCapIsReplayable(t *testing.T) {
	r := newReplayBuffer(&countingCloser{Reader: strings.NewReader("0123456789")}, 10)
	io.ReadAll(claim(t, r))
	got, _ := io.ReadAll(claim(t, r))
	if !r.replayable() || string(got) != "0123456789" {
		t.Errorf("body of exactly the cap: replayable %t, replay %q; want true and the body", r.replayable(), got)
	}
}

func TestRecorderSourceErrorStopsReplay(t *testing.T) {
	boom := errors.New("disk on fire")
	r := newReplayBuffer(&countingCloser{Reader: io.MultiReader(strings.NewReader("abc"), &failing{boom})}, 1<<10)
	_, err := io.ReadAll(claim(t, r))
	if !errors.Is(err, boom) {
		t.Errorf("read error = %v; want the source's", err)
	}
	if r.replayable() {
		t.Errorf("replayable() = true after a source error; want false (the rest is lost)")
	}
}

func TestRecorderClosesSourceOnceWhenDone(t *testing.T) {
	t.Run("CursorClosedFirst", func(t *testing.T) {
		src := &countingCloser{Reader: strings.NewReader("abc")}
		r := newReplayBuffer(src, 10)
		c := claim(t, r)
		c.Close()
		if src.closes != 0 {
			t.Fatalf("source closed before the transport finished; a retry would lose it")
		}
		r.finish(false)
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
	t.Run("FinishFirst", func(t *testing.T) {
		src := &countingCloser{Reader: strings.NewReader("abc")}
		r := newReplayBuffer(src, 10)
		stale := claim(t, r)
		c := claim(t, r)
		r.finish(false)
		if src.closes != 0 {
			t.Fatalf("source closed while the last attempt may still read it")
		}
		stale.Close()
		if src.closes != 0 {
			t.Fatalf("a stale cursor's Close closed the source")
		}
		c.Close()
		c.Close()
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
	t.Run("NoCursor", func(t *testing.T) {
		src := &countingCloser{Reader: strings.NewReader("abc")}
		newReplayBuffer(src, 10).finish(false)
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
}

// An earlier attempt's writer may still be reading when the next attempt
// is about to start (a server can answer before the body is sent). claim
// refuses while a read of the source is in flight, since what the body
// will hold is not known yet; once it succeeds, the new attempt reads the
// identical bytes, and the race detector stays quiet.
func TestRecorderConcurrentStaleReader(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 10_000)
	for range 50 {
		r := newReplayBuffer(&countingCloser{Reader: &chunks{s: string(payload), n: 13}}, 1<<20)
		old := claim(t, r)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(io.Discard, old)
		}()
		var next *cursor
		for ok := false; !ok; {
			next, ok = r.claim()
			runtime.Gosched()
		}
		got, err := io.ReadAll(next)
		wg.Wait()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("new attempt read %d bytes, %v; want the identical %d", len(got), err, len(payload))
		}
	}
}

// A claim while the source is being read refuses, and leaves the reading
// cursor current: the attempt that owns it may still finish its body.
func TestRecorderClaimRefusedDuringRead(t *testing.T) {
	pr, pw := io.Pipe()
	r := newReplayBuffer(pr, 1<<10)
	first := claim(t, r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.ReadAll(first)
	}()
	pw.Write([]byte("abc"))  // the reader is now in the source's Read, waiting for more
	for r.readMu.TryLock() { // wait until the reader holds the source
		r.readMu.Unlock()
		runtime.Gosched()
	}
	if _, ok := r.claim(); ok {
		t.Errorf("claim() during a read of the source = true; want false")
	}
	pw.Close()
	<-done
	if c, ok := r.claim(); !ok {
		t.Errorf("claim() after the read ended = false; want a cursor")
	} else if got, _ := io.ReadAll(c); string(got) != "abc" {
		t.Errorf("replay = %q; want %q", got, "abc")
	}
}

// Once the transport is done with a request, the current attempt's writer
// still reads the whole body, but nothing more is recorded.
func TestRecorderStopsRecordingWhenDone(t *testing.T) {
	payload := strings.Repeat("x", 100)
	r := newReplayBuffer(&countingCloser{Reader: &chunks{s: payload, n: 10}}, 1<<10)
	c := claim(t, r)
	buf := make([]byte, 10)
	io.ReadFull(c, buf)
	r.finish(false)
	rest, err := io.ReadAll(c)
	if len(rest) != 90 || err != nil {
		t.Errorf("after finish, the current cursor read %d bytes, %v; want the other 90", len(rest), err)
	}
	if len(r.buf) != 10 {
		t.Errorf("recorded %d bytes; want the 10 read before finish", len(r.buf))
	}
}

// chunks reads s at most n bytes at a time.
type chunks struct {
	s string
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

func TestRecorderRewind(t *testing.T) {
	r := newReplayBuffer(&countingCloser{Reader: strings.NewReader("abc")}, 2)
	io.ReadAll(claim(t, r))
	if _, err := r.rewind(); !errors.Is(err, errNotReplayable) {
		t.Errorf("rewind() after overflow error = %v; want errNotReplayable", err)
	}
	r = newReplayBuffer(&countingCloser{Reader: strings.NewReader("abc")}, 10)
	io.ReadAll(claim(t, r))
	b, err := r.rewind()
	if err != nil {
		t.Fatalf("rewind(): %v", err)
	}
	if got, _ := io.ReadAll(b); string(got) != "abc" {
		t.Errorf("rewind() body = %q; want %q", got, "abc")
	}
}

// When the request failed, the source is closed even though the current
// cursor never was: a base transport may drop a copy it rewound without
// closing it. A read in flight at that moment closes the source when it
// ends, and no read reaches the source after it is closed.
func TestRecorderClosesSourceWhenTheRequestFailed(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		src := &countingCloser{Reader: strings.NewReader("abc")}
		r := newReplayBuffer(src, 10)
		c := claim(t, r)
		r.finish(true)
		if src.closes != 1 {
			t.Errorf("source closed %d times after a failed request; want 1", src.closes)
		}
		if _, err := c.Read(make([]byte, 3)); err == nil {
			t.Errorf("Read after the source was closed: nil error; want one")
		}
		c.Close()
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
	t.Run("ReadInFlight", func(t *testing.T) {
		pr, pw := io.Pipe()
		src := &pipeCloser{PipeReader: pr}
		r := newReplayBuffer(src, 1<<10)
		c := claim(t, r)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Read(make([]byte, 8))
		}()
		for r.readMu.TryLock() { // wait until the reader holds the source
			r.readMu.Unlock()
			runtime.Gosched()
		}
		r.finish(true)
		if src.closes.Load() != 0 {
			t.Fatalf("source closed while a read of it was in flight")
		}
		pw.Write([]byte("x"))
		<-done
		if n := src.closes.Load(); n != 1 {
			t.Errorf("source closed %d times once the read in flight ended; want 1", n)
		}
	})
}

type pipeCloser struct {
	*io.PipeReader
	closes atomic.Int32
}

func (p *pipeCloser) Close() error { p.closes.Add(1); return p.PipeReader.Close() }
