package otelretry_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
)

// TestEndpointAttribute: the caller's span events name the endpoint of
// the last attempt only when the attempt failed over to an alternate
// endpoint (policy.Policy.Failover); an attempt sent to the request URL's
// own host adds nothing.
func TestEndpointAttribute(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mode        policy.LocationMode
		maxAttempts int
		secondary   int // the secondary's status; the primary answers 503
		wantStatus  int
		want        func(secondary string) []eventView
	}{
		{"Recovered", policy.PrimaryThenSecondary, 0, 200, 200, func(string) []eventView {
			// Attempt 1 went to the primary, the URL's host: no endpoint;
			// its retry paid the secondary's quota, not the primary's.
			return []eventView{{"retrytransport.retry", map[string]string{
				"retrytransport.attempt": "1", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
				"http.response.status_code": "503", "retrytransport.waited_seconds": "0", "retrytransport.quota": "500",
				"retrytransport.delay_seconds": "0.5", "retrytransport.server_delay": "false"}}}
		}},
		{"GaveUpOnSecondary", policy.PrimaryThenSecondary, 2, 503, 503, func(secondary string) []eventView {
			return []eventView{
				{"retrytransport.retry", map[string]string{
					"retrytransport.attempt": "1", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
					"http.response.status_code": "503", "retrytransport.waited_seconds": "0", "retrytransport.quota": "500",
					"retrytransport.delay_seconds": "0.5", "retrytransport.server_delay": "false"}},
				{"retrytransport.give_up", map[string]string{
					"retrytransport.attempts": "2", "retrytransport.endpoint": secondary,
					"retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
					"http.response.status_code": "503", "retrytransport.waited_seconds": "0.5", "retrytransport.quota": "495",
					"retrytransport.stop_reason": "exhausted"}},
			}
		}},
		{"SecondaryFirst", policy.SecondaryThenPrimary, 0, 503, 503, func(secondary string) []eventView {
			return []eventView{
				{"retrytransport.retry", map[string]string{
					"retrytransport.attempt": "1", "retrytransport.endpoint": secondary,
					"retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
					"http.response.status_code": "503", "retrytransport.waited_seconds": "0", "retrytransport.quota": "500",
					"retrytransport.delay_seconds": "0.5", "retrytransport.server_delay": "false"}},
				// Each endpoint is a scope of its own, each retry paid 5
				// in the scope it went to (the primary, then the
				// secondary), and each Event tells its own scope's level.
				{"retrytransport.retry", map[string]string{
					"retrytransport.attempt": "2", "retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
					"http.response.status_code": "503", "retrytransport.waited_seconds": "0.5", "retrytransport.quota": "495",
					"retrytransport.delay_seconds": "1", "retrytransport.server_delay": "false"}},
				{"retrytransport.give_up", map[string]string{
					"retrytransport.attempts": "3", "retrytransport.endpoint": secondary,
					"retrytransport.outcome": "transient", "retrytransport.reason": "status 503",
					"http.response.status_code": "503", "retrytransport.waited_seconds": "1.5", "retrytransport.quota": "495",
					"retrytransport.stop_reason": "exhausted"}},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := newServer(t, answer{status: 503})
			secondary := newServer(t, answer{status: tc.secondary})
			host, port := hostPort(t, secondary.URL)
			p := policy.Standard()
			p.Failover = &policy.Failover{Endpoints: []string{host + ":" + port}, Mode: tc.mode}
			p.MaxAttempts = tc.maxAttempts
			r := newRig(t, p)
			if _, status, err := r.call(t, context.Background(), "GET", primary.URL); err != nil || status != tc.wantStatus {
				t.Fatalf("GET = %d, %v; want %d", status, err, tc.wantStatus)
			}
			caller, _ := r.ended(t)
			if diff := cmp.Diff(tc.want(host+":"+port), eventsOf(caller)); diff != "" {
				t.Errorf("caller's span events (-want +got):\n%s", diff)
			}
		})
	}
}
