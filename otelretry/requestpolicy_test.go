package otelretry_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// TestRequestPolicyAttribute: the retry and give-up events of a request
// that carried rules of its own say so, in retrytransport.request_policy;
// those of a request retried by its host's rules do not have it.
func TestRequestPolicyAttribute(t *testing.T) {
	rp := retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 3, Backoff: halfJitter})
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want []string // the events' names, each with its attribute's value
	}{
		{"HostRules", context.Background(), []string{"retrytransport.retry=", "retrytransport.give_up="}},
		{"WithRequestPolicy", retrytransport.WithRequestPolicy(context.Background(), rp),
			[]string{"retrytransport.retry=true", "retrytransport.retry=true", "retrytransport.give_up=true"}},
		{"WithoutRetries", retrytransport.WithoutRetries(context.Background()), []string{"retrytransport.give_up=true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, answer{status: 503})
			r := newRig(t, policy.Policy{MaxAttempts: 2})
			if _, status, err := r.call(t, tt.ctx, "GET", srv.URL); err != nil || status != 503 {
				t.Fatalf("GET = %d, %v; want the 503", status, err)
			}
			caller, _ := r.ended(t)
			var got []string
			for _, ev := range eventsOf(caller) {
				got = append(got, ev.Name+"="+ev.Attrs["retrytransport.request_policy"])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("caller's span events with retrytransport.request_policy (-want +got):\n%s", diff)
			}
		})
	}
}
