package retrytransport

import (
	"context"
	"net/http"
	"testing"

	"github.com/retrytransport/retrytransport/policy"
)

// okBase answers every request 200, without a body.
type okBase struct{}

func (okBase) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
}

// The statistics of a scope first seen by a request with rules of its own
// keep the host's compiled policy, not the rules merged with it: Snapshot
// reads the host's state through it, and the merged rules, which a
// RequestPolicy may hold for one request only, are not kept alive by it.
func TestRequestPolicyScopeCountersKeepTheHostsPolicy(t *testing.T) {
	for _, ctx := range []context.Context{
		WithRequestPolicy(context.Background(), NewRequestPolicy(policy.Policy{MaxAttempts: 5})),
		WithoutRetries(context.Background()),
		WithReplay(context.Background()),
	} {
		tr := New(okBase{})
		req, err := http.NewRequestWithContext(ctx, "GET", "http://api.example.com/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		v, ok := tr.stats.m.Load("api.example.com")
		if !ok {
			t.Fatal("no statistics for api.example.com")
		}
		if got := v.(*scopeCounters).cp; got != tr.hosts.def {
			t.Errorf("scope counters keep %p (its own rules: %t); want the host's compiled policy %p", got, got.hostPolicy != nil, tr.hosts.def)
		}
	}
}
