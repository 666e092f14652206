package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// tracedGET sends one GET through client with a trace and returns the
// trace.
func tracedGET(t *testing.T, client *http.Client, url string) *requestTrace {
	t.Helper()
	tr := &requestTrace{}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	send(withTrace(context.Background(), tr), client, req)
	return tr
}

// TestTracedRequests checks what a traced contender's trace says of our
// transport's requests: the attempts and 429s that reached the base
// transport, a first attempt held for a send token (delayed), and a
// request refused before its first attempt.
func TestTracedRequests(t *testing.T) {
	ok := newServer(okHandler)
	defer ok.Close()
	throttled := newThrottleFirstServer()
	defer throttled.Close()
	ours := func(p policy.Policy) *http.Client {
		c := traced(contender{"ours", kindOurs, func(base http.RoundTripper) http.RoundTripper {
			return retrytransport.New(base, retrytransport.WithPolicy(p))
		}})
		base := newBase()
		t.Cleanup(base.CloseIdleConnections)
		return &http.Client{Transport: c.wrap(base)}
	}

	// 20 sends a second, one at a time: the second request waits 50 ms.
	paced := ours(policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 20}})
	if tr := tracedGET(t, paced, ok.URL); tr.attempts.Load() != 1 || tr.delayed() || tr.refused() {
		t.Errorf("first paced request: %d attempts, delayed %t, refused %t; want 1, false, false", tr.attempts.Load(), tr.delayed(), tr.refused())
	}
	if tr := tracedGET(t, paced, ok.URL); tr.attempts.Load() != 1 || !tr.delayed() {
		t.Errorf("second paced request: %d attempts, delayed %t; want 1, true", tr.attempts.Load(), tr.delayed())
	}

	// The same, failing fast: the second request is refused.
	failFast := ours(policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, FailFast: true}})
	tracedGET(t, failFast, ok.URL)
	if tr := tracedGET(t, failFast, ok.URL); !tr.refused() || tr.delayed() {
		t.Errorf("request refused by a fail-fast limiter: refused %t, delayed %t; want true, false", tr.refused(), tr.delayed())
	}

	// Two 429s, then a 200, after two waits: three attempts, two 429s,
	// and not delayed, the waits being backoff.
	throttled.throttleNext(2)
	if tr := tracedGET(t, ours(scaled(policy.Standard())), throttled.URL); tr.attempts.Load() != 3 || tr.throttles.Load() != 2 || tr.delayed() {
		t.Errorf("request throttled twice: %d attempts, %d 429s, delayed %t; want 3, 2, false", tr.attempts.Load(), tr.throttles.Load(), tr.delayed())
	}
}

// slowTokens is an AWS retryer whose attempt tokens take wait to get.
type slowTokens struct {
	aws.RetryerV2
	wait time.Duration
}

func (s slowTokens) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	time.Sleep(s.wait)
	return s.RetryerV2.GetAttemptToken(ctx)
}

// TestTracedAWSTokenWait checks that a traced AWS contender counts a first
// attempt as held when the retryer took heldAfter or more to hand out its
// attempt token, and not otherwise.
func TestTracedAWSTokenWait(t *testing.T) {
	srv := newServer(okHandler)
	defer srv.Close()
	for _, tt := range []struct {
		wait time.Duration
		want bool
	}{{0, false}, {2 * heldAfter, true}} {
		c := traced(contender{"aws", kindPeer, func(base http.RoundTripper) http.RoundTripper {
			return &awsTransport{base: base, retryer: slowTokens{retry.NewStandard(), tt.wait}}
		}})
		base := newBase()
		tr := tracedGET(t, &http.Client{Transport: c.wrap(base)}, srv.URL)
		base.CloseIdleConnections()
		if tr.delayed() != tt.want || tr.attempts.Load() != 1 {
			t.Errorf("traced AWS request, attempt token after %v: delayed %t, %d attempts; want %t, 1", tt.wait, tr.delayed(), tr.attempts.Load(), tt.want)
		}
	}
}
