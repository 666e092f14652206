package retrytransport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

// A test replaces the Transport's timer, so that its waits are recorded
// instead of slept and the test runs in microseconds; with a fixed Rand as
// well, the waits are the same on every run.
func ExampleWithClock() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 { // no Retry-After: the backoff sets the waits
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d) // one request at a time here; guard it otherwise
		return ctx.Err()
	}
	p := policy.Standard()
	// Full jitter draws uniformly below min(Base*2^(retry-1), Max); a Rand
	// of 0.5 draws half of that: 500ms before retry 1, 1s before retry 2.
	p.Backoff = backoff.FullJitter{Rand: func() float64 { return 0.5 }}
	client := &http.Client{Transport: retrytransport.New(nil,
		retrytransport.WithPolicy(p),
		retrytransport.WithClock(nil, sleep)), // nil keeps the real clock
	}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "after", retrytransport.ResponseAttempts(resp).Count, "attempts")
	fmt.Println("waits:", waits)
	// Output:
	// 200 OK after 3 attempts
	// waits: [500ms 1s]
}
