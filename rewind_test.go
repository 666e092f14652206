package retrytransport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

type countingCloser struct {
	io.Reader
	closes int
}

func (c *countingCloser) Close() error { c.closes++; return nil }

func TestRecorderReplaysAfterPartialRead(t *testing.T) {
	src := &countingCloser{Reader: strings.NewReader("hello, world")}
	r := newRecorder(src, 1<<10)
	first := r.next()
	buf := make([]byte, 5)
	if n, err := io.ReadFull(first, buf); n != 5 || err != nil {
		t.Fatalf("first attempt read = %d, %v; want 5, nil", n, err)
	}
	if !r.replayable() {
		t.Fatalf("replayable() = false after a partial read under the cap; want true")
	}
	second := r.next()
	got, err := io.ReadAll(second)
	if string(got) != "hello, world" || err != nil {
		t.Errorf("second attempt read %q, %v; want the whole body", got, err)
	}
	if _, err := first.Read(buf); !errors.Is(err, errStaleBody) {
		t.Errorf("stale cursor Read error = %v; want errStaleBody", err)
	}
	third, _ := io.ReadAll(r.next())
	if string(third) != "hello, world" {
		t.Errorf("third attempt read %q; want the whole body again", third)
	}
}

func TestRecorderOverflowPassesThroughAndStopsReplay(t *testing.T) {
	payload := strings.Repeat("x", 100)
	r := newRecorder(&countingCloser{Reader: &chunks{s: payload, n: 7}}, 10)
	got, err := io.ReadAll(r.next())
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
	r := newRecorder(&countingCloser{Reader: strings.NewReader("0123456789")}, 10)
	io.ReadAll(r.next())
	got, _ := io.ReadAll(r.next())
	if !r.replayable() || string(got) != "0123456789" {
		t.Errorf("body of exactly the cap: replayable %t, replay %q; want true and the body", r.replayable(), got)
	}
}

func TestRecorderSourceErrorStopsReplay(t *testing.T) {
	boom := errors.New("disk on fire")
	r := newRecorder(&countingCloser{Reader: io.MultiReader(strings.NewReader("abc"), &failing{boom})}, 1<<10)
	_, err := io.ReadAll(r.next())
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
		r := newRecorder(src, 10)
		c := r.next()
		c.Close()
		if src.closes != 0 {
			t.Fatalf("source closed before the transport finished; a retry would lose it")
		}
		r.finish()
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
	t.Run("FinishFirst", func(t *testing.T) {
		src := &countingCloser{Reader: strings.NewReader("abc")}
		r := newRecorder(src, 10)
		stale := r.next()
		c := r.next()
		r.finish()
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
		newRecorder(src, 10).finish()
		if src.closes != 1 {
			t.Errorf("source closed %d times; want 1", src.closes)
		}
	})
}

// An earlier attempt's writer may still be reading when the next attempt
// starts (a server can answer before the body is sent). The new attempt must
// still read the identical bytes, and the race detector must stay quiet.
func TestRecorderConcurrentStaleReader(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 10_000)
	for range 50 {
		r := newRecorder(&countingCloser{Reader: &chunks{s: string(payload), n: 13}}, 1<<20)
		old := r.next()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(io.Discard, old)
		}()
		got, err := io.ReadAll(r.next())
		wg.Wait()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("new attempt read %d bytes, %v; want the identical %d", len(got), err, len(payload))
		}
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
	r := newRecorder(&countingCloser{Reader: strings.NewReader("abc")}, 2)
	io.ReadAll(r.next())
	if _, err := r.rewind(); !errors.Is(err, errNotReplayable) {
		t.Errorf("rewind() after overflow error = %v; want errNotReplayable", err)
	}
	r = newRecorder(&countingCloser{Reader: strings.NewReader("abc")}, 10)
	io.ReadAll(r.next())
	b, err := r.rewind()
	if err != nil {
		t.Fatalf("rewind(): %v", err)
	}
	if got, _ := io.ReadAll(b); string(got) != "abc" {
		t.Errorf("rewind() body = %q; want %q", got, "abc")
	}
}
