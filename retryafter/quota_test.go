package retryafter_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/retryafter"
)

// quotaTests are responses with the quota they publish as of now (Unix
// time 1767323045). FuzzParseQuota uses them as seeds.
var quotaTests = []struct {
	name string
	h    http.Header
	want retryafter.Quota
	from retryafter.Source
}{
	// The RateLimit List of drafts -08 and later.
	{"list", http.Header{"Ratelimit": {`"default";r=50;t=30`}}, retryafter.Quota{Remaining: 50, Reset: 30 * time.Second}, retryafter.IETFRateLimit},
	{"list_exhausted", http.Header{"Ratelimit": {`"default";r=0;t=30`}}, retryafter.Quota{Reset: 30 * time.Second}, retryafter.IETFRateLimit},
	{"list_lowest_rate_binds", http.Header{"Ratelimit": {`"burst";r=50;t=1, "daily";r=800;t=86400`}}, retryafter.Quota{Remaining: 800, Reset: 24 * time.Hour}, retryafter.IETFRateLimit},
	{"list_lowest_rate_binds_second", http.Header{"Ratelimit": {`"daily";r=800;t=86400, "burst";r=0;t=1`}}, retryafter.Quota{Reset: time.Second}, retryafter.IETFRateLimit},
	{"list_equal_rates_longer_reset", http.Header{"Ratelimit": {`"a";r=0;t=5, "b";r=0;t=60, "c";r=0;t=7`}}, retryafter.Quota{Reset: time.Minute}, retryafter.IETFRateLimit},
	{"list_reset_over_admits_anything", http.Header{"Ratelimit": {`"a";r=0;t=0, "b";r=100;t=10`}}, retryafter.Quota{Remaining: 100, Reset: 10 * time.Second}, retryafter.IETFRateLimit},
	{"list_item_without_reset_skipped", http.Header{"Ratelimit": {`"a";r=0, "b";r=9;t=3`}}, retryafter.Quota{Remaining: 9, Reset: 3 * time.Second}, retryafter.IETFRateLimit},
	{"list_item_without_remaining_skipped", http.Header{"Ratelimit": {`"a";t=30, "b";r=9;t=3`}}, retryafter.Quota{Remaining: 9, Reset: 3 * time.Second}, retryafter.IETFRateLimit},
	{"list_unix_reset", http.Header{"Ratelimit": {`"a";r=7;t=1767323105`}}, retryafter.Quota{Remaining: 7, Reset: time.Minute}, retryafter.IETFRateLimit},
	{"list_past_reset", http.Header{"Ratelimit": {`"a";r=7;t=1767320000`}}, retryafter.Quota{Remaining: 7}, retryafter.IETFRateLimit},
	{"list_two_lines", http.Header{"Ratelimit": {`"a";r=70;t=10`, `"b";r=5;t=10`}}, retryafter.Quota{Remaining: 5, Reset: 10 * time.Second}, retryafter.IETFRateLimit},
	{"list_largest_integers", http.Header{"Ratelimit": {`"a";r=999999999999999;t=999999999999999`}}, retryafter.Quota{Remaining: 999999999999999, Reset: retryafter.MaxDelay}, retryafter.IETFRateLimit},
	// The Dictionary of draft -07.
	{"dictionary", http.Header{"Ratelimit": {`limit=100, remaining=50, reset=30`}}, retryafter.Quota{Remaining: 50, Reset: 30 * time.Second}, retryafter.IETFRateLimit},
	// The separate fields of drafts -00 to -06, and GitLab's Unix reset.
	{"ietf_fields", http.Header{"Ratelimit-Remaining": {"42"}, "Ratelimit-Reset": {"12"}}, retryafter.Quota{Remaining: 42, Reset: 12 * time.Second}, retryafter.IETFRateLimit},
	{"ietf_fields_unix", http.Header{"Ratelimit-Remaining": {"42"}, "Ratelimit-Reset": {"1767323105"}}, retryafter.Quota{Remaining: 42, Reset: time.Minute}, retryafter.IETFRateLimit},
	{"ietf_fields_no_fraction", http.Header{"Ratelimit-Remaining": {"42"}, "Ratelimit-Reset": {"12.5"}}, retryafter.Quota{}, 0},
	// GitHub's and many others' X-RateLimit fields.
	{"github", http.Header{"X-Ratelimit-Remaining": {"4999"}, "X-Ratelimit-Reset": {"1767326645"}}, retryafter.Quota{Remaining: 4999, Reset: time.Hour}, retryafter.RateLimitReset},
	{"x_delta_seconds", http.Header{"X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {" 20 "}}, retryafter.Quota{Remaining: 3, Reset: 20 * time.Second}, retryafter.RateLimitReset},
	{"x_fraction", http.Header{"X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"1767323105.25"}}, retryafter.Quota{Remaining: 3, Reset: time.Minute + 250*time.Millisecond}, retryafter.RateLimitReset},
	{"x_millis", http.Header{"X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"1767323105000"}}, retryafter.Quota{Remaining: 3, Reset: time.Minute}, retryafter.RateLimitReset},
	{"x_huge_remaining_saturates", http.Header{"X-Ratelimit-Remaining": {"99999999999999999999"}, "X-Ratelimit-Reset": {"5"}}, retryafter.Quota{Remaining: math.MaxInt64, Reset: 5 * time.Second}, retryafter.RateLimitReset},
	{"x_huge_reset_saturates", http.Header{"X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {"99999999999999999999"}}, retryafter.Quota{Remaining: 1, Reset: retryafter.MaxDelay}, retryafter.RateLimitReset},
	// Precedence: the IETF fields first, and a source that yields no
	// quota gives way to the next.
	{"ietf_before_x", http.Header{"Ratelimit": {`"a";r=1;t=2`}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"4"}}, retryafter.Quota{Remaining: 1, Reset: 2 * time.Second}, retryafter.IETFRateLimit},
	{"list_before_fields", http.Header{"Ratelimit": {`"a";r=1;t=2`}, "Ratelimit-Remaining": {"3"}, "Ratelimit-Reset": {"4"}}, retryafter.Quota{Remaining: 1, Reset: 2 * time.Second}, retryafter.IETFRateLimit},
	{"malformed_list_falls_through", http.Header{"Ratelimit": {`"a";r=1;t=2,`}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"4"}}, retryafter.Quota{Remaining: 3, Reset: 4 * time.Second}, retryafter.RateLimitReset},
	// Nothing to read.
	{"reset_alone", http.Header{"X-Ratelimit-Reset": {"4"}}, retryafter.Quota{}, 0},
	{"remaining_alone", http.Header{"X-Ratelimit-Remaining": {"4"}}, retryafter.Quota{}, 0},
	{"negative_remaining", http.Header{"X-Ratelimit-Remaining": {"-1"}, "X-Ratelimit-Reset": {"4"}}, retryafter.Quota{}, 0},
	{"list_negative_remaining", http.Header{"Ratelimit": {`"a";r=-1;t=2`}}, retryafter.Quota{}, 0},
	{"list_decimal_reset", http.Header{"Ratelimit": {`"a";r=1;t=2.5`}}, retryafter.Quota{}, 0},
	{"retry_after_is_no_quota", http.Header{"Retry-After": {"5"}}, retryafter.Quota{}, 0},
	{"nil_header", nil, retryafter.Quota{}, 0},
}

func TestParseQuota(t *testing.T) {
	for _, tt := range quotaTests {
		t.Run(tt.name, func(t *testing.T) {
			got, from, ok := retryafter.ParseQuota(tt.h, now, retryafter.AllSources)
			if diff := cmp.Diff(tt.want, got); diff != "" || from != tt.from || ok != (tt.from != 0) {
				t.Errorf("ParseQuota(%v) = %v, %v, %t; want %v, %v, %t (-want +got):\n%s", tt.h, got, from, ok, tt.want, tt.from, tt.from != 0, diff)
			}
		})
	}
}

// HasQuotaFields is true wherever ParseQuota may find a quota, and false
// for the responses without a remaining count, which most are.
func TestHasQuotaFields(t *testing.T) {
	for _, tt := range quotaTests {
		_, _, ok := retryafter.ParseQuota(tt.h, now, retryafter.AllSources)
		if ok && !retryafter.HasQuotaFields(tt.h) {
			t.Errorf("%s: ParseQuota(%v) found a quota, but HasQuotaFields = false", tt.name, tt.h)
		}
	}
	for _, h := range []http.Header{nil, {}, {"Retry-After": {"5"}}, {"X-Ratelimit-Reset": {"4"}}, {"Ratelimit-Reset": {"4"}}, {"Ratelimit-Policy": {`"a";q=10;w=1`}}} {
		if retryafter.HasQuotaFields(h) {
			t.Errorf("HasQuotaFields(%v) = true; want false: no remaining count", h)
		}
	}
}

func TestParseQuotaTrustsOnlyItsSources(t *testing.T) {
	h := http.Header{"Ratelimit": {`"a";r=1;t=2`}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"4"}}
	for _, tt := range []struct {
		trusted retryafter.Source
		want    retryafter.Quota
		from    retryafter.Source
	}{
		{retryafter.AllSources, retryafter.Quota{Remaining: 1, Reset: 2 * time.Second}, retryafter.IETFRateLimit},
		{retryafter.RateLimitReset, retryafter.Quota{Remaining: 3, Reset: 4 * time.Second}, retryafter.RateLimitReset},
		{retryafter.RetryAfter | retryafter.AmzRetryAfter, retryafter.Quota{}, 0},
		{retryafter.None, retryafter.Quota{}, 0},
		{0, retryafter.Quota{}, 0},
	} {
		got, from, ok := retryafter.ParseQuota(h, now, tt.trusted)
		if got != tt.want || from != tt.from || ok != (tt.from != 0) {
			t.Errorf("ParseQuota(%v, %v) = %v, %v, %t; want %v, %v, %t", h, tt.trusted, got, from, ok, tt.want, tt.from, tt.from != 0)
		}
	}
}

// TestParseQuotaReadsExhaustedAsParseSources checks that a quota of 0
// left waits, per ParseSources, until its reset: the two read one reset.
func TestParseQuotaReadsExhaustedAsParseSources(t *testing.T) {
	for _, h := range []http.Header{
		{"Ratelimit": {`"default";r=0;t=30`}},
		{"Ratelimit": {`limit=100, remaining=0, reset=30`}},
		{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1767323105"}},
		{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1767323105.5"}},
	} {
		q, _, ok := retryafter.ParseQuota(h, now, retryafter.AllSources)
		d, _, dok := retryafter.ParseSources(h, now, retryafter.AllSources)
		if !ok || !dok || q.Remaining != 0 || q.Reset != d {
			t.Errorf("ParseQuota(%v) = %v, %t; ParseSources = %v, %t; want Remaining 0 and the same reset", h, q, ok, d, dok)
		}
	}
}

func TestParseQuotaDoesNotAllocate(t *testing.T) {
	for _, h := range []http.Header{
		{"Ratelimit": {`"burst";r=10;t=30;pk=:dHJpYWw=:, ("x" "y");a=1, "daily";r=9;t=86400`}},
		{"Ratelimit": {`limit=100, remaining=10, reset=30`}},
		{"Ratelimit-Reset": {"30"}, "Ratelimit-Remaining": {"10"}},
		{"X-Ratelimit-Reset": {"1767323105.5"}, "X-Ratelimit-Remaining": {"4999"}},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, _, ok := retryafter.ParseQuota(h, now, retryafter.AllSources); !ok {
				t.Fatalf("ParseQuota(%v) reported false", h)
			}
		})
		if allocs != 0 {
			t.Errorf("ParseQuota(%v) allocates %v times per call; want 0", h, allocs)
		}
	}
}
