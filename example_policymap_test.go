package retrytransport_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// Per-host policies from a configuration file: an exact host, a wildcard
// and a default. An exact pattern wins over a wildcard, and a wildcard
// matches only names below its domain, so example.com itself gets the
// default.
func ExampleWithPolicyMap() {
	config := `{
	  "default": {"preset": "standard"},
	  "hosts": {
	    "api.example.com": {"maxAttempts": 5},
	    "*.example.com": {"preset": "none"}
	  }
	}`
	m, err := policy.LoadMap(strings.NewReader(config)) // checks the patterns and policies
	if err != nil {
		fmt.Println(err)
		return
	}

	// The server answers 503 to everything, so each request makes every
	// attempt its policy allows.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	// For the example, a base that sends every host's requests to the test
	// server; a program would pass nil for the default base.
	base := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	defer base.CloseIdleConnections()

	clk := faketime.New() // backoff waits return at once
	client := &http.Client{Transport: retrytransport.New(base,
		retrytransport.WithPolicyMap(m), retrytransport.WithClock(clk.Now, clk.Sleep))}

	for _, host := range []string{"api.example.com", "www.example.com", "example.com", "other.example.org"} {
		resp, err := client.Get("http://" + host + "/")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%-17s attempts: %d, then %s\n", host, retrytransport.ResponseAttempts(resp).Count, resp.Status)
	}
	// Output:
	// api.example.com   attempts: 5, then 503 Service Unavailable
	// www.example.com   attempts: 1, then 503 Service Unavailable
	// example.com       attempts: 3, then 503 Service Unavailable
	// other.example.org attempts: 3, then 503 Service Unavailable
}
