package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

// The Cosmos DB and Service Bus presets, driven through the Transport
// against 127.0.0.1 servers on a fake clock.

func cosmosThrottled(t *testing.T, retryAfterMS string) (string, func() int64) {
	srv, n := answering(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("x-ms-retry-after-ms", retryAfterMS)
		w.Header().Set("Retry-After", "1") // not the header Cosmos DB's clients read
		w.WriteHeader(429)
	})
	return srv.URL, n.Load
}

func TestCosmosDBRetriesThrottlesNineTimes(t *testing.T) {
	url, attempts := cosmosThrottled(t, "100")
	tr, clock, stop := waitsTransport(t, policy.AzureCosmosDB())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || attempts() != 10 {
		t.Errorf("status %d after %d attempts; want the 429 after 1 + 9 retries", resp.StatusCode, attempts())
	}
	sleeps := clock.Sleeps()
	if len(sleeps) != 9 {
		t.Fatalf("sleeps %v; want 9", sleeps)
	}
	for _, d := range sleeps {
		if d != 100*time.Millisecond {
			t.Errorf("sleeps %v; want each the x-ms-retry-after-ms 100 ms", sleeps)
			break
		}
	}
	if !errors.Is(stop(), retrytransport.ErrExhausted) {
		t.Errorf("stop = %v; want ErrExhausted", stop())
	}
}

func TestCosmosDBWaitsAtMostThirtySeconds(t *testing.T) {
	url, attempts := cosmosThrottled(t, "4000")
	tr, clock, stop := waitsTransport(t, policy.AzureCosmosDB())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// 7 waits of 4 s are 28 s; an eighth would make 32 s.
	var total time.Duration
	for _, d := range clock.Sleeps() {
		total += d
	}
	if resp.StatusCode != 429 || attempts() != 8 || total != 28*time.Second {
		t.Errorf("status %d after %d attempts and %v of waits; want the 429 after 8 attempts and 28 s", resp.StatusCode, attempts(), total)
	}
	if !errors.Is(stop(), retrytransport.ErrBudget) {
		t.Errorf("stop = %v; want ErrBudget (MaxTotalWait)", stop())
	}
}

// The source's example: 5 retries, 15 s of waiting in all.
func TestCosmosDBOptionsAsTheSDKNamesThem(t *testing.T) {
	url, attempts := cosmosThrottled(t, "1000")
	p := policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: 5, MaxRetryWaitTimeInSeconds: 15}.Policy()
	tr, _, _ := waitsTransport(t, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if attempts() != 6 {
		t.Errorf("%d attempts; want 1 + 5 retries", attempts())
	}
}

func TestCosmosDBDoesNotRetryOtherStatuses(t *testing.T) {
	srv, n := answering(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(503) })
	tr, _, _ := waitsTransport(t, policy.AzureCosmosDB())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n.Load() != 1 {
		t.Errorf("%d attempts after a 503; want 1: Cosmos DB's retries are for 429s", n.Load())
	}
}

// serviceBus is the Service Bus preset with its jitter drawn at the middle
// of its range: retries wait 0.1 s, 3.1 s and 9.1 s.
func serviceBus() policy.Policy {
	p := policy.AzureServiceBus()
	b := p.Backoff.(backoff.Exponential)
	b.Rand = func() float64 { return 0.5 }
	p.Backoff = b
	return p
}

func TestServiceBusServerBusyPenaltyAppliedAndReset(t *testing.T) {
	srv, _ := answering(t, func(k int, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(503)
		if k <= 2 {
			io.WriteString(w, `<Error><Code>ServerBusy</Code><Detail>The server is busy.</Detail></Error>`)
		}
	})
	tr, clock, _ := waitsTransport(t, serviceBus())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// ServerBusy at 0 s: busy until 10 s, retry 1 waits 0.1 + 10 s.
	// ServerBusy again at 10.1 s: busy until 20.1 s, retry 2 waits 3.1 + 10 s.
	// A plain 503 at 23.2 s, after the mode reset: retry 3 waits 9.1 s.
	want := []time.Duration{10100 * time.Millisecond, 13100 * time.Millisecond, 9100 * time.Millisecond}
	if got := clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v", got, want)
	}
}

func TestServiceBusTerminationBuffer(t *testing.T) {
	srv, n := answering(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(503) })
	tr, clock, stop := waitsTransport(t, serviceBus())
	// 8 s for the operation: retry 1 starts at 0.1 s with 7.9 s left;
	// retry 2 would start at 3.2 s with 4.8 s left, less than 5 s.
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(8*time.Second))
	defer cancel()
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, "").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n.Load() != 2 || !errors.Is(stop(), retrytransport.ErrDeadline) {
		t.Errorf("%d attempts, stop %v; want 2 and ErrDeadline", n.Load(), stop())
	}
}
