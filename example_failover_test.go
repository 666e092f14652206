package retrytransport_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

// A read whose primary fails goes to the secondary; a write stays on the
// primary.
func ExampleWithHostPolicy_failover() {
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer primary.Close()
	secondary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "from the secondary")
	}))
	defer secondary.Close()

	p := policy.Policy{
		Failover: &policy.Failover{Endpoints: []string{strings.TrimPrefix(secondary.URL, "http://")}, Mode: policy.PrimaryThenSecondary},
		Backoff:  backoff.Constant{}, // no wait between attempts
	}
	client := &http.Client{Transport: retrytransport.New(nil,
		retrytransport.WithHostPolicy("127.0.0.1", p),
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if !e.Final {
				fmt.Println("attempt", e.Attempt, e.StatusCode, "then retry at the next endpoint")
			}
		}))}

	resp, err := client.Get(primary.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))

	resp, err = client.Post(primary.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("POST:", resp.StatusCode)
	// Output:
	// attempt 1 503 then retry at the next endpoint
	// 200 from the secondary
	// POST: 503
}

// A slow answer gets a hedge; the first answer wins.
func ExampleWithHostPolicy_hedging() {
	var n atomic.Int32
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 { // the first copy is stuck
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprintln(w, "from the hedge")
	}))
	defer srv.Close()

	p := policy.Policy{Hedge: &policy.Hedge{Delay: 20 * time.Millisecond}}
	t := retrytransport.New(nil, retrytransport.WithHostPolicy("127.0.0.1", p))
	client := &http.Client{Transport: t}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	s := t.Snapshot()[0]
	fmt.Println("attempts:", s.Attempts, "hedges:", s.Hedges)
	// Output:
	// from the hedge
	// attempts: 2 hedges: 1
}
