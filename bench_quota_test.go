package retrytransport_test

import (
	"net/http"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// BenchmarkOverheadAdaptive is BenchmarkOverhead's GET through
// policy.Adaptive(), whose limiter is asked before and told after every
// attempt, against responses without and with the quota fields that an
// API such as GitHub's sends on every response. The quota is large enough
// (10^9 per second) never to hold a send: what is measured is reading
// and recording it.
func BenchmarkOverheadAdaptive(b *testing.B) {
	get, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"plain", http.Header{}},
		{"XRateLimit", http.Header{"X-Ratelimit-Remaining": {"1000000000"}, "X-Ratelimit-Reset": {"1"}}},
		{"RateLimit", http.Header{"Ratelimit": {`"default";r=1000000000;t=1`}}},
	} {
		stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: tc.header}}
		rt := retrytransport.New(stub, retrytransport.WithPolicy(policy.Adaptive()))
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.RoundTrip(get); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
