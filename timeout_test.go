package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/retryafter"
)

// stall blocks until the client goes away or the test ends.
func stall(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second): // a bound on a bug, not a wait
	}
}

func TestAttemptTimeoutRetriesAStalledServer(t *testing.T) {
	f, srv := newFlaky(t, 1, stall)
	var events []retrytransport.Event
	c := e2eClient(t, policy.Policy{AttemptTimeout: 100 * time.Millisecond},
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) }))
	start := time.Now()
	resp, err := do(t, c, "GET", srv.URL, "stalled", nil)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if got := readBody(t, resp); got != "ok" || f.count("stalled") != 2 {
		t.Errorf("GET = %q after %d attempts; want ok after 2", got, f.count("stalled"))
	}
	if len(events) != 1 || events[0].Outcome.Kind.String() != "timeout" {
		t.Errorf("events = %+v; want one timeout", events)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("GET took %v; want about the 100 ms attempt timeout", elapsed)
	}
}

func TestAttemptTimeoutDoesNotBoundTheBodyRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range 3 {
			time.Sleep(60 * time.Millisecond) // the real server's pace is the point
			io.WriteString(w, "chunk ")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	c := e2eClient(t, policy.Policy{AttemptTimeout: 50 * time.Millisecond})
	resp, err := do(t, c, "GET", srv.URL, "slow-body", nil)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if got := readBody(t, resp); got != strings.Repeat("chunk ", 3) {
		t.Errorf("body = %q; want all three chunks though they took longer than AttemptTimeout", got)
	}
}

func TestMaxTotalTimeStopsBeforeAWaitPastIt(t *testing.T) {
	s := &script{steps: []step{{status: 503, header: retryAfter(2), body: "busy"}}}
	var events []retrytransport.Event
	tr, clock := newTransport(t, s, policy.Policy{MaxAttempts: 10, MaxTotalTime: 3 * time.Second},
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) }))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
		t.Errorf("RoundTrip = %d %q; want the last 503", resp.StatusCode, got)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second}, clock.Sleeps()); diff != "" || s.count() != 2 {
		t.Errorf("attempts = %d, waits (-want +got):\n%s; want 2 attempts", s.count(), diff)
	}
	if last := events[len(events)-1]; !errors.Is(last.Stop, retrytransport.ErrBudget) {
		t.Errorf("last event Stop = %v; want ErrBudget", last.Stop)
	}
}

func TestMaxTotalTimeErrorSaysSo(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	p := policy.Policy{MaxAttempts: 10, Backoff: backoff.Constant{Interval: time.Second}, MaxTotalTime: 1500 * time.Millisecond}
	tr, _ := newTransport(t, s, p)
	_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 2 || !errors.Is(err, retrytransport.ErrBudget) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RoundTrip error = %v; want a *RetryError after 2 attempts wrapping ErrBudget and the last error", err)
	}
	if !strings.Contains(err.Error(), "MaxTotalTime") {
		t.Errorf("error %q does not name MaxTotalTime", err)
	}
}

func TestDelayHeaders(t *testing.T) {
	hint := func(k, v string) http.Header { return http.Header{http.CanonicalHeaderKey(k): {v}} }
	tests := []struct {
		name   string
		p      policy.Policy
		header http.Header
		want   time.Duration
	}{
		{"RetryAfterMS", policy.Policy{}, hint("retry-after-ms", "1500"), 1500 * time.Millisecond},
		{"AmzRetryAfter", policy.Policy{}, hint("x-amz-retry-after", "250"), 250 * time.Millisecond},
		{"MSRetryAfterMS", policy.Policy{}, hint("x-ms-retry-after-ms", "40"), 40 * time.Millisecond},
		{"UntrustedHeaderUsesBackoff", policy.Policy{DelayHeaders: retryafter.RetryAfter}, hint("x-amz-retry-after", "250"), 500 * time.Millisecond},
		{"IgnoreDelayHeaders", policy.Policy{IgnoreDelayHeaders: true}, retryAfter(3), 500 * time.Millisecond},
		{"ServerHintNotJittered", policy.Policy{}, retryAfter(0), 0},
		// SPEC §6: max(backoff, min(hint, backoff + 5 s)); backoff is 0.5 s here.
		{"BoundedHintLong", policy.Policy{ServerDelayBound: 5 * time.Second, MaxDelay: time.Minute}, retryAfter(30), 5500 * time.Millisecond},
		{"BoundedHintShort", policy.Policy{ServerDelayBound: 5 * time.Second}, retryAfter(0), 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503, header: tt.header}, {status: 200}}}
			p := tt.p
			p.MaxAttempts = 2
			tr, clock := newTransport(t, s, p)
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff([]time.Duration{tt.want}, clock.Sleeps()); diff != "" {
				t.Errorf("waits mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallerDeadlineIsNotAnAttemptTimeout(t *testing.T) {
	_, srv := newFlaky(t, 5, stall)
	c := e2eClient(t, policy.Policy{AttemptTimeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET error = %v; want the caller's context.DeadlineExceeded", err)
	}
}

func TestThrottleBackoff(t *testing.T) {
	s := &script{steps: []step{{status: 429}, {status: 503}, {status: 200}}}
	p := policy.Policy{ThrottleBackoff: backoff.Constant{Interval: 3 * time.Second}}
	tr, clock := newTransport(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// After the 429: ThrottleBackoff (3 s); after the 503: Backoff (halfJitter, retry 2: 1 s).
	if diff := cmp.Diff([]time.Duration{3 * time.Second, time.Second}, clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}
