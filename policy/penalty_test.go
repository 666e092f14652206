package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
)

func TestValidateAcceptsPenalty(t *testing.T) {
	for _, pen := range []*policy.Penalty{
		nil,
		{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second},
		{Statuses: []int{100, 599}, Delay: time.Second, For: time.Hour},
		{Codes: []string{}, Statuses: []int{503}, Delay: time.Nanosecond},
	} {
		if err := (policy.Policy{Penalty: pen}).Validate(); err != nil {
			t.Errorf("Policy{Penalty: %+v}.Validate() = %v; want nil", pen, err)
		}
	}
}

// neverApplies is Validate's error for a Penalty without Codes or
// Statuses.
const neverApplies = "policy: Penalty.Codes and Penalty.Statuses are empty; want a code or a status that starts the penalty, or a nil Penalty for none: without one it never applies"

func TestValidateRejectsPenalty(t *testing.T) {
	busy := []string{"ServerBusy"}
	tests := []struct {
		name string
		p    *policy.Penalty
		want string // the whole message of the only error
	}{
		{"NegativeDelay", &policy.Penalty{Codes: busy, Delay: -time.Second}, "policy: Penalty.Delay = -1s; want > 0, or a nil Penalty for none: without a Delay it never applies"},
		{"ZeroDelay", &policy.Penalty{Codes: busy, For: time.Second}, "policy: Penalty.Delay = 0s; want > 0, or a nil Penalty for none: without a Delay it never applies"},
		{"NegativeFor", &policy.Penalty{Codes: busy, Delay: time.Second, For: -time.Second}, "policy: Penalty.For = -1s; want >= 0 (0: as long as Delay)"},
		{"Status99", &policy.Penalty{Statuses: []int{503, 99}, Delay: time.Second}, "policy: Penalty.Statuses[1] = 99; want a status 100..599"},
		{"Status600", &policy.Penalty{Statuses: []int{600}, Delay: time.Second}, "policy: Penalty.Statuses[0] = 600; want a status 100..599"},
		{"EmptyCode", &policy.Penalty{Codes: []string{"ServerBusy", ""}, Delay: time.Second}, "policy: Penalty.Codes[1] is empty; want an error code"},
		{"DelayWithoutSignal", &policy.Penalty{Delay: 10 * time.Second}, neverApplies},
		{"DelayWithEmptyLists", &policy.Penalty{Codes: []string{}, Statuses: []int{}, Delay: time.Second}, neverApplies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (policy.Policy{Penalty: tt.p}).Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Policy{Penalty: %+v}.Validate() = %v; want %s", tt.p, err, tt.want)
			}
		})
	}
}

// TestValidateRejectsEmptyPenalty: a non-nil Penalty with nothing set can
// never apply, and says both what it lacks.
func TestValidateRejectsEmptyPenalty(t *testing.T) {
	errs := unwrapAll(policy.Policy{Penalty: &policy.Penalty{}}.Validate())
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{"policy: Penalty.Delay = 0s; want > 0, or a nil Penalty for none: without a Delay it never applies", neverApplies}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Policy{Penalty: &Penalty{}}.Validate() mismatch (-want +got):\n%s", diff)
	}
}

// TestWithDefaultsNormalisesPenalty: a Penalty that can never apply is
// nil, as the transport treats it, and a negative For is zero.
func TestWithDefaultsNormalisesPenalty(t *testing.T) {
	busy := []string{"ServerBusy"}
	for _, tt := range []struct{ in, want *policy.Penalty }{
		{nil, nil},
		{&policy.Penalty{}, nil},
		{&policy.Penalty{Codes: busy}, nil},
		{&policy.Penalty{Codes: busy, Delay: -time.Second}, nil},
		{&policy.Penalty{Delay: time.Second, For: time.Minute}, nil},
		{&policy.Penalty{Codes: []string{}, Statuses: []int{}, Delay: time.Second}, nil},
		{&policy.Penalty{Codes: busy, Delay: time.Second, For: -time.Second}, &policy.Penalty{Codes: busy, Delay: time.Second}},
		{&policy.Penalty{Statuses: []int{503}, Codes: []string{}, Delay: time.Second, For: time.Minute}, &policy.Penalty{Statuses: []int{503}, Codes: []string{}, Delay: time.Second, For: time.Minute}},
	} {
		got := policy.Policy{Penalty: tt.in}.WithDefaults().Penalty
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Policy{Penalty: %+v}.WithDefaults().Penalty mismatch (-want +got):\n%s", tt.in, diff)
		}
		if got != nil && got.Codes != nil && len(got.Codes) == 0 && tt.in.Codes == nil {
			t.Errorf("Policy{Penalty: %+v}.WithDefaults().Penalty.Codes = []; want nil kept nil", tt.in)
		}
	}
}
