package retrytransport_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
)

// A circuit breaker fails requests at once while their server does not
// answer: here, after 5 connections refused in a row.
func ExampleWithPolicy_breaker() {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now: every connection is refused

	p := policy.Standard()
	p.MaxAttempts = 1
	p.Breaker = &breaker.Circuit{}
	client := &http.Client{Transport: retrytransport.New(nil, retrytransport.WithPolicy(p))}

	for i := 1; i <= 6; i++ {
		_, err := client.Get(url)
		var oe *breaker.OpenError
		if errors.As(err, &oe) {
			fmt.Printf("request %d: refused at once; last failure refused: %v\n", i, errors.Is(oe, syscall.ECONNREFUSED))
			continue
		}
		fmt.Printf("request %d: sent, and the connection was refused\n", i)
	}
	// Output:
	// request 1: sent, and the connection was refused
	// request 2: sent, and the connection was refused
	// request 3: sent, and the connection was refused
	// request 4: sent, and the connection was refused
	// request 5: sent, and the connection was refused
	// request 6: refused at once; last failure refused: true
}

// A concurrency limit refuses what is over it at once, with an error that
// matches concurrency.ErrLimited; the request is not retried into the
// same overload.
func ExampleWithPolicy_concurrency() {
	release := make(chan struct{})
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()

	p := policy.Standard()
	p.Concurrency = &concurrency.Fixed{Max: 1} // one request in flight; Adaptive learns the number
	client := &http.Client{Transport: retrytransport.New(nil, retrytransport.WithPolicy(p))}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println("first request:", resp.StatusCode)
	}()
	<-arrived // the first request holds the only place

	_, err := client.Get(srv.URL)
	fmt.Println("second request limited:", errors.Is(err, concurrency.ErrLimited))
	close(release)
	wg.Wait()
	// Output:
	// second request limited: true
	// first request: 200
}
