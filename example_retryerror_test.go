package retrytransport_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url" // this package's tests declare a constant url
	"strings"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// A request whose attempts get no response fails with a *RetryError, which
// http.Client.Do wraps in a *url.Error. errors.As finds it through the
// wrapping, and errors.Is sees both why retrying stopped (its Reason) and
// the last attempt's error (its Err).
func ExampleRetryError() {
	// The server hangs up on every attempt without answering.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()

	p := policy.Standard()
	// A fixed Rand makes full jitter wait half its range: 500ms, then 1s.
	p.Backoff = backoff.FullJitter{Rand: func() float64 { return 0.5 }}
	clk := faketime.New() // the waits are recorded, not slept
	client := &http.Client{Transport: retrytransport.New(nil,
		retrytransport.WithPolicy(p), retrytransport.WithClock(clk.Now, clk.Sleep))}

	show := func(err error) {
		var ue *neturl.Error
		fmt.Println("url.Error:", errors.As(err, &ue), ue.Op)
		var re *retrytransport.RetryError
		if !errors.As(err, &re) {
			fmt.Println("not a RetryError:", err)
			return
		}
		fmt.Println("attempts:", re.Attempts, "waited:", re.Waited)
		fmt.Println("exhausted:", errors.Is(re.Reason, retrytransport.ErrExhausted),
			"not retryable:", errors.Is(re.Reason, retrytransport.ErrNotRetryable))
		fmt.Println("cause:", re.Err, "| io.EOF:", errors.Is(err, io.EOF))
		fmt.Println(re)
	}

	// A GET is idempotent: it is sent 3 times, then the Transport gives up.
	_, err := client.Get(srv.URL)
	show(err)

	// A POST is not: the server may have processed it before hanging up,
	// so it is not sent again.
	_, err = client.Post(srv.URL, "text/plain", strings.NewReader("order #1"))
	show(err)
	// Output:
	// url.Error: true Get
	// attempts: 3 waited: 1.5s
	// exhausted: true not retryable: false
	// cause: EOF | io.EOF: true
	// retrytransport: gave up after 3 attempts (attempts exhausted): EOF
	// url.Error: true Post
	// attempts: 1 waited: 0s
	// exhausted: false not retryable: true
	// cause: EOF | io.EOF: true
	// retrytransport: gave up after 1 attempt (not retryable): EOF
}
