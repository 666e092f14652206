package redisretry_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// prefixes makes each test's key prefix unique within the run.
var prefixes atomic.Int64

// uniquePrefix returns a key prefix no other test of the run uses.
func uniquePrefix(t testing.TB) string {
	t.Helper()
	return "test" + strconv.FormatInt(prefixes.Add(1), 10) + ":"
}

// countingHandler is a slog.Handler that counts records by level.
type countingHandler struct {
	mu     sync.Mutex
	counts map[slog.Level]int
	msgs   []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make(map[slog.Level]int)
	}
	h.counts[r.Level]++
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[l]
}

func (h *countingHandler) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// pollUntil calls cond every few milliseconds until it returns true, and
// fails t if that takes longer than within.
func pollUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// exists reports whether key is in the Redis of c.
func exists(t testing.TB, c *redis.Client, key string) bool {
	t.Helper()
	n, err := c.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func itoa(i int) string { return strconv.Itoa(i) }
