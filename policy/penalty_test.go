package policy_test

import (
	"io"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/policy"
)

func TestPenaltySignals(t *testing.T) {
	const busy = `{"code": "ServerBusy"}`
	byStatus := policy.Penalty{Statuses: []int{503}, Delay: time.Second}
	byCode := policy.Penalty{Codes: []string{"ServerBusy"}, Delay: time.Second}
	tests := []struct {
		name   string
		p      policy.Penalty
		status int
		body   string
		want   bool
	}{
		{"StatusListed", byStatus, 503, "", true},
		{"StatusNotListed", byStatus, 500, busy, false},
		{"CodeListed", byCode, 500, busy, true},
		{"CodeNotListed", byCode, 503, `{"code": "Other"}`, false},
		{"EitherSignal", policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{429}, Delay: time.Second}, 429, "", true},
		{"NoDelay", policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503}}, 503, busy, false},
		{"Zero", policy.Penalty{}, 503, busy, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp := newResp(t, tt.status, tt.body)
			if got := tt.p.Signals(resp); got != tt.want {
				t.Errorf("%+v.Signals(%d, %q) = %t; want %t", tt.p, tt.status, tt.body, got, tt.want)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != tt.body {
				t.Errorf("after %+v.Signals(%d, %q) the body reads %q; want it whole", tt.p, tt.status, tt.body, b)
			}
		})
	}
	if byStatus.Signals(nil) {
		t.Errorf("%+v.Signals(nil) = true; want false", byStatus)
	}
}

func TestPenaltyPeriodDefaultsToDelay(t *testing.T) {
	for _, tt := range []struct {
		p    policy.Penalty
		want time.Duration
	}{
		{policy.Penalty{Delay: 10 * time.Second}, 10 * time.Second},
		{policy.Penalty{Delay: 10 * time.Second, For: time.Minute}, time.Minute},
		{policy.Penalty{Delay: 10 * time.Second, For: time.Second}, time.Second},
	} {
		if got := tt.p.Period(); got != tt.want {
			t.Errorf("%+v.Period() = %v; want %v", tt.p, got, tt.want)
		}
	}
}

func TestValidateAcceptsPenalty(t *testing.T) {
	for _, pen := range []policy.Penalty{
		{},
		{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second},
		{Statuses: []int{100, 599}, Delay: time.Second, For: time.Hour},
		{Codes: []string{}, Statuses: []int{}},
	} {
		if err := (policy.Policy{Penalty: pen}).Validate(); err != nil {
			t.Errorf("Policy{Penalty: %+v}.Validate() = %v; want nil", pen, err)
		}
	}
}

func TestValidateRejectsPenalty(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Penalty
		want string // the whole message of the only error
	}{
		{"NegativeDelay", policy.Penalty{Codes: []string{"ServerBusy"}, Delay: -time.Second}, "policy: Penalty.Delay = -1s; want >= 0 (0: no penalty)"},
		{"NegativeFor", policy.Penalty{For: -time.Second}, "policy: Penalty.For = -1s; want >= 0 (0: as long as Delay)"},
		{"Status99", policy.Penalty{Statuses: []int{503, 99}, Delay: time.Second}, "policy: Penalty.Statuses[1] = 99; want a status 100..599"},
		{"Status600", policy.Penalty{Statuses: []int{600}}, "policy: Penalty.Statuses[0] = 600; want a status 100..599"},
		{"EmptyCode", policy.Penalty{Codes: []string{"ServerBusy", ""}, Delay: time.Second}, "policy: Penalty.Codes[1] is empty; want an error code"},
		{"DelayWithoutSignal", policy.Penalty{Delay: 10 * time.Second}, "policy: Penalty.Delay = 10s but no Codes or Statuses start it"},
		{"DelayWithEmptyLists", policy.Penalty{Codes: []string{}, Statuses: []int{}, Delay: time.Second}, "policy: Penalty.Delay = 1s but no Codes or Statuses start it"},
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
