package concurrency_test

import (
	"context"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// TestDropFreesPlaceWithoutLearning: Drop gives the place back, so the
// next caller gets one, and an Adaptive learns nothing from attempts
// dropped, however many.
func TestDropFreesPlaceWithoutLearning(t *testing.T) {
	a := &concurrency.Adaptive{}
	c := newClient(t, a, "api")
	for range 500 {
		p := c.flight[0]
		c.flight = c.flight[1:]
		p.Drop()
		c.fill()
	}
	st := a.State("api")
	if st.Limit != 20 || st.InFlight != 20 || st.MinLatency != 0 {
		t.Errorf("State after 500 drops = %+v; want limit 20, 20 in flight, nothing learned", st)
	}
}

// TestZeroPermitIsNoOp: Done and Drop on the zero Permit, which Fixed
// without a limit hands out, change nothing.
func TestZeroPermitIsNoOp(t *testing.T) {
	var f concurrency.Fixed
	p, err := f.Acquire(context.Background(), "api")
	if err != nil || p != (concurrency.Permit{}) {
		t.Fatalf("Fixed{}.Acquire = %v, %v; want the zero Permit, nil", p, err)
	}
	p.Done(time.Second, classify.Timeout)
	p.Drop()
	if st := f.State("api"); st != (concurrency.State{}) {
		t.Errorf("Fixed{}.State = %+v; want the zero State: no scope stored", st)
	}
}

// TestFixedKeepsItsLimit: a Fixed's limit does not move, whatever the
// latencies and timeouts its permits end with.
func TestFixedKeepsItsLimit(t *testing.T) {
	f := &concurrency.Fixed{Max: 3}
	c := newClient(t, f, "api")
	c.end(100, time.Second, classify.Timeout)
	c.end(100, time.Millisecond, classify.Success)
	if st := f.State("api"); st.Limit != 3 || st.InFlight != 3 || st.MinLatency != 0 {
		t.Errorf("State = %+v; want limit 3, 3 in flight, nothing learned", st)
	}
}

// TestOnlyAdaptivePermitsLearnLatency: a caller may skip timing the
// attempts whose permits learn nothing from their latency.
func TestOnlyAdaptivePermitsLearnLatency(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		l    concurrency.Limiter
		want bool
	}{
		{"Adaptive", &concurrency.Adaptive{}, true},
		{"Fixed", &concurrency.Fixed{Max: 4}, false},
		{"Fixed without a limit", &concurrency.Fixed{}, false},
	} {
		p, err := tc.l.Acquire(ctx, "api")
		if err != nil {
			t.Fatalf("%s: Acquire: %v", tc.name, err)
		}
		if got := p.LearnsLatency(); got != tc.want {
			t.Errorf("%s: Permit.LearnsLatency() = %t; want %t", tc.name, got, tc.want)
		}
		p.Drop()
	}
	if (concurrency.Permit{}).LearnsLatency() {
		t.Error("the zero Permit's LearnsLatency() = true; want false")
	}
}
