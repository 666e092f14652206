package ratelimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// BenchmarkAdaptiveParallel measures one attempt's bookkeeping, ReserveAt
// then RecordAt, from every CPU at once: on one scope, which the
// goroutines share, and on 16, which each goroutine takes in turn from its
// own starting point, so that at any moment they mostly use different
// scopes. With no lock shared by all scopes, 16 scopes cost no more per
// operation than one. Each scope is either never throttled or enabled by a
// throttle, its bucket then in use.
func BenchmarkAdaptiveParallel(b *testing.B) {
	for _, enabled := range []bool{false, true} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("enabled=%t/scopes=%d", enabled, n), func(b *testing.B) {
				var a ratelimit.Adaptive
				scopes := make([]string, n)
				for i := range scopes {
					scopes[i] = fmt.Sprintf("host%d.example.com", i)
					a.RecordAt(t0, scopes[i], classify.Success)
					if enabled {
						a.RecordAt(t0, scopes[i], classify.Throttle)
					}
				}
				// The clock stands still: the arithmetic costs the
				// same whatever the tokens, and the benchmark measures
				// finding and locking the scope, not the clock.
				now := t0.Add(time.Hour)
				var start atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(start.Add(7)) // 7 is prime to 16: the goroutines start apart
					for pb.Next() {
						s := scopes[i%n]
						i++
						a.ReserveAt(now, s)
						a.RecordAt(now, s, classify.Success)
					}
				})
			})
		}
	}
}
