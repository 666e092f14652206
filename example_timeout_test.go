package retrytransport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url" // this package's tests declare a constant url
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// A request that runs out of time, because the next wait would pass the
// policy's MaxTotalTime (ErrTimeLimit) or the context's deadline (ErrDeadline),
// fails with a *RetryError whose Timeout reports true. The *url.Error that
// http.Client.Do returns then reports Timeout() true as well, as it does for
// a timeout without this transport.
func ExampleRetryError_Timeout() {
	// The server hangs up on every attempt without answering.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()

	get := func(ctx context.Context, p policy.Policy) {
		// The fake clock starts at the real time, so that a real context
		// deadline means the same instant to it; its Sleep records each
		// wait and moves the clock on at once.
		clk := faketime.NewAt(time.Now())
		client := &http.Client{Transport: retrytransport.New(nil,
			retrytransport.WithPolicy(p), retrytransport.WithClock(clk.Now, clk.Sleep))}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		_, err := client.Do(req)

		var re *retrytransport.RetryError
		if !errors.As(err, &re) {
			fmt.Println("not a RetryError:", err)
			return
		}
		var ue *neturl.Error
		errors.As(err, &ue)
		fmt.Println("attempts:", re.Attempts, "waits:", clk.Sleeps())
		fmt.Println("time limit:", errors.Is(err, retrytransport.ErrTimeLimit),
			"deadline:", errors.Is(err, retrytransport.ErrDeadline))
		fmt.Println("RetryError.Timeout:", re.Timeout(), "url.Error.Timeout:", ue.Timeout())
	}

	// Waits of 10s, and 15s for the whole request: the second wait would
	// end after 20s, so it is not started.
	p := policy.Policy{MaxAttempts: 10, Backoff: backoff.Constant{Interval: 10 * time.Second}}
	withLimit := p
	withLimit.MaxTotalTime = 15 * time.Second
	get(context.Background(), withLimit)

	// The same with the caller's deadline in place of MaxTotalTime.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	get(ctx, p)

	// Giving up for want of attempts is not a timeout.
	get(context.Background(), policy.Policy{MaxAttempts: 2, Backoff: backoff.Constant{Interval: 10 * time.Second}})
	// Output:
	// attempts: 2 waits: [10s]
	// time limit: true deadline: false
	// RetryError.Timeout: true url.Error.Timeout: true
	// attempts: 2 waits: [10s]
	// time limit: false deadline: true
	// RetryError.Timeout: true url.Error.Timeout: true
	// attempts: 2 waits: [10s]
	// time limit: false deadline: false
	// RetryError.Timeout: false url.Error.Timeout: false
}
