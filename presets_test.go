package retrytransport_test

// The Azure Cosmos DB and Service Bus presets, driven through the
// Transport against 127.0.0.1 servers and scripted bases on a fake clock.

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

// cosmosThrottled returns the URL of a server that throttles every request
// with retryAfterMS in x-ms-retry-after-ms, and its count of requests.
func cosmosThrottled(t *testing.T, retryAfterMS string) (string, func() int) {
	s := &script{steps: []step{{
		status: 429,
		// Retry-After is not the header Cosmos DB's clients read.
		header: h("x-ms-retry-after-ms", retryAfterMS, "Retry-After", "1"),
	}}}
	return serve(t, s).URL, s.count
}

func TestCosmosDBRetriesThrottlesNineTimes(t *testing.T) {
	url, attempts := cosmosThrottled(t, "100")
	tr := newRig(t, nil, policy.AzureCosmosDB(), recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || attempts() != 10 {
		t.Errorf("status %d after %d attempts; want the 429 after 1 + 9 retries", resp.StatusCode, attempts())
	}
	sleeps := tr.clock.Sleeps()
	if len(sleeps) != 9 {
		t.Fatalf("sleeps %v; want 9", sleeps)
	}
	for _, d := range sleeps {
		if d != 100*time.Millisecond {
			t.Errorf("sleeps %v; want each the x-ms-retry-after-ms 100 ms", sleeps)
			break
		}
	}
	if !errors.Is(tr.stop(), retrytransport.ErrExhausted) {
		t.Errorf("stop = %v; want ErrExhausted", tr.stop())
	}
}

func TestCosmosDBWaitsAtMostThirtySeconds(t *testing.T) {
	url, attempts := cosmosThrottled(t, "4000")
	tr := newRig(t, nil, policy.AzureCosmosDB(), recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// 7 waits of 4 s are 28 s; an eighth would make 32 s.
	var total time.Duration
	for _, d := range tr.clock.Sleeps() {
		total += d
	}
	if resp.StatusCode != 429 || attempts() != 8 || total != 28*time.Second {
		t.Errorf("status %d after %d attempts and %v of waits; want the 429 after 8 attempts and 28 s", resp.StatusCode, attempts(), total)
	}
	if !errors.Is(tr.stop(), retrytransport.ErrTimeLimit) {
		t.Errorf("stop = %v; want ErrTimeLimit (MaxTotalWait)", tr.stop())
	}
}

// The source's example: 5 retries, 15 s of waiting in all.
func TestCosmosDBOptionsAsTheSDKNamesThem(t *testing.T) {
	url, attempts := cosmosThrottled(t, "1000")
	p := policy.AzureCosmosDBOptions{MaxRetryAttemptsOnThrottledRequests: 5, MaxRetryWaitTimeInSeconds: 15}.Policy()
	tr := newRig(t, nil, p, recordEvents())
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
	s := &script{steps: []step{{status: 503}}}
	srv := serve(t, s)
	tr := newRig(t, nil, policy.AzureCosmosDB(), recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.count() != 1 {
		t.Errorf("%d attempts after a 503; want 1: Cosmos DB's retries are for 429s", s.count())
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
	xml := h("Content-Type", "application/xml")
	busy := step{status: 503, header: xml, body: `<Error><Code>ServerBusy</Code><Detail>The server is busy.</Detail></Error>`}
	srv := serve(t, &script{steps: []step{busy, busy, {status: 503, header: xml}}})
	tr := newRig(t, nil, serviceBus(), recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// ServerBusy at 0 s: busy until 10 s, retry 1 waits 0.1 + 10 s.
	// ServerBusy again at 10.1 s: busy until 20.1 s, retry 2 waits 3.1 + 10 s.
	// A plain 503 at 23.2 s, after the mode reset: retry 3 waits 9.1 s.
	want := []time.Duration{10100 * time.Millisecond, 13100 * time.Millisecond, 9100 * time.Millisecond}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v", got, want)
	}
}

func TestServiceBusTerminationBuffer(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	srv := serve(t, s)
	tr := newRig(t, nil, serviceBus(), recordEvents())
	// 8 s for the operation: retry 1 starts at 0.1 s with 7.9 s left;
	// retry 2 would start at 3.2 s with 4.8 s left, less than 5 s.
	ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(8*time.Second))
	defer cancel()
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, "").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.count() != 2 || !errors.Is(tr.stop(), retrytransport.ErrDeadline) {
		t.Errorf("%d attempts, stop %v; want 2 and ErrDeadline", s.count(), tr.stop())
	}
}

// Cosmos DB: a 429 whose x-ms-retry-after-ms asks for no wait (0) is
// retried at once, as a server's zero delay is everywhere in this library;
// the SDK waits 5 s, a departure docs/azure.md states.
func TestCosmosDBZeroRetryAfterIsRetriedAtOnce(t *testing.T) {
	base := &script{answer: func(k int, _ *http.Request) step {
		if k == 1 {
			return step{status: 429, header: h("x-ms-retry-after-ms", "0")}
		}
		return step{status: 200, body: "ok"}
	}}
	tr := newRig(t, base, policy.AzureCosmosDB(), recordEvents())
	tr.get(t, "http://cosmos.test/")
	if got := tr.clock.Sleeps(); !equalDurations(got, []time.Duration{0}) {
		t.Errorf("sleeps %v; want [0s]: x-ms-retry-after-ms: 0 asks for no wait", got)
	}
}

// AzureServiceBus: a ServerBusy answer to a POST (a message send, Service
// Bus's main operation over REST) is retried, 10 s later than otherwise:
// after a ServerBusyException the client waits 10 s more and retries, and
// the service turned the request away without acting on it.
func TestServiceBusServerBusyOnASendIsRetried(t *testing.T) {
	base := &script{answer: func(k int, _ *http.Request) step {
		if k == 1 {
			return step{status: 503, body: `<Error><Code>ServerBusy</Code><Detail>The server is busy.</Detail></Error>`}
		}
		return step{status: 201}
	}}
	tr := newRig(t, base, serviceBus(), recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "POST", "http://ns.servicebus.test/queue/messages", `{"body":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []time.Duration{10100 * time.Millisecond}
	if got := tr.clock.Sleeps(); resp.StatusCode != 201 || !equalDurations(got, want) {
		t.Errorf("POST: status %d, sleeps %v, stop %v; want 201 after a retry waiting %v (0.1 s + the ServerBusy 10 s)", resp.StatusCode, got, tr.stop(), want)
	}
}
