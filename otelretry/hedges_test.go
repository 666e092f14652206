package otelretry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/otelretry"
	"github.com/retrytransport/retrytransport/policy"
)

// hedgeDelay is the hedge delay of these tests. The rig's fake clock
// sleeps it at once, so each attempt's copy is sent as soon as the attempt
// is; the servers below decide which of the two answers.
const hedgeDelay = 5 * time.Millisecond

// pairServer is an httptest server for hedged requests, whose attempts
// each arrive as a pair: the attempt and its copy, in either order. The
// first of each pair waits for the second; then it answers with status,
// or, when status is 0, it never answers, and ends when the client cancels
// it (the second answers 200 at once).
type pairServer struct {
	*httptest.Server
	status int

	mu      sync.Mutex
	n       int
	arrived chan struct{} // closed when the current pair's second arrives
}

func newPairServer(t *testing.T, status int) *pairServer {
	t.Helper()
	s := &pairServer{status: status}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close) // waits for the held requests, which the client cancelled
	return s
}

func (s *pairServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	first := s.n%2 == 1
	if first {
		s.arrived = make(chan struct{})
	} else {
		close(s.arrived)
	}
	arrived := s.arrived
	s.mu.Unlock()
	switch {
	case first && s.status == 0:
		<-r.Context().Done()
		return
	case first:
		select {
		case <-arrived:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(s.status)
	case s.status == 0:
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(s.status)
	}
}

// hedging is the standard policy with a hedge after hedgeDelay.
func hedging() policy.Policy {
	p := policy.Standard()
	p.Hedge = &policy.Hedge{Delay: hedgeDelay}
	return p
}

// TestHedgesCounter: an attempt slow to answer gets a copy, which wins;
// the copy shows in retrytransport.hedges, per scope, and under _OTHER
// for the scopes of a Scope function without WithScopeAttribute.
func TestHedgesCounter(t *testing.T) {
	tenants := func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }
	for _, tc := range []struct {
		name    string
		scope   func(*http.Request) string
		opts    []otelretry.Option
		tenants []string                        // the X-Tenant of each request; "": none
		want    func(host, port string) []point // the counter's points
	}{
		{"PerScope", nil, nil, []string{""}, func(host, port string) []point {
			return []point{{scopeOnly(host + ":" + port), 1}}
		}},
		{"Other", tenants, nil, []string{"a", "b"}, func(string, string) []point {
			return []point{{scopeOnly("_OTHER"), 2}}
		}},
		{"WithScopeAttribute", tenants, []otelretry.Option{otelretry.WithScopeAttribute()}, []string{"a", "b"},
			func(string, string) []point {
				return []point{{scopeOnly("tenant-a"), 1}, {scopeOnly("tenant-b"), 1}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newPairServer(t, 0)
			p := hedging()
			p.Scope = tc.scope
			r := newRig(t, p, tc.opts...)
			for _, tenant := range tc.tenants {
				_, status, err := callReq(t, r, context.Background(), "GET", srv.URL, nil, func(req *http.Request) {
					if tenant != "" {
						req.Header.Set("X-Tenant", tenant)
					}
				})
				if err != nil || status != 200 {
					t.Fatalf("GET for tenant %q = %d, %v; want the copy's 200", tenant, status, err)
				}
			}
			host, port := hostPort(t, srv.URL)
			want := tc.want(host, port)
			sortPoints(want)
			if diff := cmp.Diff(want, sortedPoints(t, r.collect(t), "retrytransport.hedges")); diff != "" {
				t.Errorf("hedges (-want +got):\n%s", diff)
			}
			// A copy that won ends its request at the first attempt, with
			// no event on the caller's span.
			for _, s := range r.spans.Ended() {
				if ev := eventsOf(s); s.Name() == "caller" && len(ev) != 0 {
					t.Errorf("caller's span events %v; want none", ev)
				}
			}
		})
	}
}

// TestHedgesAttribute: the retry and give-up events of a request whose
// attempts were hedged say how many copies it has sent so far.
func TestHedgesAttribute(t *testing.T) {
	srv := newPairServer(t, 503)
	p := hedging()
	p.MaxAttempts = 2
	r := newRig(t, p)
	if _, status, err := r.call(t, context.Background(), "GET", srv.URL); err != nil || status != 503 {
		t.Fatalf("GET = %d, %v; want the 503", status, err)
	}
	caller, attempts := r.ended(t)
	// Each copy has a span, with the resend count of its attempt.
	resends := map[string]int{}
	for _, s := range attempts {
		resends[viewOf(s).Resend]++
	}
	if diff := cmp.Diff(map[string]int{"": 2, "1": 2}, resends); diff != "" {
		t.Errorf("attempt spans by http.request.resend_count (-want +got):\n%s", diff)
	}
	events := eventsOf(caller)
	if len(events) != 2 {
		t.Fatalf("caller's span events %v; want a retry, then the give-up", events)
	}
	for i, want := range []struct{ name, hedges string }{
		{"retrytransport.retry", "1"},
		{"retrytransport.give_up", "2"},
	} {
		if ev := events[i]; ev.Name != want.name || ev.Attrs["retrytransport.hedges"] != want.hedges {
			t.Errorf("event %d = %s with retrytransport.hedges %q; want %s with %s",
				i, ev.Name, ev.Attrs["retrytransport.hedges"], want.name, want.hedges)
		}
	}
	host, port := hostPort(t, srv.URL)
	if diff := cmp.Diff([]point{{scopeOnly(host + ":" + port), 2}}, sortedPoints(t, r.collect(t), "retrytransport.hedges")); diff != "" {
		t.Errorf("hedges (-want +got):\n%s", diff)
	}
}
