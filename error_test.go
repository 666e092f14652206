package retrytransport_test

// RetryError: every request that ends without a response, whether an
// attempt was made or not, fails with a *RetryError that says how many
// attempts were made and why it ended.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// TestRequestRefusedBeforeItsFirstAttemptIsARetryError: a request that
// ends before its first attempt, on every path that can refuse it, fails
// with a *RetryError of 0 attempts whose Reason says why (errors.Is still
// matches it) and whose Err is never nil; its message says that no
// attempt was made; its body is closed once and the base never sees it.
func TestRequestRefusedBeforeItsFirstAttemptIsARetryError(t *testing.T) {
	adaptive := policy.Adaptive()
	adaptive.MaxAttempts = 1 // every error is a first attempt's
	readme := policy.Standard()
	readme.RateLimit = &ratelimit.Fixed{Rate: 10, Burst: 1} // the README's setup for a published rate
	for _, tt := range []struct {
		name string
		p    policy.Policy
		// steps answer the requests sent before the refused one, which
		// spend the send token or slow the adaptive limiter down.
		steps    []step
		deadline time.Duration // the refused request's, from the rig's now; 0 for none
		cancel   bool          // the refused request's context is cancelled already
		nilURL   bool
		why      error  // the Reason
		err      error  // what Err matches
		msg      string // the message, or its start when it ends with "..."
		timeout  bool   // what Timeout reports
	}{{
		name:  "FixedRateFailFast",
		p:     policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}},
		steps: []step{{status: 200}},
		why:   ratelimit.ErrRateLimited,
		err:   ratelimit.ErrRateLimited,
		msg:   `retrytransport: no attempt made (fixed rate of scope "api.example.com" needs a 1s wait: ratelimit: client-side rate limit)`,
	}, {
		name:     "FixedRateTokenPastDeadline",
		p:        readme,
		steps:    []step{{status: 200}},
		deadline: 50 * time.Millisecond,
		why:      retrytransport.ErrDeadline,
		err:      retrytransport.ErrDeadline,
		msg:      "retrytransport: no attempt made (deadline too near)",
		timeout:  true,
	}, {
		// The reference algorithm drops to 0.5 req/s at its first
		// throttle: the next send token is about 2 s away.
		name:     "AdaptiveTokenPastDeadline",
		p:        adaptive,
		steps:    []step{{status: 429}},
		deadline: time.Second,
		why:      retrytransport.ErrDeadline,
		err:      retrytransport.ErrDeadline,
		msg:      "retrytransport: no attempt made (deadline too near)",
		timeout:  true,
	}, {
		name:    "FixedRateTokenPastMaxTotalTime",
		p:       policy.Policy{MaxTotalTime: 100 * time.Millisecond, RateLimit: &ratelimit.Fixed{Rate: 2.5, Burst: 1}},
		steps:   []step{{status: 200}},
		why:     retrytransport.ErrTimeLimit,
		err:     retrytransport.ErrTimeLimit,
		msg:     "retrytransport: no attempt made (MaxTotalTime or MaxTotalWait ran out)",
		timeout: true,
	}, {
		name:   "ContextDoneWhileWaitingForTheToken",
		p:      policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1}},
		steps:  []step{{status: 200}},
		cancel: true,
		why:    context.Canceled,
		err:    context.Canceled,
		msg:    "retrytransport: no attempt made (context canceled)",
	}, {
		name: "PolicyNewCannotUse",
		p:    policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ftp://b.example.com"}}},
		why:  retrytransport.ErrInvalidPolicy,
		msg:  `retrytransport: no attempt made (invalid policy): retrytransport: default policy: Failover.Endpoints[0]: endpoint "ftp://b.example.com"...`,
	}, {
		name:   "NilURL",
		p:      policy.Standard(),
		nilURL: true,
		why:    retrytransport.ErrNotRetryable,
		msg:    "retrytransport: no attempt made (not retryable): retrytransport: nil Request.URL",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: append(tt.steps, step{status: 200})}
			tr := newRig(t, s, tt.p)
			switch l := tt.p.Limiter.(type) {
			case nil:
			case *ratelimit.Adaptive:
				l.Reference, l.Now = true, tr.clock.Now
			}
			if f, ok := tt.p.RateLimit.(*ratelimit.Fixed); ok {
				f.Now = tr.clock.Now
			}
			for range tt.steps {
				tr.get(t, url)
			}
			sent := s.count()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.deadline > 0 {
				ctx, cancel = context.WithDeadline(ctx, tr.clock.Now().Add(tt.deadline))
				defer cancel()
			}
			if tt.cancel {
				cancel()
			}
			body := &closeCounter{Reader: strings.NewReader("payload")}
			req := newReq(t, "PUT", url, "").WithContext(ctx)
			req.Body = body
			if tt.nilURL {
				req.URL = nil
			}
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
				t.Fatalf("RoundTrip = %d; want no response", resp.StatusCode)
			}

			var re *retrytransport.RetryError
			if !errors.As(err, &re) {
				t.Fatalf("RoundTrip error = %T %v; want a *RetryError", err, err)
			}
			if re.Attempts != 0 || !errors.Is(re.Reason, tt.why) || !errors.Is(err, tt.why) || re.Err == nil {
				t.Errorf("RetryError = %+v; want 0 attempts, a Reason matching %v and an Err", re, tt.why)
			}
			if tt.err != nil && !errors.Is(re.Err, tt.err) {
				t.Errorf("RetryError.Err = %v; want one matching %v", re.Err, tt.err)
			}
			if want, ok := strings.CutSuffix(tt.msg, "..."); ok && !strings.HasPrefix(err.Error(), want) || !ok && err.Error() != want {
				t.Errorf("RoundTrip error reads %q; want %q", err, tt.msg)
			}
			if got := re.Timeout(); got != tt.timeout {
				t.Errorf("RetryError.Timeout() = %t; want %t", got, tt.timeout)
			}
			if n := s.count() - sent; n != 0 {
				t.Errorf("the refused request reached the base %d times; want 0", n)
			}
			if n := body.closed.Load(); n != 1 {
				t.Errorf("request body closed %d times; want 1", n)
			}
		})
	}
}

// TestRetryErrorThroughHTTPClient: a request refused before its first
// attempt, sent as the README sends requests, through an http.Client,
// still yields the *RetryError to errors.As, inside the client's
// *url.Error.
func TestRetryErrorThroughHTTPClient(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Standard()
	p.RateLimit = &ratelimit.Fixed{Rate: 10, Burst: 1, FailFast: true}
	tr := newRig(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
	client := &http.Client{Transport: tr}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("first GET: %v", err)
	}
	resp.Body.Close()
	_, err = client.Get(url)
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 0 || !errors.Is(err, ratelimit.ErrRateLimited) {
		t.Errorf("second GET error = %v; want a *RetryError of 0 attempts wrapping ratelimit.ErrRateLimited", err)
	}
}

// TestRetryErrorSaysACauseThatIsItsReasonOnce: a caller who cancels while
// a retry waits gets a *RetryError whose cause and reason are the same
// context error, said once.
func TestRetryErrorSaysACauseThatIsItsReasonOnce(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleep := func(context.Context, time.Duration) error {
		cancel()
		return ctx.Err()
	}
	tr := newRig(t, s, policy.Standard(), sleepingWith(sleep))
	_, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
	if want := "retrytransport: gave up after 1 attempt (context canceled)"; err == nil || err.Error() != want {
		t.Errorf("RoundTrip error = %v; want %q", err, want)
	}
}
