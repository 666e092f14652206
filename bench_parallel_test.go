package retrytransport_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// BenchmarkOverheadParallel is BenchmarkOverhead's GET on a stub base sent
// from every CPU at once (b.RunParallel), to one host or to 16, each
// goroutine taking the hosts in turn from its own starting point. Its
// overhead is a Transport's ns/op less bare's in the same run. The
// adaptive limiter of policy.Adaptive is asked and told on every request,
// so it must take no lock that all hosts share: with 16 hosts its overhead
// should be no more than with one, and within twice it. Standard, with no
// limiter, shows what the rest of the Transport costs.
func BenchmarkOverheadParallel(b *testing.B) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	for _, hosts := range []int{1, 16} {
		reqs := make([]*http.Request, hosts)
		for i := range reqs {
			url := fmt.Sprintf("http://api%d.example.com/", i)
			req, err := http.NewRequest("GET", url, nil)
			if err != nil {
				b.Fatalf("http.NewRequest(GET, %q): %v", url, err)
			}
			reqs[i] = req
		}
		for _, tc := range []struct {
			name string
			rt   http.RoundTripper
		}{
			{"bare", stub},
			{"standard", retrytransport.New(stub, retrytransport.WithPolicy(policy.Standard()))},
			{"adaptive", retrytransport.New(stub, retrytransport.WithPolicy(policy.Adaptive()))},
		} {
			b.Run(fmt.Sprintf("hosts=%d/%s", hosts, tc.name), func(b *testing.B) {
				var start atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(start.Add(7)) // 7 is prime to 16: the goroutines start apart
					for pb.Next() {
						if _, err := tc.rt.RoundTrip(reqs[i%hosts]); err != nil {
							b.Error(err)
							return
						}
						i++
					}
				})
			})
		}
	}
}
