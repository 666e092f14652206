package retryafter_test

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

func FuzzParseValue(f *testing.F) {
	for _, tt := range valueTests {
		f.Add(tt.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := retryafter.ParseValue(v, now)
		if got < 0 || got > retryafter.MaxDelay {
			t.Fatalf("ParseValue(%q) = %v, %t; want a delay in [0, MaxDelay]", v, got, ok)
		}
		if !ok && got != 0 {
			t.Fatalf("ParseValue(%q) = %v, false; want 0 when false", v, got)
		}
		digits := strings.Trim(v, " \t")
		if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
			return
		}
		// All digits: always valid, the integer number of seconds when it
		// fits, MaxDelay when it does not.
		want := retryafter.MaxDelay
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil && n <= int64(retryafter.MaxDelay/time.Second) {
			want = time.Duration(n) * time.Second
		}
		if got != want || !ok {
			t.Fatalf("ParseValue(%q) = %v, %t; want %v, true", v, got, ok, want)
		}
	})
}

// precedence is the order in which ParseSources tries the sources.
var precedence = []retryafter.Source{
	retryafter.RetryAfterMS,
	retryafter.MSRetryAfterMS,
	retryafter.AmzRetryAfter,
	retryafter.RetryAfter,
	retryafter.IETFRateLimit,
	retryafter.RateLimitReset,
}

// checkDelay fails t unless d is in [0, MaxDelay] and is 0 when ok is
// false.
func checkDelay(t *testing.T, call string, d time.Duration, ok bool) {
	t.Helper()
	if d < 0 || d > retryafter.MaxDelay {
		t.Fatalf("%s = %v, %t; want a delay in [0, MaxDelay]", call, d, ok)
	}
	if !ok && d != 0 {
		t.Fatalf("%s = %v, false; want 0 when false", call, d)
	}
}

// allDigits reports whether v, without optional whitespace around it, is
// one or more ASCII digits, and returns it trimmed.
func allDigits(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	return v, isDigits(v)
}

// isDigits reports whether v is one or more ASCII digits.
func isDigits(v string) bool {
	return v != "" && strings.TrimLeft(v, "0123456789") == ""
}

func FuzzParseSources(f *testing.F) {
	f.Add("4", "1500", "2500", "3500", "6", "0", `"default";r=0;t=5`, "7", "0", uint16(retryafter.AllSources))
	f.Add("Fri, 02 Jan 2026 03:06:05 GMT", "soon", "", "-1", "1767323105.5", "", "limit=10, remaining=0, reset=30", "", "", uint16(retryafter.AllSources))
	f.Add("", "", "", "", "1767323105000", "5", `"a";r=5;t=9, "b";r=0;t=3`, "1767323105", "3", uint16(retryafter.IETFRateLimit|retryafter.RateLimitReset))
	f.Add("120", "99999999999999999999999", "", "", "", "", "", "", "", uint16(0xffff))
	for _, tt := range millisTests {
		f.Add("", tt.v, tt.v, tt.v, "", "", "", "", "", uint16(retryafter.AllSources))
	}
	for _, tt := range xResetTests {
		f.Add("", "", "", "", tt.v, "0", "", tt.v, "", uint16(retryafter.AllSources))
	}
	for _, tt := range rateLimitTests {
		f.Add("", "", "", "", "", "", tt.v, "", "", uint16(retryafter.AllSources))
	}
	f.Fuzz(func(t *testing.T, ra, raMS, msMS, amz, xReset, xRemaining, rl, rlReset, rlRemaining string, trusted uint16) {
		h := http.Header{}
		for _, kv := range []struct{ k, v string }{
			{"Retry-After", ra},
			{"Retry-After-Ms", raMS},
			{"X-Ms-Retry-After-Ms", msMS},
			{"X-Amz-Retry-After", amz},
			{"X-Ratelimit-Reset", xReset},
			{"X-Ratelimit-Remaining", xRemaining},
			{"Ratelimit", rl},
			{"Ratelimit-Reset", rlReset},
			{"Ratelimit-Remaining", rlRemaining},
		} {
			if kv.v != "" {
				h[kv.k] = []string{kv.v}
			}
		}
		src := retryafter.Source(trusted)
		d, from, ok := retryafter.ParseSources(h, now, src)
		call := fmt.Sprintf("ParseSources(%v, %v)", h, src)
		checkDelay(t, call, d, ok)
		if !ok && from != 0 {
			t.Fatalf("%s = %v, %v, false; want from 0 when false", call, d, from)
		}
		// The first trusted source that yields a delay on its own wins.
		var want time.Duration
		var wantFrom retryafter.Source
		for _, s := range precedence {
			if src&s == 0 {
				continue
			}
			if sd, sfrom, sok := retryafter.ParseSources(h, now, s); sok {
				if sfrom != s {
					t.Fatalf("ParseSources(%v, %v) reports from %v", h, s, sfrom)
				}
				want, wantFrom = sd, s
				break
			}
		}
		if d != want || from != wantFrom || ok != (wantFrom != 0) {
			t.Fatalf("%s = %v, %v, %t; want %v, %v, %t by precedence", call, d, from, ok, want, wantFrom, wantFrom != 0)
		}
		// Retry-After alone is Parse.
		rd, rfrom, rok := retryafter.ParseSources(h, now, retryafter.RetryAfter)
		if pd, pok := retryafter.Parse(h, now); rd != pd || rok != pok || (rfrom == retryafter.RetryAfter) != pok {
			t.Fatalf("ParseSources(%v, RetryAfter) = %v, %v, %t; Parse = %v, %t", h, rd, rfrom, rok, pd, pok)
		}
	})
}

func FuzzParseMillis(f *testing.F) {
	for _, tt := range millisTests {
		f.Add(tt.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := retryafter.ParseMillis(v)
		checkDelay(t, fmt.Sprintf("parseMillis(%q)", v), got, ok)
		digits, isDigits := allDigits(v)
		if !isDigits {
			if ok {
				t.Fatalf("parseMillis(%q) = %v, true; want false for a value that is not all digits", v, got)
			}
			return
		}
		want := retryafter.MaxDelay
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil && n <= int64(retryafter.MaxDelay/time.Millisecond) {
			want = time.Duration(n) * time.Millisecond
		}
		if got != want || !ok {
			t.Fatalf("parseMillis(%q) = %v, %t; want %v, true", v, got, ok, want)
		}
	})
}

func FuzzParseXReset(f *testing.F) {
	for _, tt := range xResetTests {
		f.Add(tt.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := retryafter.ParseXReset(v, now)
		checkDelay(t, fmt.Sprintf("parseXReset(%q)", v), got, ok)
		trimmed := strings.Trim(v, " \t")
		intPart, fracPart, hasDot := strings.Cut(trimmed, ".")
		intOK := isDigits(intPart)
		if wantOK := intOK && (!hasDot || isDigits(fracPart)); ok != wantOK {
			t.Fatalf("parseXReset(%q) = %v, %t; want ok %t", v, got, ok, wantOK)
		}
		// Whole delta-seconds are exact.
		if n, err := strconv.ParseInt(trimmed, 10, 64); err == nil && intOK && !hasDot && n < 1e9 && got != time.Duration(n)*time.Second {
			t.Fatalf("parseXReset(%q) = %v, %t; want %v, true", v, got, ok, time.Duration(n)*time.Second)
		}
	})
}

func FuzzParseRateLimit(f *testing.F) {
	for _, tt := range rateLimitTests {
		f.Add(tt.v, "")
	}
	for _, tt := range sfSyntaxTests {
		f.Add(`"p";r=0;t=30`+tt.param, `"q";r=0;t=5`)
	}
	f.Add(`"a`, `b";r=0;t=5`)
	f.Add(`limit=100, remaining=0`, `reset=30`)
	f.Fuzz(func(t *testing.T, line1, line2 string) {
		lines := []string{line1, line2}
		got, ok := retryafter.ParseRateLimit(lines, now)
		checkDelay(t, fmt.Sprintf("parseRateLimit(%q)", lines), got, ok)
		// Two lines are one field, joined with a comma.
		l1, l2 := strings.Trim(line1, " \t"), strings.Trim(line2, " \t")
		joined := l1 + ", " + l2
		switch {
		case l1 == "":
			joined = l2
		case l2 == "":
			joined = l1
		}
		if jd, jok := retryafter.ParseRateLimit([]string{joined}, now); jd != got || jok != ok {
			t.Fatalf("parseRateLimit(%q) = %v, %t; parseRateLimit(%q) = %v, %t", lines, got, ok, joined, jd, jok)
		}
		// ParseSources reads the same field.
		h := http.Header{"Ratelimit": lines}
		if d, _, sok := retryafter.ParseSources(h, now, retryafter.IETFRateLimit); ok && (d != got || !sok) {
			t.Fatalf("ParseSources(%v, IETFRateLimit) = %v, %t; want %v, true", h, d, sok, got)
		}
	})
}

func FuzzRemaining(f *testing.F) {
	for _, v := range []string{"0", "4999", " 12 ", "", "-1", "1.5", "99999999999999999999", "none"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"X-Ratelimit-Remaining": {v}}
		got, ok := retryafter.Remaining(h)
		digits, isDigits := allDigits(v)
		if ok != isDigits {
			t.Fatalf("Remaining(%v) = %d, %t; want ok %t", h, got, ok, isDigits)
		}
		if !ok {
			if got != 0 {
				t.Fatalf("Remaining(%v) = %d, false; want 0 when false", h, got)
			}
			return
		}
		want := int64(math.MaxInt64)
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
			want = n
		}
		if got != want {
			t.Fatalf("Remaining(%v) = %d, true; want %d", h, got, want)
		}
	})
}

func FuzzParseQuota(f *testing.F) {
	for _, tt := range quotaTests {
		f.Add(first(tt.h, "Ratelimit"), first(tt.h, "Ratelimit-Remaining"), first(tt.h, "Ratelimit-Reset"),
			first(tt.h, "X-Ratelimit-Remaining"), first(tt.h, "X-Ratelimit-Reset"), uint16(retryafter.AllSources))
	}
	for _, tt := range rateLimitTests {
		f.Add(tt.v, "", "", "", "", uint16(retryafter.AllSources))
	}
	f.Fuzz(func(t *testing.T, rl, rlRemaining, rlReset, xRemaining, xReset string, trusted uint16) {
		h := http.Header{}
		for _, kv := range []struct{ k, v string }{
			{"Ratelimit", rl},
			{"Ratelimit-Remaining", rlRemaining},
			{"Ratelimit-Reset", rlReset},
			{"X-Ratelimit-Remaining", xRemaining},
			{"X-Ratelimit-Reset", xReset},
		} {
			if kv.v != "" {
				h[kv.k] = []string{kv.v}
			}
		}
		src := retryafter.Source(trusted)
		q, from, ok := retryafter.ParseQuota(h, now, src)
		call := fmt.Sprintf("ParseQuota(%v, %v)", h, src)
		if q.Remaining < 0 || q.Reset < 0 || q.Reset > retryafter.MaxDelay {
			t.Fatalf("%s = %v; want a count >= 0 and a reset in [0, MaxDelay]", call, q)
		}
		if !ok && (q != retryafter.Quota{} || from != 0) {
			t.Fatalf("%s = %v, %v, false; want the zero Quota and Source when false", call, q, from)
		}
		if ok && !retryafter.HasQuotaFields(h) {
			t.Fatalf("%s found a quota, but HasQuotaFields = false", call)
		}
		if ok && (from&src == 0 || (from != retryafter.IETFRateLimit && from != retryafter.RateLimitReset)) {
			t.Fatalf("%s = %v, from %v; want a trusted quota source", call, q, from)
		}
		// An exhausted X-RateLimit quota's reset is the delay ParseSources
		// reads from the same fields.
		if ok && q.Remaining == 0 && from == retryafter.RateLimitReset {
			if d, _, dok := retryafter.ParseSources(h, now, retryafter.RateLimitReset); !dok || d != q.Reset {
				t.Fatalf("%s = %v; ParseSources(RateLimitReset) = %v, %t; want the same reset", call, q, d, dok)
			}
		}
		// The X-RateLimit fields alone: both all digits (a fraction
		// allowed in the reset) is a quota; anything else is not.
		if src&retryafter.AllSources == retryafter.RateLimitReset && rl == "" && rlRemaining == "" && rlReset == "" {
			_, remOK := allDigits(xRemaining)
			intPart, fracPart, hasDot := strings.Cut(strings.Trim(xReset, " \t"), ".")
			resetOK := isDigits(intPart) && (!hasDot || isDigits(fracPart))
			if ok != (remOK && resetOK) {
				t.Fatalf("%s = %v, %t; want ok %t", call, q, ok, remOK && resetOK)
			}
		}
	})
}

// first returns the first value of the canonical field key in h, or "".
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
