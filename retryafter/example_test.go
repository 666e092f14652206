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
