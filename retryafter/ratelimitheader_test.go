package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// rateLimitTests are RateLimit field values, one line each, with their
// delay as of now (Unix time 1767323045). The fuzz targets use them as
// seeds.
var rateLimitTests = []struct {
	name string
	v    string
	want time.Duration
	ok   bool
}{
	// The List of drafts -08 and later.
	{"exhausted", `"default";r=0;t=30`, 30 * time.Second, true},
	{"quota_left", `"default";r=50;t=30`, 0, false},
	{"parameters_reversed", `"default";t=30;r=0`, 30 * time.Second, true},
	{"no_reset", `"default";r=0`, 0, false},
	{"no_remaining", `"default";t=30`, 30 * time.Second, true},
	{"token_name", `default;r=0;t=30`, 30 * time.Second, true},
	{"escaped_name", `"a \"b\" \\c";r=0;t=30`, 30 * time.Second, true},
	{"spaces_after_semicolons", `"default"; r=0; t=30`, 30 * time.Second, true},
	{"reset_zero", `"default";r=0;t=0`, 0, true},
	{"two_exhausted_longest_wins", `"burst";r=0;t=30, "daily";r=0;t=3600`, time.Hour, true},
	{"second_exhausted", `"burst";r=5;t=30, "daily";r=0;t=3600`, time.Hour, true},
	{"first_exhausted", `"burst";r=0;t=30,"daily";r=10;t=3600`, 30 * time.Second, true},
	{"none_exhausted", `"burst";r=1;t=30, "daily";r=2;t=3600`, 0, false},
	{"tab_around_comma", "\"a\";r=1;t=5 ,\t\"b\";r=0;t=7", 7 * time.Second, true},
	{"other_parameters", `"default";r=0;t=30;pk=:dHJpYWw=:;acme-burst=?1;note="x y";w=60`, 30 * time.Second, true},
	{"repeated_parameter_last_wins", `"default";r=0;t=30;r=1`, 0, false},
	{"repeated_reset_last_wins", `"default";r=0;t=30;t=5`, 5 * time.Second, true},
	{"negative_remaining", `"default";r=-1;t=30`, 0, false},
	{"decimal_remaining", `"default";r=0.0;t=30`, 0, false},
	{"string_remaining", `"default";r="0";t=30`, 0, false},
	{"negative_reset", `"default";r=0;t=-5`, 0, false},
	{"decimal_reset", `"default";r=0;t=30.5`, 0, false},
	{"string_reset", `"default";r=0;t="30"`, 0, false},
	{"boolean_reset", `"default";r=0;t`, 0, false},
	{"unix_reset", `"default";r=0;t=1767323105`, time.Minute, true},
	{"unix_millis_reset", `"default";r=0;t=1767323105000`, time.Minute, true},
	{"largest_integer_saturates", `"default";r=0;t=999999999999999`, retryafter.MaxDelay, true},
	{"inner_list_skipped", `("a" "b");r=0;t=30, "d";r=0;t=5`, 5 * time.Second, true},
	{"empty", ``, 0, false},
	{"bare_token", `garbage!!`, 0, false},

	// Syntax errors: the whole field is ignored.
	{"integer_too_long", `"default";r=0;t=1000000000000000`, 0, false},
	{"space_before_semicolon", `"default" ;r=0;t=30`, 0, false},
	{"trailing_comma", `"a";r=0;t=30,`, 0, false},
	{"empty_member", `"a";r=0;t=30,,"b";r=0;t=5`, 0, false},
	{"unterminated_string", `"default;r=0;t=30`, 0, false},
	{"uppercase_key", `"default";R=0;t=30`, 0, false},
	{"valid_then_garbage", `"a";r=0;t=30, ;;;`, 0, false},
	{"semicolons", `;;;`, 0, false},
	{"control_character", "\"a\x01\";r=0;t=30", 0, false},

	// The Dictionary of draft -07.
	{"dict_exhausted", `limit=100, remaining=0, reset=30`, 30 * time.Second, true},
	{"dict_quota_left", `limit=100, remaining=50, reset=30`, 0, false},
	{"dict_no_remaining", `limit=20, reset=37`, 37 * time.Second, true},
	{"dict_reordered", `reset=30, remaining=0`, 30 * time.Second, true},
	{"dict_no_spaces", `limit=100,remaining=0,reset=30`, 30 * time.Second, true},
	{"dict_repeated_last_wins", `limit=100, remaining=0, reset=30, reset=10`, 10 * time.Second, true},
	{"dict_no_reset", `limit=100, remaining=0`, 0, false},
	{"dict_negative_reset", `limit=100, remaining=0, reset=-1`, 0, false},
	{"dict_token_remaining", `limit=100, remaining=zero, reset=30`, 0, false},
	{"dict_boolean_remaining", `remaining, reset=30`, 0, false},
	{"dict_unix_reset", `limit=100, remaining=0, reset=1767323105`, time.Minute, true},
	{"dict_member_parameters", `limit=100;w=60, remaining=0, reset=30;x=1`, 30 * time.Second, true},
	{"dict_inner_list", `limit=(100 10), remaining=0, reset=30`, 30 * time.Second, true},
	{"dict_spaces_around_equals", `limit = 100, remaining = 0, reset = 30`, 0, false},
	{"dict_uppercase_key", `Limit=100, remaining=0, reset=30`, 0, false},
	{"dict_trailing_comma", `remaining=0, reset=30,`, 0, false},
}

func TestParseRateLimit(t *testing.T) {
	for _, tt := range rateLimitTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.ParseRateLimit([]string{tt.v}, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseRateLimit(%q) = %v, %t; want %v, %t", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseRateLimitLines(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  time.Duration
		ok    bool
	}{
		{"list_over_two_lines", []string{`"burst";r=0;t=30`, `"daily";r=0;t=60`}, time.Minute, true},
		{"exhausted_on_second_line", []string{`"burst";r=3;t=30`, `"daily";r=0;t=60`}, time.Minute, true},
		{"empty_line_skipped", []string{``, `"a";r=0;t=9`}, 9 * time.Second, true},
		{"blank_lines_skipped", []string{" ", `"a";r=0;t=9`, "\t", `"b";r=0;t=3`, ""}, 9 * time.Second, true},
		{"three_lines", []string{`"a";r=1;t=9`, `"b";r=0;t=3`, `"c";r=0;t=4`}, 4 * time.Second, true},
		{"string_spans_lines", []string{`"a`, `b";r=0;t=5`}, 5 * time.Second, true},
		{"member_cannot_span_lines", []string{`"a";r=0`, `t=5`}, 0, false},
		{"one_line_malformed", []string{`"burst";r=0;t=30`, `"bad`}, 0, false},
		{"dict_over_two_lines", []string{`limit=100, remaining=0`, `reset=30`}, 30 * time.Second, true},
		{"dict_remaining_on_later_line", []string{`reset=30`, `remaining=4`}, 0, false},
		{"none", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryafter.ParseRateLimit(tt.lines, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseRateLimit(%q) = %v, %t; want %v, %t", tt.lines, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseSourcesIETF(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"ratelimit", http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, true},
		{"ratelimit_dict", http.Header{"Ratelimit": {`limit=10, remaining=0, reset=30`}}, 30 * time.Second, true},
		{"reset", http.Header{"Ratelimit-Reset": {"30"}}, 30 * time.Second, true},
		{"reset_remaining_zero", http.Header{"Ratelimit-Reset": {"30"}, "Ratelimit-Remaining": {"0"}}, 30 * time.Second, true},
		{"reset_remaining_positive", http.Header{"Ratelimit-Reset": {"30"}, "Ratelimit-Remaining": {"5"}}, 0, false},
		{"reset_remaining_malformed", http.Header{"Ratelimit-Reset": {"30"}, "Ratelimit-Remaining": {"x"}}, 0, false},
		{"reset_unix_gitlab", http.Header{"Ratelimit-Reset": {"1767323105"}, "Ratelimit-Remaining": {"0"}}, time.Minute, true},
		{"reset_spaces", http.Header{"Ratelimit-Reset": {" 30 "}}, 30 * time.Second, true},
		{"reset_fraction", http.Header{"Ratelimit-Reset": {"30.5"}}, 0, false},
		{"reset_negative", http.Header{"Ratelimit-Reset": {"-1"}}, 0, false},
		{"reset_first_value_counts", http.Header{"Ratelimit-Reset": {"30", "60"}}, 30 * time.Second, true},
		{"ratelimit_before_reset", http.Header{"Ratelimit": {`"a";r=0;t=10`}, "Ratelimit-Reset": {"30"}}, 10 * time.Second, true},
		{"ratelimit_not_exhausted_then_reset", http.Header{"Ratelimit": {`"a";r=5;t=10`}, "Ratelimit-Reset": {"30"}}, 30 * time.Second, true},
		{"ratelimit_malformed_then_reset", http.Header{"Ratelimit": {`"a`}, "Ratelimit-Reset": {"30"}}, 30 * time.Second, true},
		{"policy_field_is_not_read", http.Header{"Ratelimit-Policy": {`"a";q=100;w=60`}}, 0, false},
		{"x_field_is_not_read", http.Header{"X-Ratelimit-Reset": {"30"}}, 0, false},
		{"nil_header", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, from, ok := retryafter.ParseSources(tt.h, now, retryafter.IETFRateLimit)
			wantFrom := retryafter.IETFRateLimit
			if !tt.ok {
				wantFrom = 0
			}
			if d != tt.want || from != wantFrom || ok != tt.ok {
				t.Errorf("ParseSources(%v, IETFRateLimit) = %v, %v, %t; want %v, %v, %t", tt.h, d, from, ok, tt.want, wantFrom, tt.ok)
			}
		})
	}
}

func TestParseSourcesIETFFindsFieldsSetInAnyCase(t *testing.T) {
	for _, name := range []string{"ratelimit", "RateLimit", "ratelimit-reset", "RateLimit-Reset"} {
		h := http.Header{}
		h.Set(name, "limit=10, remaining=0, reset=30")
		if name == "ratelimit-reset" || name == "RateLimit-Reset" {
			h.Set(name, "30")
		}
		if d, _, ok := retryafter.ParseSources(h, now, retryafter.IETFRateLimit); d != 30*time.Second || !ok {
			t.Errorf("ParseSources(%v, IETFRateLimit) = %v, %t; want 30s, true", h, d, ok)
		}
	}
}

func TestParseSourcesIETFDoesNotAllocate(t *testing.T) {
	for _, h := range []http.Header{
		{"Ratelimit": {`"burst";r=0;t=30;pk=:dHJpYWw=:, ("x" "y");a=1, "daily";r=9;t=86400`}},
		{"Ratelimit": {`limit=100, remaining=0, reset=30`}},
		{"Ratelimit-Reset": {"30"}, "Ratelimit-Remaining": {"0"}},
	} {
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
