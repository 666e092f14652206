package retryafter_test

import (
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
