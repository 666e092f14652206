package backoff_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
)

func TestSchedulePhaseOf(t *testing.T) {
	// 1 immediate, 2 at MinDelay, 10 - 1 - 2 - 3 = 4 backing off, 3 at MaxDelay.
	s := backoff.Schedule{NumRetries: 10, NumNoDelayRetries: 1, NumMinDelayRetries: 2, NumMaxDelayRetries: 3}
	type row struct {
		Phase string
		I, K  int
	}
	var got []row
	for n := 0; n <= 11; n++ {
		ph, i, k := s.PhaseOf(n)
		got = append(got, row{ph.String(), i, k})
	}
	want := []row{
		{"immediate", 0, 0}, // retry 0 counts as 1
		{"immediate", 0, 0},
		{"pre-backoff", 0, 0}, {"pre-backoff", 0, 0},
		{"backoff", 1, 4}, {"backoff", 2, 4}, {"backoff", 3, 4}, {"backoff", 4, 4},
		{"post-backoff", 0, 0}, {"post-backoff", 0, 0}, {"post-backoff", 0, 0},
		{"past the policy", 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PhaseOf(0..11) mismatch (-want +got):\n%s", diff)
	}
	if got := backoff.Phase(99).String(); got != "phase(?)" {
		t.Errorf("Phase(99).String() = %q; want %q", got, "phase(?)")
	}
}
