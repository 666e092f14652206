package retrytransport_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

// flakyServer answers 503 (with Retry-After: 0, so the example does not
// wait) to the first failures requests, then 200.
func flakyServer(failures int32) *httptest.Server {
	var n atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= failures {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
}

// One line makes a client retry like the AWS SDKs' standard mode: the
// Transport of an http.Client. Here the server fails the first request
// with a 503, and the client's Get returns the 200 of the second attempt.
func Example() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0") // retry at once, so that the example does not wait
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	client := &http.Client{Transport: retrytransport.New(nil)}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s after %d attempts: %s\n", resp.Status, retrytransport.ResponseAttempts(resp).Count, body)
	// Output: 200 OK after 2 attempts: hello
}

// New wraps the transport a client already has, which keeps its settings
// (proxy, TLS, timeouts, connection pool) for every attempt; a nil base
// means a pooled transport of the Transport's own.
func ExampleNew() {
	srv := flakyServer(2)
	defer srv.Close()

	base := &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: 10 * time.Second}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: retrytransport.New(base)}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// WithPolicy sets the policy of every host that no WithHostPolicy pattern
// matches. Start from a preset and change what differs: here five
// attempts, the first included, for a server that fails four times.
func ExampleWithPolicy() {
	srv := flakyServer(4)
	defer srv.Close()

	p := policy.Standard()
	p.MaxAttempts = 5
	client := &http.Client{Transport: retrytransport.New(nil, retrytransport.WithPolicy(p))}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, "after", retrytransport.ResponseAttempts(resp).Count, "attempts")
	// Output: 200 OK after 5 attempts
}

// The zero Transport is ready to use, as http.Transport's is: it behaves
// as New(nil).
func ExampleTransport_zeroValue() {
	srv := flakyServer(1)
	defer srv.Close()

	client := &http.Client{Transport: &retrytransport.Transport{}}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 200
}

// Give each host its own policy; hosts that no pattern matches get the
// WithPolicy default (policy.Standard() if none is given).
func ExampleWithHostPolicy() {
	srv := flakyServer(4)
	defer srv.Close()

	transport := retrytransport.New(nil,
		retrytransport.WithPolicy(policy.Standard()),
		// Our own flaky service on 127.0.0.1: more attempts, shorter waits.
		retrytransport.WithHostPolicy("127.0.0.1", policy.Policy{
			MaxAttempts: 5,
			Backoff:     backoff.FullJitter{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		}),
		// A payment API: never retry.
		retrytransport.WithHostPolicy("*.payments.example", policy.None()),
	)
	client := &http.Client{Transport: transport}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// Wrapping an SDK: give it an http.Client over the Transport, and turn the
// SDK's own retries off, or the server sees their product. The AWS SDKs
// design every operation, POSTs included, to be idempotent, so the policy
// may retry them after any retryable failure. With the AWS SDK for Go v2:
//
//	cfg, err := config.LoadDefaultConfig(ctx,
//		config.WithHTTPClient(httpClient),
//		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
//	)
//
// Should the SDK's retries stay on, the Transport sees its amz-sdk-request
// header and sends each of the SDK's attempts once (see
// policy.Policy.IgnoreSDKAttempts). examples/sdk wraps four SDKs this way.
func ExampleNew_awsSDK() {
	p := policy.Standard()
	p.RetryNonIdempotent = true
	httpClient := &http.Client{Transport: retrytransport.New(nil, retrytransport.WithPolicy(p))}
	_ = httpClient // the SDK's HTTP client, as above
}

// An observer sees each retry, with the outcome and the wait, and how the
// request ended.
func ExampleWithObserver() {
	srv := flakyServer(2)
	defer srv.Close()

	transport := retrytransport.New(nil, retrytransport.WithObserver(func(e retrytransport.Event) {
		switch {
		case e.Final && e.Stop == nil:
			fmt.Printf("attempt %d: %s; recovered after waiting %v\n", e.Attempt, e.Outcome.Kind, e.Waited)
		case e.Final:
			fmt.Printf("attempt %d: %s; gave up: %v\n", e.Attempt, e.Outcome.Kind, e.Stop)
		default:
			fmt.Printf("attempt %d: %s (%s), retrying in %v (server asked: %t)\n",
				e.Attempt, e.Outcome.Kind, e.Outcome.Reason, e.Delay, e.ServerDelay)
		}
	}))
	resp, err := (&http.Client{Transport: transport}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// attempt 1: transient (status 503), retrying in 0s (server asked: true)
	// attempt 2: transient (status 503), retrying in 0s (server asked: true)
	// attempt 3: success; recovered after waiting 0s
	// 200 OK
}

// A final observer hears of every request once, also of those that
// succeeded at once, so it can count requests and their attempts, as a
// metrics exporter does.
func ExampleWithFinalObserver() {
	srv := flakyServer(1)
	defer srv.Close()

	var requests, attempts int
	transport := retrytransport.New(nil, retrytransport.WithFinalObserver(func(e retrytransport.Event) {
		requests++
		attempts += e.Attempt
	}))
	client := &http.Client{Transport: transport}
	for range 3 { // the first request needs a retry, the others do not
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	fmt.Printf("%d requests, %d attempts\n", requests, attempts)
	// Output:
	// 3 requests, 4 attempts
}

// A *slog.Logger receives the same decisions: each retry at Debug, and how
// a request that needed retries ended at Info, so slog.Default() shows the
// requests that recovered or gave up. Without a logger the transport is
// silent.
func ExampleWithLogger() {
	srv := flakyServer(1)
	defer srv.Close()

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "scope" || a.Key == "url" {
				return slog.Attr{} // keep the example's output stable
			}
			return a
		},
	}))
	transport := retrytransport.New(nil, retrytransport.WithLogger(logger))
	resp, err := (&http.Client{Transport: transport}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// level=DEBUG msg="retrytransport: retrying" method=GET attempt=1 outcome=transient reason="status 503" status=503 delay=0s server_delay=true waited=0s quota=495
	// level=INFO msg="retrytransport: recovered" method=GET attempts=2 outcome=success status=200 waited=0s quota=500
}

// A caller holding only the response can learn what it took.
func ExampleResponseAttempts() {
	srv := flakyServer(2)
	defer srv.Close()

	client := &http.Client{Transport: retrytransport.New(nil)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	a := retrytransport.ResponseAttempts(resp)
	fmt.Printf("%s after %d attempts, %v of waiting\n", resp.Status, a.Count, a.Waited)
	// Output: 200 OK after 3 attempts, 0s of waiting
}

// An inner RoundTripper, here a base transport that tags each attempt for
// the server's logs, reads the attempt's number from its context.
func ExampleAttemptFromContext() {
	srv := flakyServer(1)
	defer srv.Close()

	base := http.DefaultTransport
	tagging := roundTripper(func(r *http.Request) (*http.Response, error) {
		a := retrytransport.AttemptFromContext(r.Context())
		fmt.Printf("attempt %d, waited %v before it\n", a.Count, a.Waited)
		return base.RoundTrip(r)
	})
	client := &http.Client{Transport: retrytransport.New(tagging)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// attempt 1, waited 0s before it
	// attempt 2, waited 0s before it
}

// A hook refreshes a bearer token before each retry: a long wait may have
// outlived the one the request was sent with. It could also sign the
// request again, or refuse the retry with an error.
func ExampleWithBeforeRetry() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("server got", r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	transport := retrytransport.New(nil, retrytransport.WithBeforeRetry(func(req *http.Request, prev retrytransport.Event) error {
		req.Header.Set("Authorization", "Bearer fresh") // the retry's own copy of the header
		return nil
	}))
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Authorization", "Bearer stale")
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// server got Bearer stale
	// server got Bearer fresh
	// 200 OK
}

// roundTripper is a RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
