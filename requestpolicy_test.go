package retrytransport_test

// A request's own rules (WithRequestPolicy, WithoutRetries, WithReplay):
// they decide how that request is retried, and only that request; the
// scope's shared state (quota, budget, limiters, breaker, concurrency
// limit, penalty, Scope, statistics) stays the host's; rules that cannot
// be used end their request alone; they meet SDK marks, host maps,
// hedging, failover and the events; and they cost no allocation when
// reused.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// rules is a way to give a request rules of its own: one of
// WithoutRetries, WithReplay, or WithRequestPolicy with a RequestPolicy.
type rules func(context.Context) context.Context

// withPolicy is the rules of rp.
func withPolicy(rp *retrytransport.RequestPolicy) rules {
	return func(ctx context.Context) context.Context { return retrytransport.WithRequestPolicy(ctx, rp) }
}

// under returns req with with's rules in its context.
func under(req *http.Request, with rules) *http.Request { return req.WithContext(with(req.Context())) }

// roundTripUnder sends a request of method to url, with body, under with's
// rules through tr, and returns the response, its body read and closed.
func roundTripUnder(t *testing.T, tr http.RoundTripper, with rules, method, url, body string) *http.Response {
	t.Helper()
	resp, err := tr.RoundTrip(under(newReq(t, method, url, body), with))
	if err != nil {
		t.Fatalf("RoundTrip(%s %s) with rules of its own: %v", method, url, err)
	}
	resp.Body.Close()
	return resp
}

// The rules decide the request's attempts, backoff and the like; the
// host's rules go on deciding every other request's.
func TestRequestPolicyRetriesOneRequestByItsRules(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2})
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5, Backoff: everySecond})

	resp := roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
	if n := s.count(); n != 5 || resp.StatusCode != 503 {
		t.Errorf("with its own MaxAttempts 5: %d attempts, status %d; want 5, 503", n, resp.StatusCode)
	}
	if got := retrytransport.ResponseAttempts(resp).Count; got != 5 {
		t.Errorf("ResponseAttempts(resp).Count = %d; want 5", got)
	}
	if n := attemptsFor(t, tr, s, url); n != 2 {
		t.Errorf("the next request, without rules of its own: %d attempts; want the host's 2", n)
	}
	want := []time.Duration{time.Second, time.Second, time.Second, time.Second, 500 * time.Millisecond}
	if diff := cmp.Diff(want, tr.clock.Sleeps()); diff != "" {
		t.Errorf("waits (-want +got): its own backoff, then the host's:\n%s", diff)
	}
}

// A host policy of one attempt hands its responses back unclassified; a
// request with more attempts of its own is retried all the same.
func TestRequestPolicyRetriesUnderAHostWithoutRetries(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 1})
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 3, Backoff: everySecond})
	roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
	if n := s.count(); n != 3 {
		t.Errorf("MaxAttempts 3 of its own under a host of 1: %d attempts; want 3", n)
	}
}

// The scope's shared state is the host's, whatever the request's rules
// set in those fields: the request pays, is paced, admitted, penalised and
// counted as the host's other requests are.
func TestRequestPolicyKeepsTheHostsSharedState(t *testing.T) {
	const scope = "api.example.com"
	// own is a policy whose shared-state fields all hold instances of
	// their own, none of which may be used.
	own := func(clock *faketime.Clock) policy.Policy {
		return policy.Policy{
			MaxAttempts: 3, Backoff: everySecond,
			Quota:       &quota.Bucket{Now: clock.Now},
			Budget:      &quota.Budget{Now: clock.Now},
			Limiter:     &ratelimit.Adaptive{Now: clock.Now},
			RateLimit:   &ratelimit.Fixed{Rate: 1000, Burst: 100, Now: clock.Now},
			Breaker:     &breaker.Circuit{Now: clock.Now},
			Concurrency: &concurrency.Fixed{Max: 100},
			Penalty:     &policy.Penalty{Statuses: []int{418}, Delay: time.Hour},
			Scope:       func(*http.Request) string { return "not the host's" },
		}
	}

	t.Run("Quota", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		host := &quota.Bucket{Now: clock.Now}
		p := own(clock)
		tr := newRig(t, &script{steps: []step{{status: 503}}}, policy.Policy{Quota: host}, onClock(clock))
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(p)), "GET", url, "")
		// Two retries after a 503 cost 5 tokens each, of 500.
		if got, other := host.Level(scope), p.Quota.Level(scope); got != 490 || other != 500 {
			t.Errorf("quota levels: host's %v, the request policy's own %v; want 490, 500 (untouched)", got, other)
		}
		if st := tr.scopeStats(scope); st.Quota != 490 || st.Attempts != 3 || st.Retries != 2 {
			t.Errorf("Snapshot of %s: quota %v, %d attempts, %d retries; want 490, 3, 2", scope, st.Quota, st.Attempts, st.Retries)
		}
	})

	t.Run("Budget", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		s := &script{steps: []step{{status: 503}}}
		tight := &quota.Budget{Ratio: 1e-9, MinPerSecond: 1e-9, Now: clock.Now} // no retry at all
		tr := newRig(t, s, policy.Policy{Quota: quota.None, Budget: tight}, onClock(clock), recordEvents())
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(own(clock))), "GET", url, "")
		if n, stop := s.count(), tr.stop(); n != 1 || !errors.Is(stop, quota.ErrOverBudget) {
			t.Errorf("under the host's empty budget: %d attempts, stop %v; want 1, quota.ErrOverBudget", n, stop)
		}
	})

	t.Run("Limiter", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		host := &ratelimit.Adaptive{Now: clock.Now}
		p := own(clock)
		tr := newRig(t, &script{steps: []step{{status: 429}, {status: 200}}}, policy.Policy{Limiter: host}, onClock(clock))
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(p)), "GET", url, "")
		if st := host.State(scope); !st.Enabled || st.LastThrottle.IsZero() {
			t.Errorf("host's limiter after a 429: %+v; want it enabled by the throttle", st)
		}
		if st := p.Limiter.(*ratelimit.Adaptive).State(scope); st.Enabled {
			t.Errorf("the request policy's own limiter: %+v; want it untouched", st)
		}
		if st := tr.scopeStats(scope); !st.Adaptive.Enabled {
			t.Errorf("Snapshot's adaptive state %+v; want the host limiter's", st.Adaptive)
		}
	})

	t.Run("RateLimit", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		host := &ratelimit.Fixed{Rate: 1, Burst: 1, Now: clock.Now}
		tr := newRig(t, &script{steps: []step{{status: 200}}}, policy.Policy{RateLimit: host}, onClock(clock))
		rp := retrytransport.NewRequestPolicy(own(clock))
		roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
		roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
		if diff := cmp.Diff([]time.Duration{time.Second}, tr.clock.Sleeps()); diff != "" {
			t.Errorf("waits of two requests at the host's 1/s (-want +got):\n%s", diff)
		}
	})

	t.Run("Breaker", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		s := &script{steps: []step{{status: 503}}}
		tr := newRig(t, s, policy.Policy{Breaker: circuit(clock)}, onClock(clock))
		p := own(clock)
		p.MaxAttempts = 1
		rp := retrytransport.NewRequestPolicy(p)
		for range 3 { // the host's circuit opens after three failures
			roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
		}
		_, err := tr.RoundTrip(under(newReq(t, "GET", url, ""), withPolicy(rp)))
		if !errors.Is(err, breaker.ErrOpen) || s.count() != 3 {
			t.Errorf("fourth request, %d sent: %v; want the host's open circuit to refuse it, 3 sent", s.count(), err)
		}
	})

	t.Run("Concurrency", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		host := &concurrency.Fixed{Max: 1}
		s := &script{steps: []step{{status: 200}}}
		tr := newRig(t, s, policy.Policy{Concurrency: host}, onClock(clock))
		permit, err := host.Acquire(context.Background(), scope) // the one place
		if err != nil {
			t.Fatal(err)
		}
		defer permit.Drop()
		_, err = tr.RoundTrip(under(newReq(t, "GET", url, ""), withPolicy(retrytransport.NewRequestPolicy(own(clock)))))
		if !errors.Is(err, concurrency.ErrLimited) || s.count() != 0 {
			t.Errorf("request while the host's one place is taken, %d sent: %v; want concurrency.ErrLimited, none sent", s.count(), err)
		}
	})

	t.Run("Penalty", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		s := &script{steps: []step{{status: 503}, {status: 200}}}
		tr := newRig(t, s, policy.Policy{Penalty: &policy.Penalty{Statuses: []int{503}, Delay: 5 * time.Second}}, onClock(clock))
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(own(clock))), "GET", url, "")
		if diff := cmp.Diff([]time.Duration{6 * time.Second}, tr.clock.Sleeps()); diff != "" {
			t.Errorf("wait after a 503 that starts the host's 5 s penalty, with a 1 s backoff (-want +got):\n%s", diff)
		}
	})

	// The quotas that responses publish go to the host's limiter in the
	// fields the host's policy trusts, whichever the request's rules trust
	// for their waits.
	t.Run("PublishedQuotas", func(t *testing.T) {
		s := &script{steps: []step{{status: 200, header: http.Header{
			"Ratelimit":             {`"q";r=5;t=2`},
			"X-Ratelimit-Remaining": {"599"}, "X-Ratelimit-Reset": {"10"},
		}}}}
		for _, tt := range []struct {
			name      string
			host, own retryafter.Source
			want      []quotaCall
		}{
			{"HostTrusts", retryafter.RateLimitReset, retryafter.None, []quotaCall{{scope, classify.Success, 599, 10 * time.Second}}},
			{"HostDoesNot", retryafter.None, retryafter.IETFRateLimit | retryafter.RateLimitReset, nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				l := &quotaHeard{}
				tr := newRig(t, s, policy.Policy{Limiter: l, ServerDelay: policy.ServerDelay{Headers: tt.host}})
				roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(policy.Policy{ServerDelay: policy.ServerDelay{Headers: tt.own}})), "GET", url, "")
				if diff := cmp.Diff(tt.want, l.heard); diff != "" {
					t.Errorf("RecordQuota calls of the host's limiter mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("Scope", func(t *testing.T) {
		clock := faketime.NewAt(time.Now())
		s := &script{steps: []step{{status: 503}, {status: 200}}}
		tr := newRig(t, s, policy.Policy{Scope: func(*http.Request) string { return "tenant-a" }}, onClock(clock), recordEvents())
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(own(clock))), "GET", url, "")
		st := tr.byScope()
		if len(st) != 1 || st["tenant-a"].Attempts != 2 || !st["tenant-a"].Custom {
			t.Errorf("Snapshot = %+v; want only the host's scope tenant-a, custom, with 2 attempts", st)
		}
		for _, ev := range tr.heard() {
			if ev.Scope != "tenant-a" {
				t.Errorf("Event.Scope = %q; want the host's tenant-a", ev.Scope)
			}
		}
	})
}

// One RequestPolicy serves several Transports, each request in its own
// Transport's scope state.
func TestRequestPolicySharedByTwoTransports(t *testing.T) {
	rp := retrytransport.NewRequestPolicy(policy.Policy{Backoff: everySecond})
	var buckets [2]*quota.Bucket
	for i := range buckets {
		clock := faketime.NewAt(time.Now())
		buckets[i] = &quota.Bucket{Now: clock.Now}
		tr := newRig(t, &script{steps: []step{{status: 503}}}, policy.Policy{Quota: buckets[i]}, onClock(clock))
		roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
	}
	for i, b := range buckets {
		if got := b.Level("api.example.com"); got != 490 {
			t.Errorf("quota of Transport %d: %v; want 490, its own request's two retries", i+1, got)
		}
	}
}

// Rules that New could not use end the request that carries them before
// its first attempt, with an error that names the field; other requests
// are untouched. Fields that hold the host's shared state are not the
// request's, and are not checked.
func TestRequestPolicyThatCannotBeUsedEndsOnlyItsRequest(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    policy.Policy
		want string
	}{
		{"MaxAttempts", policy.Policy{MaxAttempts: -1}, "retrytransport: request policy: MaxAttempts = -1; want >= 1"},
		{"FailoverEndpoint", policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ftp://x/path"}}}, "retrytransport: request policy: Failover.Endpoints[0]: "},
		{"AttemptHeader", policy.Policy{AttemptHeader: "no spaces"}, `retrytransport: request policy: AttemptHeader = "no spaces"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 200}}}
			tr := newRig(t, s, policy.Standard(), recordFinals())
			body := &closeCounter{Reader: strings.NewReader("payload")}
			req := newReq(t, "PUT", url, "")
			req.Body = body
			_, err := tr.RoundTrip(under(req, withPolicy(retrytransport.NewRequestPolicy(tt.p))))
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || re.Attempts != 0 || re.Reason != retrytransport.ErrInvalidPolicy || !strings.HasPrefix(re.Err.Error(), tt.want) {
				t.Errorf("RoundTrip = %v; want a *RetryError of 0 attempts for ErrInvalidPolicy whose Err begins %q", err, tt.want)
			}
			if n := body.closed.Load(); n != 1 {
				t.Errorf("request body closed %d times; want 1", n)
			}
			if n := s.count(); n != 0 {
				t.Errorf("%d attempts sent; want none", n)
			}
			if resp := tr.get(t, url); resp.StatusCode != 200 {
				t.Errorf("another request: status %d; want 200", resp.StatusCode)
			}
		})
	}

	t.Run("SharedFieldsAreNotChecked", func(t *testing.T) {
		s := &script{steps: []step{{status: 200}}}
		tr := newRig(t, s, policy.Standard())
		p := policy.Policy{Quota: &quota.Budget{}, Limiter: (*ratelimit.Adaptive)(nil), Penalty: &policy.Penalty{}}
		if p.Validate() == nil {
			t.Fatal("the policy of this test passes Validate; want one whose shared-state fields fail it")
		}
		roundTripUnder(t, tr, withPolicy(retrytransport.NewRequestPolicy(p)), "GET", url, "")
	})
}

// WithoutRetries: one attempt, whose response is the caller's, by the
// host's policy otherwise.
func TestWithoutRetriesSendsOnce(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Standard(), recordFinals())
	resp := roundTripUnder(t, tr, retrytransport.WithoutRetries, "GET", url, "")
	if n := s.count(); n != 1 || resp.StatusCode != 503 {
		t.Errorf("WithoutRetries: %d attempts, status %d; want 1, the 503", n, resp.StatusCode)
	}
	if n := attemptsFor(t, tr, s, url); n != 3 {
		t.Errorf("the next request: %d attempts; want the host's 3", n)
	}
	if ev := tr.finalEvents(); len(ev) != 2 || ev[0].Attempt != 1 || !ev[0].RequestPolicy {
		t.Errorf("final events %+v; want the first of one attempt, with rules of its own", ev)
	}
}

// Nor is a request without retries hedged: a copy sent beside it would
// be a second send. A hedged PUT's first attempt takes a fresh body from
// GetBody, as its copies do (the fake clock's hedge delay is over at
// once); one that is not hedged sends the caller's.
func TestWithoutRetriesDoesNotHedge(t *testing.T) {
	for _, tt := range []struct {
		name   string
		with   rules
		hedged bool
	}{
		{"HostRules", func(ctx context.Context) context.Context { return ctx }, true},
		{"WithoutRetries", retrytransport.WithoutRetries, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 200}}}
			tr := newRig(t, s, policy.Policy{Hedge: &policy.Hedge{Delay: time.Hour}})
			req := newReq(t, "PUT", url, "payload")
			var calls atomic.Int32
			getBody := req.GetBody
			req.GetBody = func() (io.ReadCloser, error) { calls.Add(1); return getBody() }
			resp, err := tr.RoundTrip(under(req, tt.with))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := calls.Load(); (n > 0) != tt.hedged {
				t.Errorf("GetBody called %d times; want it called: %t (hedged)", n, tt.hedged)
			}
		})
	}
}

// WithReplay: the caller vouches for a POST, which is then retried after
// any retryable outcome, its body replayed.
func TestWithReplayRetriesAPost(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 503}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	if resp := roundTripUnder(t, tr, retrytransport.WithReplay, "POST", url, `{"id":7}`); resp.StatusCode != 200 {
		t.Errorf("WithReplay POST: status %d; want 200", resp.StatusCode)
	}
	if diff := cmp.Diff([]string{`{"id":7}`, `{"id":7}`, `{"id":7}`}, s.received()); diff != "" {
		t.Errorf("bodies the server got (-want +got):\n%s", diff)
	}
	s2 := &script{steps: []step{{status: 503}}}
	tr2 := newRig(t, s2, policy.Standard())
	resp, err := tr2.RoundTrip(newReq(t, "POST", url, `{"id":7}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s2.count(); n != 1 {
		t.Errorf("the same POST without WithReplay: %d attempts; want 1", n)
	}
}

// Hedging from the request's own rules, under a host that does not hedge.
func TestRequestPolicyHedges(t *testing.T) {
	noLeaks(t)
	g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	srv := newFaultServer(t, g)
	tr := newRig(t, nil, policy.Policy{}, backoffUnlessSet(everySecond))
	client := tr.client(t)
	rp := retrytransport.NewRequestPolicy(policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay}})

	req, err := http.NewRequestWithContext(retrytransport.WithRequestPolicy(context.Background(), rp), "GET", srv.URL+"/slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); body != "answer 2" {
		t.Errorf("body %q, want the hedge's answer", body)
	}
	if s := tr.scopeStats(srv.host()); s.Attempts != 2 || s.Hedges != 1 {
		t.Errorf("stats %+v; want 2 attempts, 1 hedge", s)
	}
	srv.conns.expectAllClosed(t, client)
	g.cancelledSoon(t, 1)
}

// Failover from the request's own rules, under a host that does not fail
// over: the retry goes to the secondary, in its own scope.
func TestRequestPolicyFailsOver(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 200)
	tr := newRig(t, nil, policy.Policy{}, backoffUnlessSet(everySecond))
	rp := retrytransport.NewRequestPolicy(policy.Policy{Backoff: everySecond, Failover: &policy.Failover{Endpoints: []string{secondary.host()}}})

	resp, err := tr.RoundTrip(under(newReq(t, "GET", primary.URL, ""), withPolicy(rp)))
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, resp); got != secondary.URL {
		t.Errorf("body = %q, want the secondary's %q", got, secondary.URL)
	}
	if p, s := primary.n.Load(), secondary.n.Load(); p != 1 || s != 1 {
		t.Errorf("primary got %d attempts, secondary %d; want 1 and 1", p, s)
	}
	if st := tr.scopeStats(secondary.host()); st.Attempts != 1 {
		t.Errorf("Snapshot of the secondary: %+v; want 1 attempt", st)
	}
	tr.get(t, primary.URL)
	if p, s := primary.n.Load(), secondary.n.Load(); p != 4 || s != 1 {
		t.Errorf("after a request without rules of its own: primary %d, secondary %d; want 4 and 1", p, s)
	}
}

// An SDK's own attempts still count under a request's own rules: each SDK
// attempt but its last is sent once, and the last gets what is left of the
// request policy's attempts, so that a call costs the larger of the two
// counts (5), not their product.
func TestRequestPolicySDKAttemptsStillCount(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Standard())
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5, Backoff: everySecond, RetryNonIdempotent: true})
	for n := 1; n <= 3; n++ {
		req := under(newReq(t, "POST", url, `{"TableName":"t"}`), withPolicy(rp))
		req.Header.Set("amz-sdk-request", fmt.Sprintf("attempt=%d; max=3", n))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("SDK attempt %d: %v", n, err)
		}
		resp.Body.Close()
	}
	if n := s.count(); n != 5 {
		t.Errorf("server hits for an SDK call of 3 attempts under MaxAttempts 5: %d; want 5", n)
	}
}

// Under a host map, the request's rules win over those of the host's
// pattern, and the host's scope (its Scope function) stays.
func TestRequestPolicyWinsOverTheHostsRulesAndKeepsItsScope(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tenant := func(*http.Request) string { return "tenant-a" }
	tr := newRig(t, s, policy.Policy{MaxAttempts: 4}, recordEvents(), withOptions(
		retrytransport.WithHostPolicy("api.example.com", policy.Policy{MaxAttempts: 2, Backoff: halfJitter, Scope: tenant})))
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5, Backoff: everySecond})

	roundTripUnder(t, tr, withPolicy(rp), "GET", url, "")
	if n := s.count(); n != 5 {
		t.Errorf("attempts = %d; want the request policy's 5, not the host pattern's 2", n)
	}
	st := tr.byScope()
	if len(st) != 1 || st["tenant-a"].Attempts != 5 || !st["tenant-a"].Custom {
		t.Errorf("Snapshot = %+v; want only the host pattern's scope tenant-a, with 5 attempts", st)
	}
	for _, ev := range tr.heard() {
		if ev.Scope != "tenant-a" || !ev.RequestPolicy {
			t.Errorf("Event scope %q, RequestPolicy %t; want tenant-a, true", ev.Scope, ev.RequestPolicy)
		}
	}
}

// Every Event of a request with rules of its own says so, and the
// logger's lines show it; those of other requests do not.
func TestRequestPolicyEvents(t *testing.T) {
	rp := retrytransport.NewRequestPolicy(policy.Policy{Backoff: everySecond})
	for _, tt := range []struct {
		name string
		with rules
		want bool
	}{
		{"HostRules", func(ctx context.Context) context.Context { return ctx }, false},
		{"WithRequestPolicy", withPolicy(rp), true},
		{"WithoutRetries", retrytransport.WithoutRetries, true},
		{"WithReplay", retrytransport.WithReplay, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			s := &script{steps: []step{{status: 503}}}
			tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, recordEvents(), recordFinals(), withOptions(retrytransport.WithLogger(logger)))
			roundTripUnder(t, tr, tt.with, "GET", url, "")
			evs := append(tr.heard(), tr.finalEvents()...)
			if len(evs) < 2 {
				t.Fatalf("%d events; want at least one each for WithObserver and WithFinalObserver", len(evs))
			}
			for _, ev := range evs {
				if ev.RequestPolicy != tt.want {
					t.Errorf("Event (attempt %d, final %t).RequestPolicy = %t; want %t", ev.Attempt, ev.Final, ev.RequestPolicy, tt.want)
				}
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			for _, line := range lines {
				if got := strings.Contains(line, "request_policy=true"); got != tt.want {
					t.Errorf("log line %q has request_policy=true: %t; want %t", line, got, tt.want)
				}
			}
		})
	}
}

// Each of WithRequestPolicy, WithoutRetries and WithReplay replaces the
// rules its context carried; a nil RequestPolicy, or a zero one, means the
// host's rules.
func TestRequestRulesLastWins(t *testing.T) {
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5, Backoff: everySecond})
	chain := func(rs ...rules) rules {
		return func(ctx context.Context) context.Context {
			for _, r := range rs {
				ctx = r(ctx)
			}
			return ctx
		}
	}
	for _, tt := range []struct {
		name string
		with rules
		want int
	}{
		{"NilAfterWithoutRetries", chain(retrytransport.WithoutRetries, withPolicy(nil)), 3},
		{"ZeroRequestPolicy", withPolicy(&retrytransport.RequestPolicy{}), 3},
		{"PolicyAfterWithoutRetries", chain(retrytransport.WithoutRetries, withPolicy(rp)), 5},
		{"WithoutRetriesAfterPolicy", chain(withPolicy(rp), retrytransport.WithoutRetries), 1},
		{"ReplayAfterWithoutRetries", chain(retrytransport.WithoutRetries, retrytransport.WithReplay), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503}}}
			tr := newRig(t, s, policy.Standard())
			roundTripUnder(t, tr, tt.with, "GET", url, "")
			if n := s.count(); n != tt.want {
				t.Errorf("attempts = %d; want %d", n, tt.want)
			}
		})
	}
}

// A request policy that is reused, and each shorthand, cost no allocation
// per request once the host policy has met them, beyond the caller's
// context (made once here).
//
// The stub's response has a body, unread, which the standard classifier
// leaves alone on a success: so must a request policy without a Classify
// of its own.
func TestRequestPolicyAllocatesNothing(t *testing.T) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Header: http.Header{}}}
	tr := retrytransport.New(stub)
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5})
	for _, tt := range []struct {
		name string
		with rules
	}{
		{"WithRequestPolicy", withPolicy(rp)},
		{"WithoutRetries", retrytransport.WithoutRetries},
		{"WithReplay", retrytransport.WithReplay},
	} {
		req, _ := http.NewRequestWithContext(tt.with(context.Background()), "GET", "http://api.example.com/", nil)
		if n := testing.AllocsPerRun(1000, func() { tr.RoundTrip(req) }); n != 0 {
			t.Errorf("RoundTrip(GET) %s on the happy path: %v allocations; want 0", tt.name, n)
		}
	}

	// Under two host policies in turn, a RequestPolicy finds the rules of
	// each where it keeps them.
	tr = retrytransport.New(stub, retrytransport.WithHostPolicy("other.example.com", policy.Standard()))
	ctx := retrytransport.WithRequestPolicy(context.Background(), rp)
	a, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example.com/", nil)
	b, _ := http.NewRequestWithContext(ctx, "GET", "http://other.example.com/", nil)
	if n := testing.AllocsPerRun(1000, func() { tr.RoundTrip(a); tr.RoundTrip(b) }); n != 0 {
		t.Errorf("RoundTrip(GET) of two hosts in turn, with one RequestPolicy: %v allocations; want 0", n)
	}
}
