package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
)

func TestLoadStrategies(t *testing.T) {
	tests := []struct {
		doc  string
		want backoff.Strategy
	}{
		{`{"type": "fullJitter", "base": "50ms"}`, backoff.FullJitter{Base: 50 * time.Millisecond}},
		{`{"type": "EQUALJITTER", "max": "1m"}`, backoff.EqualJitter{Max: time.Minute}},
		{`{"type": "decorrelated", "base": "1s", "max": "20s"}`, backoff.Decorrelated{Base: time.Second, Max: 20 * time.Second}},
		{`{"type": "scaledJitter", "initialDelay": "10ms", "scaleFactor": 1.5, "maxBackoff": "20s", "jitter": 0.5, "noJitter": true}`,
			backoff.ScaledJitter{InitialDelay: 10 * time.Millisecond, ScaleFactor: 1.5, MaxBackoff: 20 * time.Second, Jitter: 0.5, NoJitter: true}},
		{`{"type": "exponential", "minBackoff": "3s", "maxBackoff": "30s", "deltaBackoff": "4s", "noMinBackoff": true, "fastFirstRetry": true}`,
			backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second, NoMinBackoff: true, FastFirstRetry: true}},
		{`{"type": "incremental", "initial": "1s", "increment": "2s", "fastFirstRetry": true}`, backoff.Incremental{Initial: time.Second, Increment: 2 * time.Second, FastFirstRetry: true}},
		{`{"type": "constant", "interval": "500ms"}`, backoff.Constant{Interval: 500 * time.Millisecond}},
		{`{"type": "schedule", "minDelay": "1s", "maxDelay": "1m", "numRetries": 50, "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35, "backoffFunction": "Geometric", "jitter": 0.25}`,
			backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 50, NumNoDelayRetries: 3, NumMinDelayRetries: 2, NumMaxDelayRetries: 35, BackoffFunction: backoff.CurveGeometric, Jitter: 0.25}},
		{`{"type": "capped", "strategy": {"type": "incremental"}, "max": "5s"}`, backoff.Capped{Strategy: backoff.Incremental{}, Max: 5 * time.Second}},
		{`{"type": "jittered", "strategy": {"type": "capped", "strategy": {"type": "constant"}}, "fraction": 0.1}`,
			backoff.Jittered{Strategy: backoff.Capped{Strategy: backoff.Constant{}}, Fraction: 0.1}},
		{`{"type": "capped"}`, backoff.Capped{}},
	}
	for _, tt := range tests {
		got, err := load(`{"backoff": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(backoff %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.Backoff); diff != "" {
			t.Errorf("Load(backoff %s).Backoff mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

func TestLoadLimitsStrategyNesting(t *testing.T) {
	nested := func(depth int) string {
		return `{"backoff": ` + strings.Repeat(`{"type": "capped", "strategy": `, depth-1) + `{"type": "constant"}` + strings.Repeat(`}`, depth-1) + `}`
	}
	if _, err := load(nested(16)); err != nil {
		t.Errorf("Load(strategies 16 deep) error = %v; want nil", err)
	}
	_, err := load(nested(17))
	want := "policy: backoff" + strings.Repeat(".strategy", 16) + ": strategies nested too deep; want at most 16 levels"
	if err == nil || err.Error() != want {
		t.Errorf("Load(strategies 17 deep) error = %v; want %s", err, want)
	}
	// A hostile depth fails fast instead of taking quadratic time.
	if _, err := load(nested(100_000)); err == nil {
		t.Errorf("Load(strategies 100000 deep) error = nil; want an error")
	}
}
