package retrytransport_test

// The attempt loop: which answers are retried, what the caller gets back
// (the last response, or a *RetryError), the RoundTripper contract (the
// request is not modified, odd base transports), and the zero Transport.

import (
	"errors"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

const url = "http://api.example.com/v1/things"

func TestRetriesTransientStatusUntilSuccess(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 500}, {status: 200, body: "ok"}}}
	tr := newRig(t, s, policy.Standard())
	req := newReq(t, "GET", url, "")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if resp.Request != req {
		t.Errorf("resp.Request = %p; want the caller's request %p", resp.Request, req)
	}
	if got := readBody(t, resp); resp.StatusCode != 200 || got != "ok" {
		t.Errorf("RoundTrip = %d %q; want 200 %q", resp.StatusCode, got, "ok")
	}
	if got := s.count(); got != 3 {
		t.Errorf("attempts = %d; want 3", got)
	}
	// halfJitter: retry 1 waits 0.5 * 1 s, retry 2 waits 0.5 * 2 s.
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second}, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestLastResponseReturnedIntactAfterMaxAttempts(t *testing.T) {
	s := &script{steps: []step{{status: 503, body: "first"}, {status: 502, body: "second"}, {status: 504, body: "last"}}}
	tr := newRig(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 504 || got != "last" {
		t.Errorf("RoundTrip = %d %q; want 504 %q", resp.StatusCode, got, "last")
	}
	if got := s.count(); got != 3 {
		t.Errorf("attempts = %d; want 3", got)
	}
}

func TestMaxAttemptsOneDisablesRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.None())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if got := s.count(); got != 1 {
		t.Errorf("attempts = %d; want 1", got)
	}
}

func TestErrorWrapsLastTransportErrorWithAttempts(t *testing.T) {
	errFirst, errLast := errors.New("first failure"), errors.New("last failure")
	s := &script{steps: []step{{err: errFirst}, {err: errFirst}, {err: errLast}}}
	tr := newRig(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if resp != nil {
		t.Fatalf("RoundTrip returned a response with status %d; want none", resp.StatusCode)
	}
	var re *retrytransport.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("RoundTrip error = %T %v; want *RetryError", err, err)
	}
	if re.Attempts != 3 || !errors.Is(err, errLast) || !errors.Is(err, retrytransport.ErrExhausted) || errors.Is(err, errFirst) {
		t.Errorf("RoundTrip error = %v (attempts %d); want last error after 3 attempts, ErrExhausted", err, re.Attempts)
	}
	if want := "retrytransport: gave up after 3 attempts (attempts exhausted): last failure"; err.Error() != want {
		t.Errorf("Error() = %q; want %q", err.Error(), want)
	}
}

func TestFinalStatusesAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 422, 501} {
		s := &script{steps: []step{{status: status, body: `{"message":"no"}`}}}
		tr := newRig(t, s, policy.Standard())
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatalf("RoundTrip(%d): %v", status, err)
		}
		resp.Body.Close()
		if got := s.count(); got != 1 {
			t.Errorf("status %d: attempts = %d; want 1", status, got)
		}
	}
}

func TestThrottlingCodeIn400BodyIsRetriedAndBodyRestored(t *testing.T) {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`
	s := &script{steps: []step{{status: 400, body: body}}}
	tr := newRig(t, s, policy.Standard())
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); got != body {
		t.Errorf("last response body = %q; want it intact: %q", got, body)
	}
	if got := s.count(); got != 3 {
		t.Errorf("attempts = %d; want 3", got)
	}
	// A throttle costs 10 tokens per retry (docs/aws.md); the waits are plain backoff.
	if got := len(tr.clock.Sleeps()); got != 2 {
		t.Errorf("waits = %d; want 2", got)
	}
}

func TestNonIdempotentRetriedOnlyWhenUnprocessed(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name   string
		method string
		header http.Header
		p      policy.Policy
		steps  []step
		want   int // attempts
	}{
		{"PostOn503", "POST", nil, policy.Standard(), []step{{status: 503}}, 1},
		{"PostOnReset", "POST", nil, policy.Standard(), []step{{err: io.ErrUnexpectedEOF}}, 1},
		{"PostOn429", "POST", nil, policy.Standard(), []step{{status: 429}}, 3},
		{"PostOnSlowDown503", "POST", nil, policy.Standard(), []step{{status: 503, body: "<Error><Code>SlowDown</Code></Error>"}}, 3},
		{"PostOnDialError", "POST", nil, policy.Standard(), []step{{err: refused, unread: true}}, 3},
		// A base transport that took the body and then reports a failed
		// dial proves nothing: the bytes may have gone out.
		{"PostOnDialErrorAfterBodyRead", "POST", nil, policy.Standard(), []step{{err: refused}}, 1},
		{"PatchOn500", "PATCH", nil, policy.Standard(), []step{{status: 500}}, 1},
		{"PostWithIdempotencyKey", "POST", http.Header{"Idempotency-Key": {"k1"}}, policy.Standard(), []step{{status: 503}}, 3},
		{"PostWithXIdempotencyKey", "POST", http.Header{"X-Idempotency-Key": {"k1"}}, policy.Standard(), []step{{status: 503}}, 3},
		{"PostWithRetryNonIdempotent", "POST", nil, policy.Policy{RetryNonIdempotent: true}, []step{{status: 503}}, 3},
		{"PutOn503", "PUT", nil, policy.Standard(), []step{{status: 503}}, 3},
		{"DeleteOnReset", "DELETE", nil, policy.Standard(), []step{{err: io.ErrUnexpectedEOF}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: tt.steps}
			tr := newRig(t, s, tt.p)
			req := newReq(t, tt.method, url, "payload")
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			if got := s.count(); got != tt.want {
				t.Errorf("%s: attempts = %d (err %v); want %d", tt.name, got, err, tt.want)
			}
			for i, b := range s.received() {
				if b != "payload" {
					t.Errorf("attempt %d body = %q; want %q", i+1, b, "payload")
				}
			}
		})
	}
}

func TestNotRetryableErrorSaysWhy(t *testing.T) {
	s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	tr := newRig(t, s, policy.Standard())
	_, err := tr.RoundTrip(newReq(t, "POST", url, "x"))
	if !errors.Is(err, retrytransport.ErrNotRetryable) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RoundTrip(POST) error = %v; want ErrNotRetryable wrapping io.ErrUnexpectedEOF", err)
	}
}

// TestUnusablePolicyClosesTheBody checks that a request refused for a
// policy New cannot use, before any attempt, has its body closed once.
func TestUnusablePolicyClosesTheBody(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr := newRig(t, s, policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ftp://b.example.com"}}})
	body := &closeCounter{Reader: strings.NewReader("x")}
	req := newReq(t, "POST", url, "")
	req.Body = body
	_, err := tr.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "ftp://b.example.com") || s.count() != 0 {
		t.Errorf("RoundTrip error = %v after %d attempts; want the endpoint's error and none", err, s.count())
	}
	if body.closed.Load() != 1 {
		t.Errorf("request body closed %d times; want 1", body.closed.Load())
	}
}

func TestRequestIsNotModified(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {err: io.ErrUnexpectedEOF}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	req := newReq(t, "PUT", url, "payload")
	req.Header.Set("X-Test", "1")
	before := *req
	beforeHeader := req.Header.Clone()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if req.Body != before.Body || req.Method != before.Method || req.URL != before.URL || req.ContentLength != before.ContentLength || req.Context() != before.Context() {
		t.Errorf("RoundTrip modified the request: %+v; before %+v", req, before)
	}
	if diff := cmp.Diff(beforeHeader, req.Header); diff != "" {
		t.Errorf("RoundTrip modified the header (-before +after):\n%s", diff)
	}
}

func TestCloseIdleConnectionsIsForwarded(t *testing.T) {
	base := &idleCounter{}
	tr := retrytransport.New(base)
	(&http.Client{Transport: tr}).CloseIdleConnections()
	if base.n != 1 {
		t.Errorf("base CloseIdleConnections called %d times; want 1", base.n)
	}
}

type idleCounter struct{ n int }

func (c *idleCounter) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unused")
}
func (c *idleCounter) CloseIdleConnections() { c.n++ }

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestZeroTransportWorks: like http.Transport's, the zero Transport is
// ready to use, with the defaults of New(nil): it retries a 503 (whose
// Retry-After of 0 keeps the real wait at nothing) over a pooled transport.
func TestZeroTransportWorks(t *testing.T) {
	noLeaks(t)
	f, srv := newFlaky(t, 1, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(503)
	})
	var tr retrytransport.Transport
	c := &http.Client{Transport: &tr}
	t.Cleanup(c.CloseIdleConnections)
	resp, err := do(t, c, "GET", srv.URL, "zero", nil)
	if err != nil {
		t.Fatalf("GET through a zero Transport: %v", err)
	}
	if got := readBody(t, resp); got != "ok" || f.count("zero") != 2 {
		t.Errorf("GET = %q after %d attempts; want ok after 2", got, f.count("zero"))
	}
	if s := tr.Snapshot(); len(s) != 1 || s[0].Attempts != 2 || s[0].Quota != quota.DefaultCapacity {
		t.Errorf("Snapshot() = %+v; want one scope with 2 attempts and a full quota", s)
	}
}

// TestBaseWithNoResponseIsAnError: a base transport that returns (nil,
// nil) breaks the RoundTripper contract. Every path (the attempt loop, one
// timed attempt, the direct single attempt, a classifier that copes with
// it) reports it as a final error, as net/http's Client does, and never
// panics.
func TestBaseWithNoResponseIsAnError(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, nil
	})
	// A classifier that copes with (nil, nil) itself: the loop then builds
	// a *RetryError with a nil Err, whose Error method panics.
	tolerant := func(req *http.Request, resp *http.Response, err error) classify.Outcome {
		if resp == nil && err == nil {
			return classify.Outcome{Kind: classify.Transient, Reason: "nothing came back"}
		}
		return classify.Default(req, resp, err)
	}
	for _, tt := range []struct {
		name string
		p    policy.Policy
	}{
		{"Standard", policy.Policy{}},
		{"OneTimedAttempt", policy.Policy{MaxAttempts: 1, AttemptTimeout: time.Second}},
		{"TolerantClassifier", policy.Policy{Classify: tolerant, Quota: quota.None}},
		{"OneAttempt", policy.Policy{MaxAttempts: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := retrytransport.New(base, retrytransport.WithPolicy(tt.p), retrytransport.WithClock(nil, faketime.New().Sleep))
			noPanic(t, "RoundTrip over a (nil, nil) base, policy "+tt.name, func() {
				resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
				if resp != nil {
					resp.Body.Close()
				}
				var re *retrytransport.RetryError
				if !errors.As(err, &re) || re.Attempts != 1 || !strings.Contains(err.Error(), "nil *Response") {
					t.Errorf("RoundTrip error = %v; want a *RetryError after 1 attempt saying the base returned no response", err)
				}
			})
		})
	}
}

// TestPlannedRetryThatCannotGoReturnsTheLastResponse: a retry was planned
// and paid for, and then could not be sent: the body's GetBody failed, or
// the rate limiter refused to wait for it. The retry's quota cost is
// refunded, the observer hears why it stopped, and the caller gets the 503
// it received, whole.
func TestPlannedRetryThatCannotGoReturnsTheLastResponse(t *testing.T) {
	for _, tt := range []struct {
		name   string
		p      policy.Policy
		getErr error
		why    error
	}{
		{"GetBodyFails", policy.Policy{}, errors.New("upload source gone"), retrytransport.ErrNotRetryable},
		{"RateLimiterRefuses", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}}, nil, ratelimit.ErrRateLimited},
		// The backoff's 500 ms fits in MaxTotalTime; the send token's
		// further 500 ms would not.
		{"PacingPastTimeLimit", policy.Policy{MaxTotalTime: 800 * time.Millisecond, RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1}}, nil, retrytransport.ErrTimeLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503, body: "busy"}}}
			var events []retrytransport.Event
			tr := newRig(t, s, tt.p, withOptions(retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) })))
			if tt.p.RateLimit != nil {
				tt.p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
			}
			req := newReq(t, "PUT", url, "payload")
			if tt.getErr != nil {
				req.GetBody = func() (io.ReadCloser, error) { return nil, tt.getErr }
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip error = %v; want the 503", err)
			}
			if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
				t.Errorf("RoundTrip = %d %q; want the 503 whole", resp.StatusCode, got)
			}
			if n := s.count(); n != 1 {
				t.Errorf("attempts = %d; want 1", n)
			}
			if q := tr.Snapshot()[0].Quota; q != quota.DefaultCapacity {
				t.Errorf("quota = %v after a retry that was not sent; want %d, its cost refunded", q, quota.DefaultCapacity)
			}
			if len(events) != 2 || events[0].Stop != nil || !errors.Is(events[1].Stop, tt.why) {
				t.Errorf("events = %+v; want a retry, then a stop for %v", events, tt.why)
			}
			if tt.getErr != nil && !errors.Is(events[len(events)-1].Stop, tt.getErr) {
				t.Errorf("stop event %v does not carry GetBody's error", events[len(events)-1].Stop)
			}
		})
	}
}

// noPanic runs f and fails t if it panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if testing.Verbose() {
				t.Logf("%s", debug.Stack())
			}
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	f()
}
