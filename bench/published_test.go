package main

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// TestQuotaBlindForwards checks that quotaBlind has every method of
// *ratelimit.Adaptive but RecordQuota and RecordQuotaAt: the "limiter not
// told the quota" row must differ from the default in nothing else.
func TestQuotaBlindForwards(t *testing.T) {
	var b ratelimit.Limiter = quotaBlind{Adaptive: &ratelimit.Adaptive{}}
	if _, ok := b.(ratelimit.QuotaRecorder); ok {
		t.Fatal("quotaBlind implements ratelimit.QuotaRecorder; want it hidden")
	}
	at := reflect.TypeFor[*ratelimit.Adaptive]()
	bt := reflect.TypeFor[quotaBlind]()
	for i := range at.NumMethod() {
		m := at.Method(i)
		_, ok := bt.MethodByName(m.Name)
		if hidden := m.Name == "RecordQuota" || m.Name == "RecordQuotaAt"; ok == hidden {
			t.Errorf("quotaBlind has method %s: %t; want every method of *ratelimit.Adaptive but RecordQuota and RecordQuotaAt", m.Name, ok)
		}
	}
}

// TestWriteQuota checks the fields the published-quota server sends, and
// that retryafter.ParseQuota reads from each family a reset no earlier
// than the true one and at most a second later.
func TestWriteQuota(t *testing.T) {
	now := time.Unix(1_700_000_000, 300_000_000)
	reset := now.Add(4200 * time.Millisecond) // ends at …004.5
	h := http.Header{}
	writeQuota(h, 600, 10*time.Second, 42, now, reset)
	for k, want := range map[string]string{
		"RateLimit":             `"default";r=42;t=5`,
		"RateLimit-Policy":      `"default";q=600;w=10`,
		"X-RateLimit-Limit":     "600",
		"X-RateLimit-Remaining": "42",
		"X-RateLimit-Reset":     "1700000005",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("writeQuota(600, 10s, 42, reset in 4.2s): %s = %q; want %q", k, got, want)
		}
	}
	for _, src := range []retryafter.Source{retryafter.IETFRateLimit, retryafter.RateLimitReset} {
		q, from, ok := retryafter.ParseQuota(h, now, src)
		if !ok || from != src || q.Remaining != 42 {
			t.Fatalf("ParseQuota(%v) = %+v, %v, %t; want 42 left from %v", src, q, from, ok, src)
		}
		if late := q.Reset - reset.Sub(now); late < 0 || late > time.Second {
			t.Errorf("ParseQuota(%v) reset %v; want within a second after the true %v", src, q.Reset, reset.Sub(now))
		}
	}
}

// TestQuotaServerWindows checks that the server admits its quota per
// window, answers 429 beyond it with nothing left, and records both per
// client and window.
func TestQuotaServerWindows(t *testing.T) {
	s := newQuotaServer(3, 10*time.Second)
	defer s.Close()
	start := time.Unix(1_700_000_000, 0)
	now := start.Add(time.Second)
	s.now = func() time.Time { return now }
	s.begin(start, 30*time.Second)
	var oks int
	for range 5 {
		ok, left, _, _ := s.admit(0)
		if ok {
			oks++
		} else if left != 0 {
			t.Errorf("admit(0) refused with %d left; want 0", left)
		}
	}
	if oks != 3 {
		t.Errorf("admit(0) five times at once admitted %d; want the quota, 3", oks)
	}
	now = start.Add(12 * time.Second)
	if ok, left, _, _ := s.admit(1); !ok || left != 2 {
		t.Errorf("admit(1) in the next window = %t, %d left; want true, 2", ok, left)
	}
	admitted, throttled := s.results()
	if admitted[0][0] != 3 || throttled[0][0] != 2 || admitted[1][1] != 1 {
		t.Errorf("results: client 0 admitted %v, refused %v, client 1 admitted %v; want 3 and 2 in window 0, 1 in window 1",
			admitted[0], throttled[0], admitted[1])
	}
}
