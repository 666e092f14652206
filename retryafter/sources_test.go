package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// everyField holds a different delay in every field ParseSources reads,
// so the result shows which source won.
func everyField() http.Header {
	return http.Header{
		"Retry-After-Ms":        {"1500"},
		"X-Ms-Retry-After-Ms":   {"2500"},
		"X-Amz-Retry-After":     {"3500"},
		"Retry-After":           {"4"},
		"Ratelimit":             {`"default";r=0;t=5`},
		"Ratelimit-Reset":       {"7"},
		"X-Ratelimit-Reset":     {"6"},
		"X-Ratelimit-Remaining": {"0"},
	}
}

func TestParseSourcesPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		trusted retryafter.Source
		want    time.Duration
		from    retryafter.Source
	}{
		{"all", retryafter.AllSources, 1500 * time.Millisecond, retryafter.RetryAfterMS},
		{"ms_before_x_ms", retryafter.MSRetryAfterMS | retryafter.AmzRetryAfter | retryafter.RetryAfter, 2500 * time.Millisecond, retryafter.MSRetryAfterMS},
		{"amz_before_retry_after", retryafter.AmzRetryAfter | retryafter.RetryAfter, 3500 * time.Millisecond, retryafter.AmzRetryAfter},
		{"retry_after_before_ietf", retryafter.RetryAfter | retryafter.IETFRateLimit | retryafter.RateLimitReset, 4 * time.Second, retryafter.RetryAfter},
		{"ietf_before_x_reset", retryafter.IETFRateLimit | retryafter.RateLimitReset, 5 * time.Second, retryafter.IETFRateLimit},
		{"x_reset_alone", retryafter.RateLimitReset, 6 * time.Second, retryafter.RateLimitReset},
		{"unknown_bits_only", 1 << 10, 0, 0},
		{"none", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := everyField()
			d, from, ok := retryafter.ParseSources(h, now, tt.trusted)
			if d != tt.want || from != tt.from || ok != (tt.from != 0) {
				t.Errorf("ParseSources(%v, %v) = %v, %v, %t; want %v, %v, %t", h, tt.trusted, d, from, ok, tt.want, tt.from, tt.from != 0)
			}
		})
	}
}

func TestParseSourcesMalformedFallsThrough(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
		from retryafter.Source
	}{
		{"ms_to_retry_after", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"4"}}, 4 * time.Second, retryafter.RetryAfter},
		{"negative_ms_to_retry_after", http.Header{"X-Amz-Retry-After": {"-100"}, "Retry-After": {"4"}}, 4 * time.Second, retryafter.RetryAfter},
		{"every_ms_to_retry_after", http.Header{"Retry-After-Ms": {"1.5"}, "X-Ms-Retry-After-Ms": {""}, "X-Amz-Retry-After": {"1e3"}, "Retry-After": {"4"}}, 4 * time.Second, retryafter.RetryAfter},
		{"ms_to_next_ms", http.Header{"Retry-After-Ms": {"x"}, "X-Ms-Retry-After-Ms": {"250"}}, 250 * time.Millisecond, retryafter.MSRetryAfterMS},
		{"retry_after_to_ietf", http.Header{"Retry-After": {"tomorrow"}, "Ratelimit": {`"a";r=0;t=5`}}, 5 * time.Second, retryafter.IETFRateLimit},
		{"ietf_to_x_reset", http.Header{"Ratelimit": {`"a`}, "X-Ratelimit-Reset": {"6"}}, 6 * time.Second, retryafter.RateLimitReset},
		{"ietf_quota_left_to_x_reset", http.Header{"Ratelimit": {`"a";r=9;t=5`}, "X-Ratelimit-Reset": {"6"}}, 6 * time.Second, retryafter.RateLimitReset},
		{"x_reset_quota_left", http.Header{"X-Ratelimit-Reset": {"6"}, "X-Ratelimit-Remaining": {"10"}}, 0, 0},
		{"all_malformed", http.Header{"Retry-After-Ms": {"-1"}, "Retry-After": {"-1"}, "Ratelimit-Reset": {"-1"}, "X-Ratelimit-Reset": {"-1"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, from, ok := retryafter.ParseSources(tt.h, now, retryafter.AllSources)
			if d != tt.want || from != tt.from || ok != (tt.from != 0) {
				t.Errorf("ParseSources(%v) = %v, %v, %t; want %v, %v, %t", tt.h, d, from, ok, tt.want, tt.from, tt.from != 0)
			}
		})
	}
}

func TestParseSourcesIgnoresUntrustedFields(t *testing.T) {
	fields := []struct {
		src retryafter.Source
		h   http.Header
	}{
		{retryafter.RetryAfter, http.Header{"Retry-After": {"4"}}},
		{retryafter.RetryAfterMS, http.Header{"Retry-After-Ms": {"1500"}}},
		{retryafter.MSRetryAfterMS, http.Header{"X-Ms-Retry-After-Ms": {"2500"}}},
		{retryafter.AmzRetryAfter, http.Header{"X-Amz-Retry-After": {"3500"}}},
		{retryafter.RateLimitReset, http.Header{"X-Ratelimit-Reset": {"6"}}},
		{retryafter.IETFRateLimit, http.Header{"Ratelimit": {`"a";r=0;t=5`}}},
		{retryafter.IETFRateLimit, http.Header{"Ratelimit-Reset": {"7"}}},
	}
	for _, f := range fields {
		if _, from, ok := retryafter.ParseSources(f.h, now, f.src); from != f.src || !ok {
			t.Errorf("ParseSources(%v, %v) = %v, %t; want %v, true", f.h, f.src, from, ok, f.src)
		}
		untrusted := retryafter.AllSources &^ f.src
		if d, from, ok := retryafter.ParseSources(f.h, now, untrusted); d != 0 || from != 0 || ok {
			t.Errorf("ParseSources(%v, %v) = %v, %v, %t; want 0, 0, false", f.h, untrusted, d, from, ok)
		}
	}
}

func TestParseSourcesRetryAfterAgreesWithParse(t *testing.T) {
	for _, tt := range valueTests {
		h := http.Header{"Retry-After": {tt.v}}
		want, wantOK := retryafter.Parse(h, now)
		wantFrom := retryafter.Source(0)
		if wantOK {
			wantFrom = retryafter.RetryAfter
		}
		for _, trusted := range []retryafter.Source{retryafter.RetryAfter, retryafter.AllSources} {
			if d, from, ok := retryafter.ParseSources(h, now, trusted); d != want || from != wantFrom || ok != wantOK {
				t.Errorf("ParseSources(%v, %v) = %v, %v, %t; want %v, %v, %t as from Parse", h, trusted, d, from, ok, want, wantFrom, wantOK)
			}
		}
	}
}

func TestParseSourcesNilHeader(t *testing.T) {
	if d, from, ok := retryafter.ParseSources(nil, now, retryafter.AllSources); d != 0 || from != 0 || ok {
		t.Errorf("ParseSources(nil) = %v, %v, %t; want 0, 0, false", d, from, ok)
	}
}

func TestParseSourcesRetryAfterSecondsDoesNotAllocate(t *testing.T) {
	h := http.Header{"Retry-After": {"120"}, "X-Ratelimit-Reset": {"60"}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, ok := retryafter.ParseSources(h, now, retryafter.AllSources); !ok {
			t.Fatalf("ParseSources(%v) reported false", h)
		}
	})
	if allocs != 0 {
		t.Errorf("ParseSources(%v) allocates %v times per call; want 0", h, allocs)
	}
}

func TestDefaultSourcesIsAllSources(t *testing.T) {
	if retryafter.DefaultSources != retryafter.AllSources {
		t.Errorf("DefaultSources = %v; want AllSources (%v)", retryafter.DefaultSources, retryafter.AllSources)
	}
}

func TestNoneTrustsNoField(t *testing.T) {
	h := http.Header{"Retry-After": {"5"}, "X-Amz-Retry-After": {"100"}, "Ratelimit": {`"a";r=0;t=3`}}
	if d, from, ok := retryafter.ParseSources(h, time.Unix(0, 0), retryafter.None); ok {
		t.Errorf("ParseSources(None) = %v from %v; want no delay", d, from)
	}
	if retryafter.None&retryafter.AllSources != 0 {
		t.Errorf("None = %#x shares a bit with AllSources", uint16(retryafter.None))
	}
}

func TestSourceString(t *testing.T) {
	tests := []struct {
		s    retryafter.Source
		want string
	}{
		{0, "0"},
		{retryafter.RetryAfter, "Retry-After"},
		{retryafter.RetryAfterMS, "retry-after-ms"},
		{retryafter.MSRetryAfterMS, "x-ms-retry-after-ms"},
		{retryafter.AmzRetryAfter, "x-amz-retry-after"},
		{retryafter.RateLimitReset, "X-RateLimit-Reset"},
		{retryafter.IETFRateLimit, "RateLimit"},
		{retryafter.RetryAfter | retryafter.AmzRetryAfter, "Retry-After|x-amz-retry-after"},
		{retryafter.AllSources, "Retry-After|retry-after-ms|x-ms-retry-after-ms|x-amz-retry-after|X-RateLimit-Reset|RateLimit"},
		{retryafter.None, "none"},
		{1 << 6, "0x40"},
		{retryafter.RetryAfter | 1<<15 | 1<<6, "Retry-After|0x8040"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("Source(%#x).String() = %q; want %q", uint16(tt.s), got, tt.want)
		}
	}
}
