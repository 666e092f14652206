package retrytransport_test

// The waits between attempts: backoff, Retry-After and the other headers
// that carry a server's delay, MaxDelay, MaxTotalWait, TerminationBuffer,
// and the context's deadline and cancellation during a wait.

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/retryafter"
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
	if !errors.Is(tr.stop(), retrytransport.ErrTimeLimit) {
		t.Errorf("stop = %v; want ErrTimeLimit", tr.stop())
	}
}

// Unlike MaxTotalTime, MaxTotalWait does not count the attempts: slow
// attempts do not use it up.
func TestMaxTotalWaitIgnoresTheAttempts(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200}}}
	p := policy.Policy{MaxTotalWait: 2 * time.Second, Backoff: backoff.Constant{Interval: time.Second}}
	clock := faketime.NewAt(time.Now())
	// Each attempt takes 10 s on the clock the transport reads.
	tr := newRig(t, roundTripFunc(func(r *http.Request) (*http.Response, error) {
		clock.Advance(10 * time.Second)
		return s.RoundTrip(r)
	}), p, onClock(clock))
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://svc.test/", ""))
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
		{"MaxTotalTime", policy.Policy{TerminationBuffer: 2 * time.Second, MaxTotalTime: 10 * time.Second}, false, retrytransport.ErrTimeLimit},
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
		Penalty:      &policy.Penalty{Statuses: []int{503}, Delay: math.MaxInt64},
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
	if !errors.Is(tr.stop(), retrytransport.ErrTimeLimit) {
		t.Errorf("stop = %v; want ErrTimeLimit", tr.stop())
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
				MaxAttempts: 3,
				Backoff:     backoff.Constant{Interval: time.Second},
				Failover:    &policy.Failover{Endpoints: []string{secondary.Listener.Addr().String()}, Mode: tc.mode},
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

// When MaxTotalWait stops the retries, the caller's error names it, not
// only MaxTotalTime, which the policy does not set.
func TestMaxTotalWaitStopNamesIt(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	p := policy.Policy{MaxAttempts: 5, MaxTotalWait: time.Second, Backoff: backoff.Constant{Interval: 2 * time.Second}}
	tr := newRig(t, base, p, recordEvents())
	_, err := tr.RoundTrip(newReq(t, "GET", "http://down.test/", ""))
	if !errors.Is(err, retrytransport.ErrTimeLimit) {
		t.Fatalf("err = %v; want ErrTimeLimit", err)
	}
	if !strings.Contains(err.Error(), "MaxTotalWait") {
		t.Errorf("err = %q; want it to name MaxTotalWait, which stopped it", err)
	}
}

// A negative TerminationBuffer is normalised to none, as a negative
// MaxTotalTime or AttemptTimeout is: it must not move the end of a wait
// earlier, letting a wait that ends past the context's deadline start.
func TestNegativeTerminationBufferDoesNotPassTheDeadline(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) { return step{status: 503}.response(r), nil })
	p := policy.Policy{MaxAttempts: 2, TerminationBuffer: -time.Hour, Backoff: backoff.Constant{Interval: 30 * time.Second}}
	tr := newRig(t, base, p, recordEvents())
	ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(10*time.Second))
	defer cancel()
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://svc.test/", "").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := tr.clock.Sleeps(); len(got) != 0 || !errors.Is(tr.stop(), retrytransport.ErrDeadline) {
		t.Errorf("sleeps %v, stop %v; want no sleep and ErrDeadline: a 30 s wait ends past a 10 s deadline", got, tr.stop())
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	s := &script{steps: []step{{status: 429, header: retryAfter(3)}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]time.Duration{3 * time.Second}, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestRetryAfterAboveCapReturnsResponseAtOnce(t *testing.T) {
	s := &script{steps: []step{{status: 503, header: retryAfter(60), body: "busy"}, {status: 200}}}
	var events []retrytransport.Event
	tr := newRig(t, s, policy.Standard(), withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) })))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
		t.Errorf("RoundTrip = %d %q; want 503 %q", resp.StatusCode, got, "busy")
	}
	if s.count() != 1 || len(tr.clock.Sleeps()) != 0 {
		t.Errorf("attempts = %d, waits = %v; want 1 attempt and no wait", s.count(), tr.clock.Sleeps())
	}
	if len(events) != 1 || !errors.Is(events[0].Stop, retrytransport.ErrServerDelay) {
		t.Errorf("events = %+v; want one with Stop = ErrServerDelay", events)
	}
}

func TestMaxDelayCapsBackoff(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	p := policy.Policy{MaxAttempts: 4, MaxDelay: 700 * time.Millisecond}
	tr := newRig(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	want := []time.Duration{500 * time.Millisecond, 700 * time.Millisecond, 700 * time.Millisecond}
	if diff := cmp.Diff(want, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestWaitPastDeadlineIsNotStarted(t *testing.T) {
	s := &script{steps: []step{{status: 503, header: retryAfter(15), body: "later"}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(10*time.Second))
	defer cancel()
	resp, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 503 || got != "later" {
		t.Errorf("RoundTrip = %d %q; want the last response 503 %q", resp.StatusCode, got, "later")
	}
	if s.count() != 1 || len(tr.clock.Sleeps()) != 0 {
		t.Errorf("attempts = %d, waits = %v; want 1 attempt and no wait", s.count(), tr.clock.Sleeps())
	}
}

func TestWaitPastDeadlineAfterErrorReturnsErrDeadline(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	tr := newRig(t, s, policy.Policy{Backoff: halfJitter})
	ctx, cancel := context.WithDeadline(context.Background(), tr.clock.Now().Add(100*time.Millisecond))
	defer cancel()
	_, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	if !errors.Is(err, retrytransport.ErrDeadline) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RoundTrip error = %v; want ErrDeadline wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestCancelDuringWaitReturnsAtOnce(t *testing.T) {
	s := &script{steps: []step{{status: 503, header: retryAfter(10)}}}
	ctx, cancel := context.WithCancel(context.Background())
	// The real timer: the observer cancels before the 10 s wait starts, so
	// the wait must end at once for the test to finish.
	tr := retrytransport.New(mockBase(s), retrytransport.WithObserver(func(retrytransport.Event) { cancel() }))
	start := time.Now()
	resp, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	if resp != nil {
		t.Errorf("RoundTrip returned a response; want none after cancellation")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip error = %v; want it to wrap context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("RoundTrip took %v after cancellation; want it at once", elapsed)
	}
}

func TestCancelledContextIsFinal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &script{steps: []step{{err: context.Canceled}}}
	tr := newRig(t, s, policy.Standard())
	_, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, context.Canceled) || s.count() > 1 {
		t.Errorf("RoundTrip = %v; want a *RetryError wrapping context.Canceled after 1 attempt", err)
	}
}

// TestServerDelay: which headers Policy.ServerDelay trusts, and how far.
func TestServerDelay(t *testing.T) {
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
		{"UntrustedHeaderUsesBackoff", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.RetryAfter}}, hint("x-amz-retry-after", "250"), 500 * time.Millisecond},
		{"NoHeaderTrustedUsesBackoff", policy.Policy{ServerDelay: policy.ServerDelay{Headers: retryafter.None}}, retryAfter(3), 500 * time.Millisecond},
		{"ServerHintNotJittered", policy.Policy{}, retryAfter(0), 0},
		// The newer SDKs (docs/aws.md): max(backoff, min(hint, backoff + 5 s)); backoff is 0.5 s here.
		{"BoundedHintLong", policy.Policy{ServerDelay: policy.ServerDelay{Bound: 5 * time.Second}, MaxDelay: time.Minute}, retryAfter(30), 5500 * time.Millisecond},
		{"BoundedHintShort", policy.Policy{ServerDelay: policy.ServerDelay{Bound: 5 * time.Second}}, retryAfter(0), 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503, header: tt.header}, {status: 200}}}
			p := tt.p
			p.MaxAttempts = 2
			tr := newRig(t, s, p)
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff([]time.Duration{tt.want}, tr.clock.Sleeps()); diff != "" {
				t.Errorf("waits mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestThrottleBackoff(t *testing.T) {
	s := &script{steps: []step{{status: 429}, {status: 503}, {status: 200}}}
	p := policy.Policy{ThrottleBackoff: backoff.Constant{Interval: 3 * time.Second}}
	tr := newRig(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// After the 429: ThrottleBackoff (3 s); after the 503: Backoff (halfJitter, retry 2: 1 s).
	if diff := cmp.Diff([]time.Duration{3 * time.Second, time.Second}, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

// TestPlannedRetryCancelledDuringTheWait: the caller cancels while the
// transport waits for a retry. The retry's cost is refunded, the observer
// hears why the retry is not sent, and the caller gets its context's error
// at once.
func TestPlannedRetryCancelledDuringTheWait(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last retrytransport.Event
	tr := newRig(t, s, policy.Policy{}, withOptions(retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error {
		cancel() // the caller gives up while the transport waits
		return ctx.Err()
	}), retrytransport.WithObserver(func(e retrytransport.Event) { last = e })))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	if resp != nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip = %d; want the caller's cancellation", resp.StatusCode)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(last.Stop, context.Canceled) {
		t.Errorf("RoundTrip error = %v, last Event.Stop = %v; want context.Canceled for both", err, last.Stop)
	}
	if q := tr.Snapshot()[0].Quota; q != quota.DefaultCapacity {
		t.Errorf("quota = %v; want %d, the cancelled retry's cost refunded", q, quota.DefaultCapacity)
	}
}
