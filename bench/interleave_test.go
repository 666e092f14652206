package main

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestInterleave checks the order of the runs, round by round and in each
// round contender by contender, and where each run's result lands.
func TestInterleave(t *testing.T) {
	var order []string
	got := interleave(3, []string{"a", "b"}, func(round int, c string) string {
		run := fmt.Sprintf("%s%d", c, round)
		order = append(order, run)
		return run
	})
	if want := []string{"a0", "b0", "a1", "b1", "a2", "b2"}; !reflect.DeepEqual(order, want) {
		t.Errorf("interleave(3, [a b]) ran %v; want %v", order, want)
	}
	if want := [][]string{{"a0", "a1", "a2"}, {"b0", "b1", "b2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("interleave(3, [a b]) = %v; want %v", got, want)
	}
}

// TestInterleaveErrStops checks that the first error ends the rounds and
// is returned.
func TestInterleaveErrStops(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	runs, err := interleaveErr(3, []string{"a", "b"}, func(round int, c string) (int, error) {
		calls++
		if round == 1 && c == "a" {
			return 0, boom
		}
		return round, nil
	})
	if !errors.Is(err, boom) || runs != nil {
		t.Errorf("interleaveErr(3, [a b], failing at a1) = %v, %v; want nil, %v", runs, err, boom)
	}
	if calls != 3 {
		t.Errorf("interleaveErr(3, [a b], failing at a1): %d calls; want 3 (a0, b0, a1)", calls)
	}
}
