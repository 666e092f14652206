package retrytransport_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// Snapshot reports, per scope, what the Transport sent and the level of the
// scope's retry quota. Under policy.Standard() the quota of each scope
// holds 500 tokens and starts full; a retry after a 503 costs 5 of them, a
// retry after a throttle (429) costs 10; a retry that succeeds gets its
// cost back, a first attempt that succeeds adds 1, and a request that
// fails for good gives nothing back.
func ExampleTransport_Snapshot() {
	// The server fails by path: /flaky the first two attempts it sees,
	// /throttled the first one, /down every one.
	var mu sync.Mutex
	hits := make(map[string]int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		n := hits[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/down", r.URL.Path == "/flaky" && n <= 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/throttled" && n == 1:
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()

	// A scope is the request's host:port by default, and httptest's port
	// changes from run to run; a Scope function that keys the quota by
	// path gives this example one scope per behaviour, with stable names.
	p := policy.Standard()
	p.Scope = func(r *http.Request) string { return r.URL.Path }
	clk := faketime.New() // backoff waits return at once
	t := retrytransport.New(nil, retrytransport.WithPolicy(p), retrytransport.WithClock(clk.Now, clk.Sleep))
	client := &http.Client{Transport: t}

	for _, path := range []string{"/flaky", "/flaky", "/flaky", "/throttled", "/down"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}

	// /down: 3 attempts, all 503: 2 retries paid 5 each, none refunded:
	// 500 - 10 = 490.
	// /flaky: the first request took 3 attempts (503, 503, 200): 2 retries
	// paid 5 each and the successful one got its 5 back (495); the other
	// two requests succeeded at once and added 1 each: 497.
	// /throttled: one retry after a 429 paid 10, and got it back when it
	// succeeded: 500.
	for _, s := range t.Snapshot() { // sorted by scope
		fmt.Printf("%-10s attempts %d, retries %d, throttles %d, quota %.0f\n",
			s.Scope, s.Attempts, s.Retries, s.Throttles, s.Quota)
	}
	// Output:
	// /down      attempts 3, retries 2, throttles 0, quota 490
	// /flaky     attempts 5, retries 2, throttles 0, quota 497
	// /throttled attempts 2, retries 1, throttles 1, quota 500
}
