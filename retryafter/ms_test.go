package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// millisTests are values of the millisecond fields with their delay. The
// fuzz targets use them as seeds.
var millisTests = []struct {
	name string
	v    string
	want time.Duration
	ok   bool
}{
	{"zero", "0", 0, true},
	{"millis", "1500", 1500 * time.Millisecond, true},
	{"under_a_second", "7", 7 * time.Millisecond, true},
	{"leading_zeros", "0042", 42 * time.Millisecond, true},
	{"surrounding_whitespace", " \t250 ", 250 * time.Millisecond, true},
	{"largest_exact", "4611686018427", 4611686018427 * time.Millisecond, true},
	{"just_past_largest", "4611686018428", retryafter.MaxDelay, true},
	{"huge_saturates", "99999999999999999999999", retryafter.MaxDelay, true},
	{"empty", "", 0, false},
	{"only_spaces", "   ", 0, false},
	{"negative", "-5", 0, false},
	{"plus_sign", "+5", 0, false},
	{"fraction", "1500.5", 0, false},
	{"exponent", "1e3", 0, false},
	{"unit", "1500ms", 0, false},
	{"inner_space", "15 00", 0, false},
	{"http_date", "Fri, 02 Jan 2026 03:06:05 GMT", 0, false},
	{"huge_then_letter", "99999999999999999999999x", 0, false},
}

func TestParseMillis(t *testing.T) {
	for _, tt := range millisTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.ParseMillis(tt.v)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseMillis(%q) = %v, %t; want %v, %t", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// millisFields are the millisecond sources with their fields as servers
// spell them; http.Header.Set canonicalises the names.
var millisFields = []struct {
	name string
	src  retryafter.Source
}{
	{"retry-after-ms", retryafter.RetryAfterMS},
	{"x-ms-retry-after-ms", retryafter.MSRetryAfterMS},
	{"x-amz-retry-after", retryafter.AmzRetryAfter},
}

func TestParseSourcesMillisFields(t *testing.T) {
	for _, f := range millisFields {
		t.Run(f.name, func(t *testing.T) {
			for _, tt := range millisTests {
				t.Run(tt.name, func(t *testing.T) {
					h := http.Header{}
					h.Set(f.name, tt.v)
					d, from, ok := retryafter.ParseSources(h, now, f.src)
					wantFrom := f.src
					if !tt.ok {
						wantFrom = 0
					}
					if d != tt.want || from != wantFrom || ok != tt.ok {
						t.Errorf("ParseSources(%v, %v) = %v, %v, %t; want %v, %v, %t", h, f.src, d, from, ok, tt.want, wantFrom, tt.ok)
					}
				})
			}
		})
	}
}

func TestParseSourcesMillisFirstValueCounts(t *testing.T) {
	h := http.Header{"Retry-After-Ms": {"100", "200"}}
	if d, _, ok := retryafter.ParseSources(h, now, retryafter.RetryAfterMS); d != 100*time.Millisecond || !ok {
		t.Errorf("ParseSources(%v, RetryAfterMS) = %v, %t; want 100ms, true", h, d, ok)
	}
}

func TestParseSourcesMillisDoesNotAllocate(t *testing.T) {
	for _, f := range millisFields {
		h := http.Header{}
		h.Set(f.name, "1500")
		allocs := testing.AllocsPerRun(100, func() {
			if _, _, ok := retryafter.ParseSources(h, now, retryafter.AllSources); !ok {
				t.Fatalf("ParseSources(%v) reported false", h)
			}
		})
		if allocs != 0 {
			t.Errorf("ParseSources(%v) allocates %v times per call; want 0", h, allocs)
		}
	}
}
