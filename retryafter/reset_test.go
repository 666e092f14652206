package retryafter_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// xResetTests are X-RateLimit-Reset values with their delay as of now
// (Unix time 1767323045). The fuzz targets use them as seeds.
var xResetTests = []struct {
	name string
	v    string
	want time.Duration
	ok   bool
}{
	// delta-seconds: below 1e9
	{"delta", "60", time.Minute, true},
	{"delta_zero", "0", 0, true},
	{"delta_spaces", " 60\t", time.Minute, true},
	{"delta_fraction", "1.5", 1500 * time.Millisecond, true},
	{"delta_nanoseconds", "0.000000001", time.Nanosecond, true},
	{"delta_largest", "999999999", 999999999 * time.Second, true},

	// Unix seconds: from 1e9 up to 1e12
	{"unix", "1767323105", time.Minute, true},
	{"unix_now", "1767323045", 0, true},
	{"unix_past", "1767322045", 0, true},
	{"unix_smallest_is_past", "1000000000", 0, true},
	{"unix_fraction", "1767323105.5", 60500 * time.Millisecond, true},
	{"unix_fraction_nanoseconds", "1767323105.123456789", time.Minute + 123456789*time.Nanosecond, true},
	{"unix_largest_saturates", "999999999999", retryafter.MaxDelay, true},

	// Unix milliseconds: from 1e12 on
	{"unix_millis", "1767323105000", time.Minute, true},
	{"unix_millis_part", "1767323105250", 60250 * time.Millisecond, true},
	{"unix_millis_fraction", "1767323105000.5", time.Minute + 500*time.Microsecond, true},
	{"unix_millis_now", "1767323045000", 0, true},
	{"unix_millis_smallest_is_past", "1000000000000", 0, true},
	{"unix_millis_past", "1767323044999", 0, true},
	{"huge_saturates", "99999999999999999999999", retryafter.MaxDelay, true},

	// malformed
	{"empty", "", 0, false},
	{"negative", "-60", 0, false},
	{"plus_sign", "+60", 0, false},
	{"exponent", "1e3", 0, false},
	{"unit", "60s", 0, false},
	{"trailing_dot", "60.", 0, false},
	{"leading_dot", ".5", 0, false},
	{"comma_fraction", "1,5", 0, false},
	{"two_dots", "1.2.3", 0, false},
	{"space_in_fraction", "0. 0", 0, false},
	{"space_before_dot", "1 .5", 0, false},
	{"http_date", "Fri, 02 Jan 2026 03:05:05 GMT", 0, false},
	{"iso8601", "2026-01-02T03:05:05Z", 0, false},
}

func TestParseXReset(t *testing.T) {
	for _, tt := range xResetTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.ParseXReset(tt.v, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseXReset(%q) = %v, %t; want %v, %t", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseSourcesXReset(t *testing.T) {
	for _, tt := range xResetTests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("x-ratelimit-reset", tt.v)
			d, from, ok := retryafter.ParseSources(h, now, retryafter.RateLimitReset)
			wantFrom := retryafter.RateLimitReset
			if !tt.ok {
				wantFrom = 0
			}
			if d != tt.want || from != wantFrom || ok != tt.ok {
				t.Errorf("ParseSources(%v, RateLimitReset) = %v, %v, %t; want %v, %v, %t", h, d, from, ok, tt.want, wantFrom, tt.ok)
			}
		})
	}
}

func TestParseXResetUnixFromFractionalNow(t *testing.T) {
	now := now.Add(250 * time.Millisecond)
	if got, ok := retryafter.ParseXReset("1767323046", now); got != 750*time.Millisecond || !ok {
		t.Errorf("parseXReset(1767323046) at %v = %v, %t; want 750ms, true", now, got, ok)
	}
}

func TestParseSourcesXResetCountsOnlyWhenExhausted(t *testing.T) {
	tests := []struct {
		name      string
		remaining []string // nil: no X-RateLimit-Remaining field
		ok        bool
	}{
		{"remaining_absent", nil, true},
		{"remaining_empty", []string{""}, true},
		{"remaining_zero", []string{"0"}, true},
		{"remaining_zero_spaces", []string{" 0 "}, true},
		{"remaining_zero_first", []string{"0", "5"}, true},
		{"remaining_positive", []string{"4999"}, false},
		{"remaining_positive_first", []string{"1", "0"}, false},
		{"remaining_negative", []string{"-1"}, false},
		{"remaining_malformed", []string{"none"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"X-Ratelimit-Reset": {"1767323105"}}
			if tt.remaining != nil {
				h["X-Ratelimit-Remaining"] = tt.remaining
			}
			want := time.Duration(0)
			if tt.ok {
				want = time.Minute
			}
			d, _, ok := retryafter.ParseSources(h, now, retryafter.RateLimitReset)
			if d != want || ok != tt.ok {
				t.Errorf("ParseSources(%v, RateLimitReset) = %v, %t; want %v, %t", h, d, ok, want, tt.ok)
			}
		})
	}
}

func TestParseSourcesXResetDoesNotAllocate(t *testing.T) {
	for _, v := range []string{"60", "1767323105", "1767323105.5", "1767323105000"} {
		h := http.Header{"X-Ratelimit-Reset": {v}, "X-Ratelimit-Remaining": {"0"}}
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

func TestRemaining(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want int64
		ok   bool
	}{
		{"zero", http.Header{"X-Ratelimit-Remaining": {"0"}}, 0, true},
		{"count", http.Header{"X-Ratelimit-Remaining": {"4999"}}, 4999, true},
		{"spaces", http.Header{"X-Ratelimit-Remaining": {" 12\t"}}, 12, true},
		{"first_value_counts", http.Header{"X-Ratelimit-Remaining": {"3", "4"}}, 3, true},
		{"huge_saturates", http.Header{"X-Ratelimit-Remaining": {"99999999999999999999"}}, math.MaxInt64, true},
		{"negative", http.Header{"X-Ratelimit-Remaining": {"-1"}}, 0, false},
		{"fraction", http.Header{"X-Ratelimit-Remaining": {"1.5"}}, 0, false},
		{"letters", http.Header{"X-Ratelimit-Remaining": {"none"}}, 0, false},
		{"empty", http.Header{"X-Ratelimit-Remaining": {""}}, 0, false},
		{"no_values", http.Header{"X-Ratelimit-Remaining": {}}, 0, false},
		{"absent", http.Header{"X-Ratelimit-Reset": {"60"}}, 0, false},
		{"ietf_field_is_not_read", http.Header{"Ratelimit-Remaining": {"0"}}, 0, false},
		{"nil_header", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.Remaining(tt.h)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Remaining(%v) = %d, %t; want %d, %t", tt.h, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRemainingFindsFieldSetInAnyCase(t *testing.T) {
	h := http.Header{}
	h.Set("x-ratelimit-remaining", "0") // as GitHub spells it
	if got, ok := retryafter.Remaining(h); got != 0 || !ok {
		t.Errorf("Remaining(%v) = %d, %t; want 0, true", h, got, ok)
	}
}

func TestRemainingDoesNotAllocate(t *testing.T) {
	h := http.Header{"X-Ratelimit-Remaining": {"4999"}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := retryafter.Remaining(h); !ok {
			t.Fatalf("Remaining(%v) reported false", h)
		}
	})
	if allocs != 0 {
		t.Errorf("Remaining(%v) allocates %v times per call; want 0", h, allocs)
	}
}
