package redisretry_test

import (
	"testing"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/redisretry"
)

// benchBreaker returns a Breaker on a Store of benchStore's, and the
// in-process circuit it is measured against.
func benchBreaker(b *testing.B) (*redisretry.Breaker, *breaker.Circuit) {
	br := benchStore(b).Breaker(nil)
	p, _ := br.Allow(scope) // reads the circuit once, and loads the script
	p.Done(answered, nil)
	return br, &breaker.Circuit{}
}

// BenchmarkBreakerClosed is the cost a closed shared circuit adds to an
// attempt, Allow and a successful Done, next to breaker.Circuit's in the
// same run; it reads the shared circuit once per Refresh.
func BenchmarkBreakerClosed(b *testing.B) {
	br, c := benchBreaker(b)
	for _, bb := range []struct {
		name string
		br   breaker.Breaker
	}{{"Shared", br}, {"Circuit", c}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, _ := bb.br.Allow(scope)
				p.Done(answered, nil)
			}
		})
	}
}

// BenchmarkBreakerClosedParallel is BenchmarkBreakerClosed from every
// core at once, on one scope.
func BenchmarkBreakerClosedParallel(b *testing.B) {
	br, c := benchBreaker(b)
	for _, bb := range []struct {
		name string
		br   breaker.Breaker
	}{{"Shared", br}, {"Circuit", c}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, _ := bb.br.Allow(scope)
					p.Done(answered, nil)
				}
			})
		})
	}
}
