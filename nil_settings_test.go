package retrytransport_test

// A nil pointer of the module's own quota and limiter types in a policy
// (configuration code that declared a *quota.Bucket and never set it)
// means what nil means in that field, through the whole transport.

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// nilSettingRun is what one request through a fresh transport did: its
// attempts, its waits, and the transport's Snapshot after it.
type nilSettingRun struct {
	Status   int
	Attempts int
	Sleeps   string
	Stats    []retrytransport.ScopeStats
}

// runNilSetting sends one GET that fails once with a 503 and then
// succeeds, through a transport with p, and returns what it did; a panic
// is reported as an error.
func runNilSetting(t *testing.T, p policy.Policy) (run nilSettingRun, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr := newRig(t, s, p)
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example/x", ""))
	if err != nil {
		return run, err
	}
	resp.Body.Close()
	return nilSettingRun{resp.StatusCode, s.count(), fmt.Sprint(tr.clock.Sleeps()), tr.Snapshot()}, nil
}

func TestNilPointerSettingsMeanNil(t *testing.T) {
	tests := []struct {
		name string
		set  func(p *policy.Policy)
	}{
		{"QuotaBucket", func(p *policy.Policy) { p.Quota = (*quota.Bucket)(nil) }},
		{"QuotaBudget", func(p *policy.Policy) { p.Quota = (*quota.Budget)(nil) }},
		{"BudgetBudget", func(p *policy.Policy) { p.Budget = (*quota.Budget)(nil) }},
		{"BudgetBucket", func(p *policy.Policy) { p.Budget = (*quota.Bucket)(nil) }},
		{"LimiterAdaptive", func(p *policy.Policy) { p.Limiter = (*ratelimit.Adaptive)(nil) }},
		{"LimiterFixed", func(p *policy.Policy) { p.Limiter = (*ratelimit.Fixed)(nil) }},
		{"RateLimitFixed", func(p *policy.Policy) { p.RateLimit = (*ratelimit.Fixed)(nil) }},
		{"RateLimitAdaptive", func(p *policy.Policy) { p.RateLimit = (*ratelimit.Adaptive)(nil) }},
	}
	want, err := runNilSetting(t, policy.Policy{})
	if err != nil || want.Status != http.StatusOK || want.Attempts != 2 {
		t.Fatalf("with nil settings: %+v, %v; want a 200 after 2 attempts", want, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p policy.Policy
			tt.set(&p)
			got, err := runNilSetting(t, p)
			if err != nil {
				t.Fatalf("RoundTrip: %v; want what a nil field gives", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request and Snapshot differ from those with the field nil (-want +got):\n%s", diff)
			}
		})
	}
}
