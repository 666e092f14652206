package retrytransport_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// retryWaits returns the sleeps of clock that are not hedge delays.
func retryWaits(clock *faketime.Clock) []time.Duration {
	var waits []time.Duration
	for _, d := range clock.Sleeps() {
		if d != hedgeDelay {
			waits = append(waits, d)
		}
	}
	return waits
}

// A response that signals the penalty starts it though it is not retried:
// here a Fatal 400 with the ServerBusy code. The next request's retry to
// the scope pays the penalty.
func TestPenaltyStartedByAResponseThatIsNotRetried(t *testing.T) {
	noLeaks(t)
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"code":"ServerBusy"}`)
		case 2:
			w.WriteHeader(500)
		default:
			io.WriteString(w, "ok")
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{
		Backoff: backoff.Constant{Interval: time.Second},
		Penalty: policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Hour},
	}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	for _, want := range []int{400, 200} {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		if resp.StatusCode != want {
			t.Fatalf("status %d; want %d", resp.StatusCode, want)
		}
	}
	if got := retryWaits(clock); !equalDurations(got, []time.Duration{11 * time.Second}) {
		t.Errorf("the second request's retry waited %v; want [11s]: 1 s + the 10 s penalty that the first request's ServerBusy (400, not retried) started", got)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedged copy that loses starts the penalty as well when its response
// signals it: the server said it was busy, whichever copy won.
func TestPenaltyStartedByALosingHedge(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // one copy: 200 once the other's 503 was classified
			if !waitOr(classified, r) {
				return
			}
			io.WriteString(w, "ok")
		case 2: // the other copy: 503
			w.WriteHeader(503)
		case 3: // the POST, which is not hedged
			w.WriteHeader(500)
		default:
			io.WriteString(w, "ok")
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{
		RetryNonIdempotent: true,
		Backoff:            backoff.Constant{Interval: time.Second},
		Hedge:              policy.Hedge{Delay: hedgeDelay},
		Classify:           onClassified(503, classified),
		Penalty:            policy.Penalty{Statuses: []int{503}, Delay: 10 * time.Second, For: time.Hour},
	}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("GET status %d; want the winning copy's 200", resp.StatusCode)
	}
	resp, err = client.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if got := retryWaits(clock); !equalDurations(got, []time.Duration{11 * time.Second}) {
		t.Errorf("the POST's retry waited %v; want [11s]: 1 s + the 10 s penalty that the losing copy's 503 started", got)
	}
	srv.conns.expectAllClosed(t, client)
}
