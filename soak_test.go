package retrytransport_test

// Soak: concurrent GETs, PUTs and POSTs, for a while, against a server
// that fails a third of all attempts in every way it can.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// soakWorkers is how many goroutines TestSoak sends requests from.
const soakWorkers = 64

// soakDuration is how long TestSoak runs: the RETRYTRANSPORT_SOAK
// environment variable (a time.ParseDuration string; make soak sets 30s),
// or 2s, or 500ms with -short.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("RETRYTRANSPORT_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("RETRYTRANSPORT_SOAK=%q: want a positive duration such as 30s", v)
		}
		return d
	}
	if testing.Short() {
		return 500 * time.Millisecond
	}
	return 2 * time.Second
}

// soakPayload is the body of the request named id: bytes derived from id,
// so that the server can check what it received. One body in eight is up
// to 96 KiB (past a read buffer, within MaxBodyBuffer), the others up to
// 4 KiB.
func soakPayload(id string) []byte {
	seed := sha256.Sum256([]byte(id))
	n := int(seed[0])<<8 | int(seed[1])
	if seed[2]%8 == 0 {
		n = n * 3 / 2
	} else {
		n %= 4 << 10
	}
	out := make([]byte, n)
	rand.NewChaCha8(seed).Read(out)
	return out
}

// soakServer answers at random: 503, 429 with Retry-After: 0, a dropped
// connection before or after acting on the request, or 200. It checks
// every body it receives and counts how often it acted on each request.
type soakServer struct {
	mu        sync.Mutex
	processed map[string]int // request id -> times acted on

	duplicates atomic.Int64 // a POST acted on more than once
	corrupt    atomic.Int64 // a body that differs from what was sent
	drops      atomic.Int64 // connections the server dropped
}

func (s *soakServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id := r.Header.Get("X-Request-Id")
	want := soakPayload(id)
	if r.Method == "GET" {
		want = nil
	}
	if !bytes.Equal(body, want) {
		s.corrupt.Add(1)
	}
	switch n := rand.IntN(100); {
	case n < 15:
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	case n < 25:
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	case n < 32:
		s.drops.Add(1)
		hangUp(w, r)
	case n < 36:
		s.act(r, id)
		s.drops.Add(1)
		hangUp(w, r) // acted, but the client cannot know
	default:
		s.act(r, id)
		io.WriteString(w, "ok:"+id)
	}
}

func (s *soakServer) act(r *http.Request, id string) {
	s.mu.Lock()
	s.processed[id]++
	n := s.processed[id]
	s.mu.Unlock()
	if n > 1 && !classify.IsIdempotent(r) {
		s.duplicates.Add(1)
	}
}

// soakTally counts what the workers saw.
type soakTally struct {
	requests, ok, okPost, failed, unexpected atomic.Int64
}

// TestSoak: 64 goroutines send GET, PUT and POST requests, with bodies
// that have GetBody or must be recorded, to a server that fails a third of
// all attempts in every way it can, for soakDuration. No POST is acted on
// twice, every body arrives intact, every outcome is one the transport
// documents, the server's connections stay bounded and are all closed at
// the end, and no goroutine is left.
func TestSoak(t *testing.T) {
	noLeaks(t)
	s := &soakServer{processed: map[string]int{}}
	srv := newFaultServer(t, s)
	p := policy.Policy{MaxAttempts: 4, Backoff: fastBackoff, Quota: &quota.Bucket{RefillPerSecond: 1000}}
	c := pooledClient(t, func(rt http.RoundTripper) http.RoundTripper {
		rt.(*http.Transport).MaxIdleConnsPerHost = soakWorkers
		return rt
	}, p)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var tally soakTally
	end := time.Now().Add(soakDuration(t))
	var wg sync.WaitGroup
	for w := range soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				soakRequest(t, c, srv.URL, fmt.Sprintf("w%d-%d", w, i), &tally)
			}
		}()
	}
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&after)

	t.Logf("%d requests: %d ok (%d POST), %d failed; server: %d connections (peak %d open), %d dropped",
		tally.requests.Load(), tally.ok.Load(), tally.okPost.Load(), tally.failed.Load(),
		srv.conns.accepted.Load(), srv.conns.peak.Load(), s.drops.Load())
	if n := s.duplicates.Load(); n != 0 {
		t.Errorf("%d POSTs were acted on more than once; want 0", n)
	}
	if n := s.corrupt.Load(); n != 0 {
		t.Errorf("%d request bodies arrived different from what was sent; want 0", n)
	}
	if n := tally.unexpected.Load(); n != 0 {
		t.Errorf("%d requests ended in an undocumented way (see the errors above); want 0", n)
	}
	if tally.ok.Load() == 0 || tally.okPost.Load() == 0 {
		t.Errorf("%d requests succeeded, %d of them POSTs; want some of each", tally.ok.Load(), tally.okPost.Load())
	}
	// Each worker holds at most one connection at a time; only a dropped
	// connection or an undrained response makes it dial again.
	if got, limit := srv.conns.accepted.Load(), 2*soakWorkers+s.drops.Load(); got > limit {
		t.Errorf("server accepted %d connections; want at most %d (2 per worker, plus one per drop)", got, limit)
	}
	if got := srv.conns.peak.Load(); got > 2*soakWorkers {
		t.Errorf("server had %d connections open at once; want at most %d", got, 2*soakWorkers)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB during the soak; want < 64 MiB", grew>>20)
	}
	srv.conns.expectAllClosed(t, c)
}

// soakRequest sends one request of a random kind and checks its outcome.
func soakRequest(t *testing.T, c *http.Client, url, id string, tally *soakTally) {
	tally.requests.Add(1)
	method := [...]string{"GET", "PUT", "POST"}[rand.IntN(3)]
	var body io.Reader
	if method != "GET" {
		payload := soakPayload(id)
		body = bytes.NewReader(payload) // GetBody
		if rand.IntN(2) == 0 {
			body = io.MultiReader(body) // recorded
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Errorf("http.NewRequest: %v", err)
		return
	}
	req.Header.Set("X-Request-Id", id)
	resp, err := c.Do(req)
	if err != nil {
		tally.failed.Add(1)
		// Every error after an attempt is a *RetryError that says why
		// retrying stopped.
		var re *retrytransport.RetryError
		if !errors.As(err, &re) || re.Attempts < 1 || re.Attempts > 4 || !soakReason(re.Reason) {
			tally.unexpected.Add(1)
			t.Errorf("%s %s: error %v; want a *RetryError after 1 to 4 attempts, with a documented reason", method, id, err)
		}
		return
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		tally.unexpected.Add(1)
		t.Errorf("%s %s: reading the body: %v", method, id, err)
	case resp.StatusCode == 200 && string(got) == "ok:"+id:
		tally.ok.Add(1)
		if method == "POST" {
			tally.okPost.Add(1)
		}
	case resp.StatusCode == 503 || resp.StatusCode == 429:
		tally.failed.Add(1) // the last attempt's answer, after the last allowed attempt
	default:
		tally.unexpected.Add(1)
		t.Errorf("%s %s = %d %q; want 200 %q, or the last 503 or 429", method, id, resp.StatusCode, got, "ok:"+id)
	}
}

// soakReason reports whether r is a reason to stop retrying that the soak
// server can cause.
func soakReason(r error) bool {
	for _, want := range []error{retrytransport.ErrExhausted, retrytransport.ErrNotRetryable, quota.ErrExceeded} {
		if errors.Is(r, want) {
			return true
		}
	}
	return false
}
