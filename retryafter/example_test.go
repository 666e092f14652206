package retryafter_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

func ExampleParse() {
	// A fixed now keeps the example repeatable; real callers pass the
	// time the response arrived.
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, v := range []string{"120", "Fri, 02 Jan 2026 03:06:35 GMT", "soon"} {
		h := http.Header{}
		h.Set("Retry-After", v)
		d, ok := retryafter.Parse(h, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 2m30s true
	// 0s false
}

func ExampleParseValue() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// A date in the past means "now": no wait.
	fmt.Println(retryafter.ParseValue("Thu, 01 Jan 2026 00:00:00 GMT", now))
	// An absurd number of seconds saturates; the caller's cap decides.
	d, ok := retryafter.ParseValue("99999999999999999999999", now)
	fmt.Println(d == retryafter.MaxDelay, ok)
	// Output:
	// 0s true
	// true true
}

func ExampleParseSources() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// An Azure OpenAI 429: milliseconds win over whole seconds.
	azure := http.Header{}
	azure.Set("retry-after-ms", "1500")
	azure.Set("retry-after", "2")
	fmt.Println(retryafter.ParseSources(azure, now, retryafter.DefaultSources))

	// A GitHub 403 for an exhausted primary rate limit: X-RateLimit-Reset
	// is a Unix time, 60 seconds after now.
	github := http.Header{}
	github.Set("x-ratelimit-remaining", "0")
	github.Set("x-ratelimit-reset", "1767323105")
	fmt.Println(retryafter.ParseSources(github, now, retryafter.DefaultSources))

	// The same reset with quota left asks for nothing.
	github.Set("x-ratelimit-remaining", "4999")
	fmt.Println(retryafter.ParseSources(github, now, retryafter.DefaultSources))

	// IETF RateLimit: the exhausted policy's reset counts.
	ietf := http.Header{}
	ietf.Set("ratelimit", `"burst";r=0;t=30, "daily";r=800;t=86400`)
	fmt.Println(retryafter.ParseSources(ietf, now, retryafter.DefaultSources))

	// A field outside the trusted set is ignored.
	fmt.Println(retryafter.ParseSources(azure, now, retryafter.RetryAfter))
	// Output:
	// 1.5s retry-after-ms true
	// 1m0s X-RateLimit-Reset true
	// 0s 0 false
	// 30s RateLimit true
	// 2s Retry-After true
}

func ExampleRemaining() {
	h := http.Header{}
	h.Set("x-ratelimit-remaining", "0")
	n, ok := retryafter.Remaining(h)
	fmt.Println(n, ok)
	// Output: 0 true
}

func ExampleSource_String() {
	fmt.Println(retryafter.RetryAfter | retryafter.AmzRetryAfter)
	fmt.Println(retryafter.AllSources)
	// Output:
	// Retry-After|x-amz-retry-after
	// Retry-After|retry-after-ms|x-ms-retry-after-ms|x-amz-retry-after|X-RateLimit-Reset|RateLimit
}

func ExampleParseQuota() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// GitHub, on any response: 4999 requests left until a Unix time an
	// hour from now.
	github := http.Header{}
	github.Set("x-ratelimit-remaining", "4999")
	github.Set("x-ratelimit-reset", "1767326645")
	q, from, ok := retryafter.ParseQuota(github, now, retryafter.DefaultSources)
	fmt.Println(q.Remaining, q.Reset, from, ok)

	// IETF RateLimit with two policies: the one that admits the lower
	// rate binds (800 a day is slower than 50 a second).
	ietf := http.Header{}
	ietf.Set("ratelimit", `"burst";r=50;t=1, "daily";r=800;t=86400`)
	q, from, ok = retryafter.ParseQuota(ietf, now, retryafter.DefaultSources)
	fmt.Println(q.Remaining, q.Reset, from, ok)
	// Output:
	// 4999 1h0m0s X-RateLimit-Reset true
	// 800 24h0m0s RateLimit true
}
