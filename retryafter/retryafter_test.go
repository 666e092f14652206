package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// now is the fixed instant every test parses against: Friday 2 January
// 2026, 03:04:05 UTC.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// valueTests are field values with their delay as of now. The fuzz target
// uses them as its seed corpus.
var valueTests = []struct {
	name string
	v    string
	want time.Duration
	ok   bool
}{
	// delay-seconds
	{"zero", "0", 0, true},
	{"seconds", "120", 2 * time.Minute, true},
	{"surrounding_spaces", " 7 ", 7 * time.Second, true},
	{"surrounding_tabs", "\t7\t", 7 * time.Second, true},
	{"leading_zeros", "007", 7 * time.Second, true},
	{"largest_exact", "4611686018", 4611686018 * time.Second, true},
	{"just_past_largest", "4611686019", retryafter.MaxDelay, true},
	{"huge_saturates", "99999999999999999999999", retryafter.MaxDelay, true},
	{"negative", "-1", 0, false},
	{"plus_sign", "+1", 0, false},
	{"fraction", "1.5", 0, false},
	{"empty", "", 0, false},
	{"only_spaces", "  ", 0, false},
	{"letters", "abc", 0, false},
	{"inner_space", "1 2", 0, false},
	{"exponent", "1e3", 0, false},
	{"hex", "0x10", 0, false},
	{"trailing_unit", "10s", 0, false},
	{"trailing_newline", "10\n", 0, false},
	{"huge_then_letter", "99999999999999999999999x", 0, false},
	{"non_ascii_digits", "١٢", 0, false},

	// HTTP-date, all three forms of RFC 9110 §5.6.7
	{"imf_fixdate", "Fri, 02 Jan 2026 03:06:05 GMT", 2 * time.Minute, true},
	{"rfc850", "Friday, 02-Jan-26 03:04:35 GMT", 30 * time.Second, true},
	{"asctime", "Fri Jan  2 04:04:05 2026", time.Hour, true},
	{"date_with_spaces", "  Fri, 02 Jan 2026 03:04:06 GMT ", time.Second, true},
	{"date_equal_to_now", "Fri, 02 Jan 2026 03:04:05 GMT", 0, true},
	{"date_in_past", "Thu, 01 Jan 2026 00:00:00 GMT", 0, true},
	{"date_long_past", "Sun, 06 Nov 1994 08:49:37 GMT", 0, true},
	{"date_far_future_saturates", "Fri, 31 Dec 9999 23:59:59 GMT", retryafter.MaxDelay, true},
	{"date_bad_day", "Fri, 32 Jan 2026 03:06:05 GMT", 0, false},
	{"date_without_zone", "Fri, 02 Jan 2026 03:06:05", 0, false},
	{"date_lowercase_gmt", "Fri, 02 Jan 2026 03:06:05 gmt", 0, false},
	{"date_other_zone", "Friday, 02-Jan-26 03:04:35 PST", 0, false},
	{"date_gmt_offset", "Friday, 02-Jan-26 03:04:35 GMT+3", 0, false},
	{"date_iso8601", "2026-01-02T03:06:05Z", 0, false},
	{"date_garbage", "Fri, tomorrow GMT", 0, false},
}

func TestParseValue(t *testing.T) {
	for _, tt := range valueTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.ParseValue(tt.v, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseValue(%q) = %v, %t; want %v, %t", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseValueDateBeforeFractionalNowIsZero(t *testing.T) {
	// The date has whole seconds; now is 700ms past it.
	now := now.Add(700 * time.Millisecond)
	v := "Fri, 02 Jan 2026 03:04:05 GMT"
	if got, ok := retryafter.ParseValue(v, now); got != 0 || !ok {
		t.Errorf("ParseValue(%q) at %v = %v, %t; want 0, true", v, now, got, ok)
	}
}

func TestParseValueDateIsExactFromFractionalNow(t *testing.T) {
	now := now.Add(250 * time.Millisecond)
	v := "Fri, 02 Jan 2026 03:04:06 GMT"
	if got, ok := retryafter.ParseValue(v, now); got != 750*time.Millisecond || !ok {
		t.Errorf("ParseValue(%q) at %v = %v, %t; want 750ms, true", v, now, got, ok)
	}
}

func TestParseValueDateIgnoresNowZone(t *testing.T) {
	// The same instant in another zone gives the same delay.
	now := now.In(time.FixedZone("UTC+9", 9*60*60))
	v := "Fri, 02 Jan 2026 03:06:05 GMT"
	if got, ok := retryafter.ParseValue(v, now); got != 2*time.Minute || !ok {
		t.Errorf("ParseValue(%q) at %v = %v, %t; want 2m0s, true", v, now, got, ok)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"seconds", http.Header{"Retry-After": {"120"}}, 2 * time.Minute, true},
		{"date", http.Header{"Retry-After": {"Fri, 02 Jan 2026 03:06:05 GMT"}}, 2 * time.Minute, true},
		{"first_value_counts", http.Header{"Retry-After": {"5", "10"}}, 5 * time.Second, true},
		{"first_value_malformed", http.Header{"Retry-After": {"soon", "10"}}, 0, false},
		{"comma_list_is_malformed", http.Header{"Retry-After": {"5, 10"}}, 0, false},
		{"absent", http.Header{"Content-Type": {"text/plain"}}, 0, false},
		{"empty_value", http.Header{"Retry-After": {""}}, 0, false},
		{"no_values", http.Header{"Retry-After": {}}, 0, false},
		{"nil_header", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.Parse(tt.h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Parse(%v) = %v, %t; want %v, %t", tt.h, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseFindsFieldSetInAnyCase(t *testing.T) {
	h := http.Header{}
	h.Set("retry-after", "3") // Set canonicalises the name, as servers' headers are.
	if got, ok := retryafter.Parse(h, now); got != 3*time.Second || !ok {
		t.Errorf("Parse(%v) = %v, %t; want 3s, true", h, got, ok)
	}
}

func TestParseAgreesWithParseValue(t *testing.T) {
	for _, tt := range valueTests {
		h := http.Header{"Retry-After": {tt.v}}
		got, ok := retryafter.Parse(h, now)
		want, wantOK := retryafter.ParseValue(tt.v, now)
		if got != want || ok != wantOK {
			t.Errorf("Parse(%v) = %v, %t; want %v, %t as from ParseValue", h, got, ok, want, wantOK)
		}
	}
}

func TestParseSecondsDoesNotAllocate(t *testing.T) {
	h := http.Header{"Retry-After": {"120"}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := retryafter.Parse(h, now); !ok {
			t.Fatal("Parse(120) reported false")
		}
	})
	if allocs != 0 {
		t.Errorf("Parse(%v) allocates %v times per call; want 0", h, allocs)
	}
}
