package retrytransport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// One call with rules of its own: a batch upload may take ten attempts,
// while every other request of the client keeps its host's three. The
// RequestPolicy is compiled once and reused for every upload; the upload's
// retries still pay the host's retry quota, in the host's scope.
func ExampleWithRequestPolicy() {
	// The server answers 503 to everything, so each request makes every
	// attempt its rules allow.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	clk := faketime.New() // backoff waits return at once
	client := &http.Client{Transport: retrytransport.New(base, retrytransport.WithClock(clk.Now, clk.Sleep))}

	uploads := retrytransport.NewRequestPolicy(policy.Policy{
		MaxAttempts: 10,
		Backoff:     backoff.FullJitter{Base: 100 * time.Millisecond, Max: 5 * time.Second},
	})

	ctx := retrytransport.WithRequestPolicy(context.Background(), uploads)
	upload, err := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/batch", strings.NewReader("rows"))
	if err != nil {
		fmt.Println(err)
		return
	}
	status, err := http.NewRequest("GET", srv.URL+"/status", nil) // the host's rules
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []*http.Request{upload, status} {
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%s %-7s attempts: %d, then %s\n", req.Method, req.URL.Path, retrytransport.ResponseAttempts(resp).Count, resp.Status)
	}
	// Output:
	// PUT /batch  attempts: 10, then 503 Service Unavailable
	// GET /status attempts: 3, then 503 Service Unavailable
}

// A health check must never be retried: its caller wants to know now.
// WithoutRetries gives it one attempt, and its response as it came.
func ExampleWithoutRetries() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	clk := faketime.New()
	client := &http.Client{Transport: retrytransport.New(base, retrytransport.WithClock(clk.Now, clk.Sleep))}

	req, err := http.NewRequestWithContext(retrytransport.WithoutRetries(context.Background()), "GET", srv.URL+"/healthz", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "after", retrytransport.ResponseAttempts(resp).Count, "attempt")
	// Output: 503 Service Unavailable after 1 attempt
}
