package quota_test

import (
	"errors"
	"testing"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
)

func TestErrOverBudgetIsNotErrExceeded(t *testing.T) {
	if errors.Is(quota.ErrOverBudget, quota.ErrExceeded) || errors.Is(quota.ErrExceeded, quota.ErrOverBudget) {
		t.Errorf("errors.Is between ErrOverBudget and ErrExceeded = true; want two distinct sentinels")
	}
}

func TestNoneGrantsEveryRetryAtNoCost(t *testing.T) {
	for _, k := range []classify.Kind{classify.Transient, classify.Timeout, classify.Throttle, classify.Success, classify.Fatal} {
		for range 1000 {
			if cost, wait, ok := quota.None.Acquire("a", k); cost != 0 || wait != 0 || !ok {
				t.Fatalf("None.Acquire(a, %v) = %d, %v, %t; want 0, 0, true", k, cost, wait, ok)
			}
		}
	}
	quota.None.Refund("a", 5)
	quota.None.Success("a")
	if got := quota.None.Level("a"); got != -1 {
		t.Errorf("None.Level(a) = %v; want -1", got)
	}
	if _, ok := quota.None.(quota.RequestCounter); ok {
		t.Error("None is a RequestCounter; want it to count nothing")
	}
}
