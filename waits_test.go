package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

func TestMaxTotalWaitCapsTheWaits(t *testing.T) {
	s := &script{steps: []step{{status: 429, header: h("x-ms-retry-after-ms", "4000")}}}
	srv := serve(t, s)
	tr := newRig(t, nil, policy.Policy{MaxAttempts: 20, MaxTotalWait: 10 * time.Second}, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// 4 s + 4 s; a third 4 s would make 12 s, past the cap.
	if resp.StatusCode != 429 || s.count() != 3 {
		t.Errorf("status %d after %d attempts; want the 429 after 3", resp.StatusCode, s.count())
	}
	if got := tr.clock.Sleeps(); len(got) != 2 || got[0] != 4*time.Second || got[1] != 4*time.Second {
		t.Errorf("sleeps %v; want [4s 4s]", got)
	}
	if !errors.Is(tr.stop(), retrytransport.ErrBudget) {
		t.Errorf("stop = %v; want ErrBudget", tr.stop())
	}
}

// Unlike MaxTotalTime, MaxTotalWait does not count the attempts: slow
// attempts do not use it up.
func TestMaxTotalWaitIgnoresTheAttempts(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200}}}
	srv := serve(t, s)
	p := policy.Policy{MaxTotalWait: 2 * time.Second, Backoff: backoff.Constant{Interval: time.Second}}
	clock := faketime.NewAt(time.Now())
	// Each attempt takes 10 s on the clock the transport reads.
	tr := retrytransport.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		clock.Advance(10 * time.Second)
		return http.DefaultTransport.RoundTrip(r)
	}), retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 3 {
		t.Errorf("status %d after %d attempts; want 200 at the third: 2 s of waits, 30 s of attempts", resp.StatusCode, s.count())
	}
}

func TestTerminationBuffer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        policy.Policy
		deadline bool
		want     error
	}{
		{"Deadline", policy.Policy{TerminationBuffer: 2 * time.Second}, true, retrytransport.ErrDeadline},
		{"MaxTotalTime", policy.Policy{TerminationBuffer: 2 * time.Second, MaxTotalTime: 10 * time.Second}, false, retrytransport.ErrBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503}}}
			srv := serve(t, s)
			tc.p.MaxAttempts = 10
			tc.p.Backoff = backoff.Constant{Interval: 3 * time.Second}
			tr := newRig(t, nil, tc.p, recordEvents())
			req := newReq(t, "GET", srv.URL, "")
			if tc.deadline {
				ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(10*time.Second))
				defer cancel()
				req = req.WithContext(ctx)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// Retries start at 3 s and 6 s, with 7 s and 4 s left; one at
			// 9 s would have 1 s left, less than the 2 s buffer.
			if s.count() != 3 {
				t.Errorf("%d attempts; want 3 (sleeps %v)", s.count(), tr.clock.Sleeps())
			}
			if !errors.Is(tr.stop(), tc.want) {
				t.Errorf("stop = %v; want %v", tr.stop(), tc.want)
			}
		})
	}
}

func TestPenaltyAppliedAndReset(t *testing.T) {
	json := h("Content-Type", "application/json")
	srv := serve(t, &script{steps: []step{
		{status: 503, header: json, body: `{"code":"ServerBusy","message":"the server is busy"}`},
		{status: 503, header: json},
	}})
	p := policy.Policy{
		MaxAttempts: 5,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 15 * time.Second},
	}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The signal at 0 s penalises the scope until 15 s: the retries after
	// it (at 0 s and 11 s) wait 1 + 10 s; those at 22 s and 23 s, 1 s.
	want := []time.Duration{11 * time.Second, 11 * time.Second, time.Second, time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v", got, want)
	}
}

// The penalty is the scope's: a new request to the penalised scope pays
// it from its first retry, and another scope does not.
func TestPenaltyIsPerScope(t *testing.T) {
	busy := serve(t, &script{steps: []step{{status: 503, body: `<Error><Code>ServerBusy</Code></Error>`}}})
	plain := serve(t, &script{steps: []step{{status: 503}}})
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Minute},
	}
	tr := newRig(t, nil, p, recordEvents())
	for _, u := range []string{busy.URL, plain.URL, busy.URL} {
		resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []time.Duration{11 * time.Second, time.Second, 11 * time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v: the busy scope penalised, the other not", got, want)
	}
}

// A status starts a penalty too, and a penalty's Delay is added to a
// server's Retry-After.
func TestPenaltyByStatus(t *testing.T) {
	srv := serve(t, &script{steps: []step{{status: 503, header: retryAfter(2)}}})
	p := policy.Policy{MaxAttempts: 2, Penalty: policy.Penalty{Statuses: []int{503}, Delay: 5 * time.Second}}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := tr.clock.Sleeps(); !equalDurations(got, []time.Duration{7 * time.Second}) {
		t.Errorf("sleeps %v; want [7s]: Retry-After 2 s and the penalty's 5 s", got)
	}
}

// A body that stalls while its code is read for a penalty does not hold
// the request: the read is bounded by ReadTimeout, as classification's is.
func TestPenaltyCodeReadIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(503)
		io.WriteString(w, `{"message":"`)
		w.(http.Flusher).Flush()
		<-release
	}))
	t.Cleanup(srv.Close)
	p := policy.Policy{
		MaxAttempts: 2,
		ReadTimeout: 50 * time.Millisecond,
		Classify: func(*http.Request, *http.Response, error) classify.Outcome {
			return classify.Outcome{Kind: classify.Transient, Reason: "always"}
		},
		Penalty: policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second},
	}
	tr := newRig(t, nil, p, recordEvents())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(leakBound):
		t.Fatal("the request is held by a stalled body")
	}
	if n.Load() != 2 {
		t.Errorf("%d attempts; want 2", n.Load())
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A penalty long enough to saturate the wait is still held to
// MaxTotalWait once the request has waited: the waits' sum does not wrap
// around to pass the cap.
func TestMaxTotalWaitCapsASaturatedWait(t *testing.T) {
	s := &script{steps: []step{
		{status: 500}, // no signal: the first retry waits its backoff
		{status: 503}, // signals the penalty
		{status: 200},
	}}
	srv := serve(t, s)
	p := policy.Policy{
		MaxAttempts:  3,
		Backoff:      backoff.Constant{Interval: time.Second},
		MaxTotalWait: time.Minute,
		Penalty:      policy.Penalty{Statuses: []int{503}, Delay: math.MaxInt64},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || s.count() != 2 || !equalDurations(tr.clock.Sleeps(), []time.Duration{time.Second}) {
		t.Errorf("status %d after %d attempts, sleeps %v; want the 503 after 2 and sleeps [1s]: a 1s + %v wait passes the 1 min MaxTotalWait",
			resp.StatusCode, s.count(), tr.clock.Sleeps(), time.Duration(math.MaxInt64))
	}
	if !errors.Is(tr.stop(), retrytransport.ErrBudget) {
		t.Errorf("stop = %v; want ErrBudget", tr.stop())
	}
}

// A quota in Wait mode whose refill would take longer than a Duration
// holds is refused as too slow, like any refill past MaxDelay: the
// backoff plus that wait does not wrap around to a negative wait that is
// sent at once.
func TestQuotaWaitTooLongToHoldIsRefused(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	srv := serve(t, s)
	var delays []time.Duration
	p := policy.Policy{
		MaxAttempts: 3,
		Backoff:     backoff.Constant{Interval: time.Second},
		Quota:       &ratelimit.Quota{Capacity: 5, RetryCost: 5, Wait: true, RefillPerSecond: 1e-300},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	clock := faketime.NewAt(time.Now())
	var stop error
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := retrytransport.New(base, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep),
		retrytransport.WithObserver(func(ev retrytransport.Event) {
			if ev.Final {
				stop = ev.Stop
			} else {
				delays = append(delays, ev.Delay)
			}
		}))
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The first retry empties the bucket; the second would wait for 5
	// tokens at 1e-300 a second.
	if s.count() != 2 || !equalDurations(delays, []time.Duration{time.Second}) {
		t.Errorf("%d attempts, retry delays %v; want 2 attempts and delays [1s]", s.count(), delays)
	}
	if !errors.Is(stop, ratelimit.ErrQuotaExceeded) {
		t.Errorf("stop = %v; want ErrQuotaExceeded", stop)
	}
}

// A server's delay binds only the retries that go back to the endpoint
// that asked for it. A retry that fails over to another endpoint waits its
// backoff, and a delay above MaxDelay stops the request (ErrServerDelay)
// only when the retry would go back to the server that asked for it.
func TestServerDelayBindsOnlyRetriesToTheEndpointThatAsked(t *testing.T) {
	asking := func(secs string) step { return step{status: 429, header: h("Retry-After", secs)} }
	failing := step{status: 503}
	ok := step{status: 200}
	for _, tc := range []struct {
		name               string
		primary, secondary step
		mode               policy.LocationMode
		status             int // of the response the caller gets
		attempts           int64
		sleeps             []time.Duration
		stop               error
	}{
		// The primary asks for an hour; the retry goes to the secondary.
		{"PrimaryAsksPastMaxDelay", asking("3600"), ok, policy.PrimaryThenSecondary, 200, 2, []time.Duration{time.Second}, nil},
		// The primary asks for 5 s; the secondary need not wait for it.
		{"PrimaryAsksWithinMaxDelay", asking("5"), ok, policy.PrimaryThenSecondary, 200, 2, []time.Duration{time.Second}, nil},
		// The secondary asks for an hour; the next retry goes back to the
		// primary, which asked for nothing, and the last attempt fails.
		{"SecondaryAsksPastMaxDelay", failing, asking("3600"), policy.PrimaryThenSecondary, 503, 3, []time.Duration{time.Second, time.Second}, retrytransport.ErrExhausted},
		// The only endpoint asks for an hour: its retry would go back to it.
		{"SameEndpointAsksPastMaxDelay", failing, asking("3600"), policy.SecondaryOnly, 429, 1, nil, retrytransport.ErrServerDelay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, ss := &script{steps: []step{tc.primary}}, &script{steps: []step{tc.secondary}}
			primary, secondary := serve(t, ps), serve(t, ss)
			p := policy.Policy{
				MaxAttempts:  3,
				Backoff:      backoff.Constant{Interval: time.Second},
				Endpoints:    []string{secondary.Listener.Addr().String()},
				LocationMode: tc.mode,
			}
			tr := newRig(t, nil, p, recordEvents())
			resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := int64(ps.count() + ss.count()); resp.StatusCode != tc.status || n != tc.attempts {
				t.Errorf("status %d after %d attempts; want %d after %d", resp.StatusCode, n, tc.status, tc.attempts)
			}
			if got := tr.clock.Sleeps(); !equalDurations(got, tc.sleeps) {
				t.Errorf("sleeps %v; want %v", got, tc.sleeps)
			}
			if !errors.Is(tr.stop(), tc.stop) || (tc.stop == nil) != (tr.stop() == nil) {
				t.Errorf("stop = %v; want %v", tr.stop(), tc.stop)
			}
		})
	}
}

// A MaxHedges that bypasses Validate is held to policy.HedgeLimit: the
// request is sent, not a race sized by the field.
func TestHedgeCountBeyondTheLimitIsBounded(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	srv := serve(t, s)
	p := policy.Policy{Hedge: policy.Hedge{Delay: time.Hour, MaxHedges: math.MaxInt}}
	never := func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() } // no hedge is due
	client, _, _, _ := hedgeClient(t, p, never)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 1 {
		t.Errorf("status %d after %d requests; want 200 after 1", resp.StatusCode, s.count())
	}
}
