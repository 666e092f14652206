package retrytransport_test

// Faults in the headers a server sends: absurd Retry-After and rate-limit
// headers, against a small MaxDelay, on throttled POSTs, and a quota wait
// that would pass MaxDelay.

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// The waits these tests expect, with halfJitter (retry 1 waits 500 ms) and
// the default MaxDelay (20 s). A nil want means the response is returned at
// once, with no wait and no second attempt.
var (
	backoffWait = []time.Duration{500 * time.Millisecond}
	returned    []time.Duration
)

// TestFaultAbsurdRetryAfter: Retry-After values that are huge, negative,
// not numbers, far-future or past dates, or repeated. The transport never
// panics, never waits longer than MaxDelay, returns the response at once
// when the server asks for more, and otherwise falls back to its backoff
// for a value it cannot read (RFC 9110 §10.2.3: 1*DIGIT or an HTTP-date).
func TestFaultAbsurdRetryAfter(t *testing.T) {
	noLeaks(t)
	const ra = "Retry-After"
	tests := []struct {
		name   string
		header http.Header
		want   []time.Duration
	}{
		{"Huge", h(ra, "99999999999999999999"), returned},
		{"MaxInt64", h(ra, "9223372036854775807"), returned},
		{"HundredThousandDigits", h(ra, strings.Repeat("9", 100_000)), returned},
		{"Year9999", h(ra, "Fri, 31 Dec 9999 23:59:59 GMT"), returned},
		{"JustAboveMaxDelay", h(ra, "21"), returned},
		{"AtMaxDelay", h(ra, "20"), []time.Duration{20 * time.Second}},
		{"Zero", h(ra, "0"), []time.Duration{0}},
		{"PastDate", h(ra, "Thu, 01 Jan 1970 00:00:00 GMT"), []time.Duration{0}},
		{"Spaces", h(ra, " \t3 \t"), []time.Duration{3 * time.Second}},
		{"Negative", h(ra, "-5"), backoffWait},
		{"Plus", h(ra, "+5"), backoffWait},
		{"Word", h(ra, "abc"), backoffWait},
		{"Exponent", h(ra, "1e3"), backoffWait},
		{"Fraction", h(ra, "1.5"), backoffWait},
		{"Hex", h(ra, "0x10"), backoffWait},
		{"Empty", h(ra, ""), backoffWait},
		{"Unit", h(ra, "5s"), backoffWait},
		{"InnerSpace", h(ra, "1 0"), backoffWait},
		{"DateInLocalZone", h(ra, "Fri, 31 Dec 9999 23:59:59 PST"), backoffWait},
		{"ControlBytes", h(ra, "\x00\x01\xff"), backoffWait},
		{"TwoValuesFirstCounts", h(ra, "2", ra, "99999"), []time.Duration{2 * time.Second}},
		{"TwoValuesFirstMalformed", h(ra, "abc", ra, "2"), backoffWait},
		{"CommaList", h(ra, "2, 3"), backoffWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkServerDelay(t, policy.Standard(), tt.header, tt.want)
		})
	}
}

// TestFaultAbsurdRateLimitHeaders: the other delay headers (X-RateLimit-
// Reset, the IETF RateLimit fields, the millisecond fields) with absurd or
// malformed values. Whatever a header is taken to mean, the transport never
// panics and never waits longer than MaxDelay: it either retries after a
// wait within the cap or returns the response at once.
func TestFaultAbsurdRateLimitHeaders(t *testing.T) {
	noLeaks(t)
	const (
		xReset, xRemaining = "X-RateLimit-Reset", "X-RateLimit-Remaining"
		rl, rlReset        = "RateLimit", "RateLimit-Reset"
	)
	headers := map[string]http.Header{
		"XResetHuge":              h(xReset, "99999999999999999999", xRemaining, "0"),
		"XResetNegative":          h(xReset, "-1", xRemaining, "0"),
		"XResetExponent":          h(xReset, "1e309", xRemaining, "0"),
		"XResetNaN":               h(xReset, "NaN", xRemaining, "0"),
		"XResetLongFraction":      h(xReset, "1."+strings.Repeat("9", 10_000), xRemaining, "0"),
		"XResetThirtyYears":       h(xReset, "999999999", xRemaining, "0"),
		"XResetFarUnixSeconds":    h(xReset, "999999999999", xRemaining, "0"),
		"XResetFarUnixMillis":     h(xReset, "9999999999999999999", xRemaining, "0"),
		"XResetWithQuotaLeft":     h(xReset, "99999999999999999999", xRemaining, "5"),
		"XRemainingGarbage":       h(xReset, "30", xRemaining, "zero"),
		"RateLimitHugeT":          h(rl, `"burst";r=0;t=99999999999999999999`),
		"RateLimitNegativeT":      h(rl, `"burst";r=0;t=-5`),
		"RateLimitGarbage":        h(rl, `;;;===,,,"`),
		"RateLimitUnclosedString": h(rl, `"burst;r=0;t=3`),
		"RateLimitDictionaryHuge": h(rl, "limit=100, remaining=0, reset=99999999999999999999"),
		"RateLimitManyLines":      h(rl, `"a";r=0;t=1`, rl, ``, rl, `"b";r=0;t=99999999999`, rl, `garbage((`),
		"RateLimitDeepNesting":    h(rl, strings.Repeat("(", 10_000)),
		"IETFResetHuge":           h(rlReset, "99999999999999999999", "RateLimit-Remaining", "0"),
		"RetryAfterMSHuge":        h("Retry-After-Ms", "99999999999999999999999"),
		"RetryAfterMSNegative":    h("Retry-After-Ms", "-100"),
		"MSRetryAfterMSFraction":  h("X-Ms-Retry-After-Ms", "1.5"),
		"AmzRetryAfterHuge":       h("X-Amz-Retry-After", "18446744073709551616"),
		"AllAtOnceHuge": h("Retry-After", "99999999999999999999", xReset, "99999999999999999999", xRemaining, "0",
			rl, `"q";r=0;t=99999999999999999999`, "Retry-After-Ms", "99999999999999999999"),
	}
	for name, header := range headers {
		for _, status := range []int{429, 503} {
			t.Run(fmt.Sprint(name, "_", status), func(t *testing.T) {
				s := &script{steps: []step{{status: status, header: header, body: "busy"}, {status: 200, body: "ok"}}}
				tr := newRig(t, s, policy.Standard())
				resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
				if err != nil {
					t.Fatalf("RoundTrip(%d with %v): %v", status, header, err)
				}
				checkWithinCap(t, resp, s.count(), tr.clock.Sleeps(), policy.DefaultMaxDelay)
			})
		}
	}
}

// checkServerDelay sends a GET answered by a 503 with header, then 200, and
// checks the waits and the response: the 200 after the waits in want, or
// the 503 intact, at once, if want is nil.
func checkServerDelay(t *testing.T, p policy.Policy, header http.Header, want []time.Duration) {
	t.Helper()
	s := &script{steps: []step{{status: 503, header: header, body: "busy"}, {status: 200, body: "ok"}}}
	tr := newRig(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip(503 with %q): %v", header, err)
	}
	wantStatus, wantBody := 200, "ok"
	if want == nil {
		wantStatus, wantBody = 503, "busy"
	}
	if got := readBody(t, resp); resp.StatusCode != wantStatus || got != wantBody {
		t.Errorf("RoundTrip(503 with %q) = %d %q; want %d %q", header, resp.StatusCode, got, wantStatus, wantBody)
	}
	if diff := cmp.Diff(want, tr.clock.Sleeps()); diff != "" {
		t.Errorf("RoundTrip(503 with %q) waits mismatch (-want +got):\n%s", header, diff)
	}
}

// checkWithinCap checks the result of a request whose first answer asked
// for some delay and whose second is 200 ok: either the request was sent
// again after waits of at most maxDelay, or the first response came back
// intact, at once.
func checkWithinCap(t *testing.T, resp *http.Response, attempts int, sleeps []time.Duration, maxDelay time.Duration) {
	t.Helper()
	body := readBody(t, resp)
	for _, d := range sleeps {
		if d < 0 || d > maxDelay {
			t.Errorf("waited %v; want a wait in [0, %v]", d, maxDelay)
		}
	}
	switch {
	case attempts == 2 && len(sleeps) == 1 && resp.StatusCode == 200 && body == "ok":
	case attempts == 1 && len(sleeps) == 0 && resp.StatusCode != 200 && body == "busy":
	default:
		t.Errorf("%d attempts, waits %v, response %d %q; want a retry within the cap, or the first response at once", attempts, sleeps, resp.StatusCode, body)
	}
}

// TestFaultRetryAfterAgainstSmallMaxDelay: the cap is the policy's, not
// the default: with MaxDelay 5 s a Retry-After of 5 is slept and one of 6
// returns the response.
func TestFaultRetryAfterAgainstSmallMaxDelay(t *testing.T) {
	p := policy.Policy{MaxDelay: 5 * time.Second}
	checkServerDelay(t, p, retryAfter(5), []time.Duration{5 * time.Second})
	checkServerDelay(t, p, retryAfter(6), returned)
}

// TestFaultAbsurdRetryAfterOnThrottledPost: a throttled POST may be sent
// again (the server did not process it), but not after an absurd wait: the
// 429 comes back at once and the POST is sent once.
func TestFaultAbsurdRetryAfterOnThrottledPost(t *testing.T) {
	s := &script{steps: []step{{status: 429, header: h("Retry-After", "99999999999999999999"), body: "busy"}, {status: 200, body: "ok"}}}
	var stops []error
	tr := newRig(t, s, policy.Standard(), withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) { stops = append(stops, e.Stop) })))
	resp, err := tr.RoundTrip(newReq(t, "POST", url, "charge $10"))
	if err != nil {
		t.Fatalf("RoundTrip(POST): %v", err)
	}
	checkWithinCap(t, resp, s.count(), tr.clock.Sleeps(), policy.DefaultMaxDelay)
	if s.count() != 1 || len(stops) != 1 || !errors.Is(stops[0], retrytransport.ErrServerDelay) {
		t.Errorf("POST answered 429 with a huge Retry-After: %d attempts, stops %v; want 1 attempt and ErrServerDelay", s.count(), stops)
	}
}

// TestFaultServerDelayBoundHuge: a ServerDelay.Bound so large that backoff
// plus bound overflows still means "the server's delay, up to MaxDelay".
func TestFaultServerDelayBoundHuge(t *testing.T) {
	checkServerDelay(t, policy.Policy{ServerDelay: policy.ServerDelay{Bound: math.MaxInt64}}, retryAfter(3), []time.Duration{3 * time.Second})
}

// TestFaultQuotaWaitNeverPassesMaxDelay: a retry quota in Wait mode with a
// tiny refill rate asks for a wait of hours once its bucket is empty. MaxDelay
// "caps every wait before a retry", so the transport must not sleep that
// long: it may return at once, but never wait past the cap.
func TestFaultQuotaWaitNeverPassesMaxDelay(t *testing.T) {
	s := &script{steps: []step{{status: 503, body: "busy"}}}
	q := &quota.Bucket{Capacity: 10, RetryCost: 10, Wait: true, RefillPerSecond: 0.001}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2, Quota: q})
	q.Now = tr.clock.Now
	for i := range 3 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		resp.Body.Close()
	}
	for _, d := range tr.clock.Sleeps() {
		if d > policy.DefaultMaxDelay {
			t.Errorf("waited %v before a retry; want at most MaxDelay (%v)", d, policy.DefaultMaxDelay)
		}
	}
}
