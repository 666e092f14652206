package concurrency_test

import (
	"context"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// The transport's happy path stays free of allocations: taking a free
// place and ending it, and being refused, allocate nothing.

// TestAcquireAndDoneDoNotAllocate: on a stored scope, a refusal, and
// Acquire on a free place with Done, allocate nothing, for Adaptive and
// Fixed.
func TestAcquireAndDoneDoNotAllocate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		lim  concurrency.Limiter
	}{
		{"adaptive", &concurrency.Adaptive{Initial: 1}},
		{"fixed", &concurrency.Fixed{Max: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, err := tt.lim.Acquire(ctx, "api") // stores the scope and takes its one place
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			refused := testing.AllocsPerRun(1000, func() {
				if _, err := tt.lim.Acquire(ctx, "api"); err != concurrency.ErrLimited {
					t.Fatalf("Acquire on a full scope = %v; want ErrLimited", err)
				}
			})
			if refused != 0 {
				t.Errorf("a refusal allocates %v times; want 0", refused)
			}
			held.Drop()
			free := testing.AllocsPerRun(1000, func() {
				p, err := tt.lim.Acquire(ctx, "api")
				if err != nil {
					t.Fatalf("Acquire on a free place = %v", err)
				}
				p.Done(10*time.Millisecond, classify.Success)
			})
			if free != 0 {
				t.Errorf("Acquire+Done allocates %v times; want 0", free)
			}
		})
	}
}

// BenchmarkAdaptiveAcquireDone is the cost of a free place taken and
// ended on a stored scope, from one goroutine.
func BenchmarkAdaptiveAcquireDone(b *testing.B) {
	benchAcquireDone(b, &concurrency.Adaptive{})
}

// BenchmarkFixedAcquireDone is the same for a Fixed.
func BenchmarkFixedAcquireDone(b *testing.B) {
	benchAcquireDone(b, &concurrency.Fixed{Max: 100})
}

func benchAcquireDone(b *testing.B, lim concurrency.Limiter) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := lim.Acquire(ctx, "api")
		if err != nil {
			b.Fatal(err)
		}
		p.Done(10*time.Millisecond, classify.Success)
	}
}

// BenchmarkAdaptiveParallel is the same from many goroutines on 64
// scopes.
func BenchmarkAdaptiveParallel(b *testing.B) {
	a := &concurrency.Adaptive{}
	ctx := context.Background()
	scopes := make([]string, 64)
	for i := range scopes {
		scopes[i] = "host" + string(rune('A'+i))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			p, err := a.Acquire(ctx, scopes[i%len(scopes)])
			if err == nil {
				p.Done(10*time.Millisecond, classify.Success)
			}
			i++
		}
	})
}
