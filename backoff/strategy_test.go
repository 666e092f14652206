package backoff_test

import (
	"sync"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// Every strategy must satisfy the interface.
var (
	_ backoff.Strategy = backoff.Func(nil)
	_ backoff.Strategy = backoff.FullJitter{}
	_ backoff.Strategy = backoff.EqualJitter{}
	_ backoff.Strategy = backoff.Decorrelated{}
	_ backoff.Strategy = backoff.ScaledJitter{}
	_ backoff.Strategy = backoff.Exponential{}
	_ backoff.Strategy = backoff.Incremental{}
	_ backoff.Strategy = backoff.Constant{}
	_ backoff.Strategy = backoff.Schedule{}
	_ backoff.Strategy = backoff.Capped{}
	_ backoff.Strategy = backoff.Jittered{}
)

func TestFuncCallsFunction(t *testing.T) {
	f := backoff.Func(func(retry int) time.Duration {
		return time.Duration(retry) * time.Second
	})
	for _, retry := range []int{1, 2, 7} {
		if got, want := f.Delay(retry), time.Duration(retry)*time.Second; got != want {
			t.Errorf("Func.Delay(%d) = %v; want %v", retry, got, want)
		}
	}
}

func TestFuncPassesRetryUnchanged(t *testing.T) {
	var seen []int
	f := backoff.Func(func(retry int) time.Duration {
		seen = append(seen, retry)
		return 0
	})
	for _, retry := range []int{-3, 0, 1, 1000} {
		f.Delay(retry)
	}
	want := []int{-3, 0, 1, 1000}
	if len(seen) != len(want) {
		t.Fatalf("Func.Delay called f %d times; want %d", len(seen), len(want))
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("Func.Delay(%d) called f(%d); want f(%d)", want[i], seen[i], want[i])
		}
	}
}

func TestFuncNegativeIsZero(t *testing.T) {
	f := backoff.Func(func(int) time.Duration { return -time.Second })
	if got := f.Delay(1); got != 0 {
		t.Errorf("Func(-1s).Delay(1) = %v; want 0", got)
	}
}

func TestFuncNilIsZero(t *testing.T) {
	var f backoff.Func
	if got := f.Delay(1); got != 0 {
		t.Errorf("Func(nil).Delay(1) = %v; want 0", got)
	}
}

func TestStrategiesConcurrentUse(t *testing.T) {
	// One value of each strategy, with the default Rand, shared by many
	// goroutines; the race detector checks that none keeps state.
	strategies := []backoff.Strategy{
		backoff.FullJitter{},
		backoff.EqualJitter{},
		backoff.Decorrelated{},
		backoff.ScaledJitter{},
		backoff.Exponential{},
		backoff.Incremental{},
		backoff.Constant{},
		backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 10, Jitter: 0.5},
		backoff.Capped{Strategy: backoff.Incremental{}},
		backoff.Jittered{Strategy: backoff.Constant{}},
	}
	var wg sync.WaitGroup
	for _, s := range strategies {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for retry := 1; retry <= 50; retry++ {
					if got := s.Delay(retry); got < 0 {
						t.Errorf("%T.Delay(%d) = %v; want >= 0", s, retry, got)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}
