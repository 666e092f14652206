package backoff_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
)

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.Schedule
	}{
		{"zero_value", backoff.Schedule{}},
		{"customer_managed_preset", backoff.Schedule{
			MinDelay: 10 * time.Second, MaxDelay: 600 * time.Second, NumRetries: 50,
			NumMinDelayRetries: 2, NumMaxDelayRetries: 38, BackoffFunction: backoff.CurveExponential,
		}},
		{"bounds", backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Hour, NumRetries: 100, NumMaxDelayRetries: 100, Jitter: 1}},
		{"min_equals_max", backoff.Schedule{MinDelay: 5 * time.Second, MaxDelay: 5 * time.Second, BackoffFunction: backoff.CurveGeometric}},
		{"phases_fill_default_retries", backoff.Schedule{NumNoDelayRetries: 1, NumMinDelayRetries: 1, NumMaxDelayRetries: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.s.Validate(); err != nil {
				t.Errorf("%+v.Validate() = %v; want nil", tt.s, err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.Schedule
		want []string // the messages of the joined *FieldErrors, in order
	}{
		{"too_many_retries", backoff.Schedule{NumRetries: 101},
			[]string{"backoff: Schedule.NumRetries is 101, want 0 to 100"}},
		{"negative_retries", backoff.Schedule{NumRetries: -1},
			[]string{"backoff: Schedule.NumRetries is -1, want 0 to 100"}},
		{"negative_count", backoff.Schedule{NumMinDelayRetries: -2},
			[]string{"backoff: Schedule.NumMinDelayRetries is -2, want 0 or more"}},
		{"phases_above_default_retries", backoff.Schedule{NumNoDelayRetries: 3, NumMaxDelayRetries: 1},
			[]string{"backoff: Schedule.NumNoDelayRetries+NumMinDelayRetries+NumMaxDelayRetries is 4, want at most NumRetries (3)"}},
		{"phases_sum_saturates", backoff.Schedule{NumRetries: 100, NumNoDelayRetries: math.MaxInt, NumMaxDelayRetries: math.MaxInt},
			[]string{"backoff: Schedule.NumNoDelayRetries+NumMinDelayRetries+NumMaxDelayRetries is 9223372036854775807, want at most NumRetries (100)"}},
		{"min_below_one_second", backoff.Schedule{MinDelay: 500 * time.Millisecond},
			[]string{"backoff: Schedule.MinDelay is 500ms, want 1s to MaxDelay (20s)"}},
		{"min_above_default_max", backoff.Schedule{MinDelay: 30 * time.Second},
			[]string{"backoff: Schedule.MinDelay is 30s, want 1s to MaxDelay (20s)"}},
		{"max_above_an_hour", backoff.Schedule{MinDelay: time.Second, MaxDelay: 3601 * time.Second},
			[]string{"backoff: Schedule.MaxDelay is 1h0m1s, want MinDelay to 3600s"}},
		{"max_below_default_min", backoff.Schedule{MaxDelay: 10 * time.Second},
			[]string{"backoff: Schedule.MinDelay is 0s (meaning 20s), want 1s to MaxDelay (10s)"}},
		{"negative_max", backoff.Schedule{MinDelay: time.Second, MaxDelay: -time.Second},
			[]string{
				"backoff: Schedule.MinDelay is 1s, want 1s to MaxDelay (-1s)",
				"backoff: Schedule.MaxDelay is -1s, want MinDelay to 3600s",
			}},
		{"unknown_curve", backoff.Schedule{BackoffFunction: backoff.Curve(9)},
			[]string{"backoff: Schedule.BackoffFunction is Curve(9), want one of the four Curve constants"}},
		{"jitter_above_one", backoff.Schedule{Jitter: 1.5},
			[]string{"backoff: Schedule.Jitter is 1.5, want 0 to 1"}},
		{"jitter_nan", backoff.Schedule{Jitter: math.NaN()},
			[]string{"backoff: Schedule.Jitter is NaN, want 0 to 1"}},
		{"aws_managed_preset_is_not_http", backoff.Schedule{
			MinDelay: time.Second, MaxDelay: 20 * time.Second, NumRetries: 100015,
			NumNoDelayRetries: 3, NumMinDelayRetries: 2, NumMaxDelayRetries: 100000,
			BackoffFunction: backoff.CurveExponential,
		}, []string{"backoff: Schedule.NumRetries is 100015, want 0 to 100"}},
		{"several", backoff.Schedule{NumRetries: 200, MinDelay: time.Millisecond, Jitter: -1},
			[]string{
				"backoff: Schedule.NumRetries is 200, want 0 to 100",
				"backoff: Schedule.MinDelay is 1ms, want 1s to MaxDelay (20s)",
				"backoff: Schedule.Jitter is -1, want 0 to 1",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if err == nil {
				t.Fatalf("%+v.Validate() = nil; want %d errors", tt.s, len(tt.want))
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *backoff.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("%+v.Validate() joined %T; want *backoff.FieldError", tt.s, e)
				}
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%+v.Validate() messages mismatch (-want +got):\n%s", tt.s, diff)
			}
		})
	}
}

func TestValidateFieldErrorData(t *testing.T) {
	err := backoff.Schedule{MaxDelay: 2 * time.Hour}.Validate()
	var fe *backoff.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Schedule{MaxDelay: 2h}.Validate() = %v; want a *FieldError", err)
	}
	want := backoff.FieldError{Field: "MaxDelay", Value: "2h0m0s", Want: "MinDelay to 3600s"}
	if diff := cmp.Diff(want, *fe); diff != "" {
		t.Errorf("Schedule{MaxDelay: 2h}.Validate() FieldError mismatch (-want +got):\n%s", diff)
	}
}
