package classify_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

func TestKindStringNamesEachKind(t *testing.T) {
	tests := []struct {
		k    classify.Kind
		want string
	}{
		{classify.Success, "success"},
		{classify.Transient, "transient"},
		{classify.Throttle, "throttle"},
		{classify.Timeout, "timeout"},
		{classify.Fatal, "fatal"},
		{classify.Kind(5), "kind(5)"},
		{classify.Kind(255), "kind(255)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q; want %q", uint8(tt.k), got, tt.want)
		}
	}
}

func TestKindRetryableOnlyForTransientThrottleTimeout(t *testing.T) {
	tests := []struct {
		k    classify.Kind
		want bool
	}{
		{classify.Success, false},
		{classify.Transient, true},
		{classify.Throttle, true},
		{classify.Timeout, true},
		{classify.Fatal, false},
		{classify.Kind(5), false},
		{classify.Kind(255), false},
	}
	for _, tt := range tests {
		if got := tt.k.Retryable(); got != tt.want {
			t.Errorf("Kind(%v).Retryable() = %t; want %t", tt.k, got, tt.want)
		}
		o := classify.Outcome{Kind: tt.k, Reason: "r", Unprocessed: true}
		if got := o.Retryable(); got != tt.want {
			t.Errorf("Outcome{Kind: %v}.Retryable() = %t; want %t", tt.k, got, tt.want)
		}
	}
}

func TestOutcomeZeroValueIsSuccess(t *testing.T) {
	var o classify.Outcome
	want := classify.Outcome{Kind: classify.Success}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("Outcome{} mismatch (-want +got):\n%s", diff)
	}
	if o.Retryable() {
		t.Errorf("Outcome{}.Retryable() = true; want false")
	}
}
