package backoff_test

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// Both strategies must satisfy the interface.
var (
	_ backoff.Strategy = backoff.Func(nil)
	_ backoff.Strategy = backoff.FullJitter{}
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
