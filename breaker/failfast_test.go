package breaker_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
)

// TestOpenFailsFastWithLastFailure: while open, Allow refuses with an
// *OpenError that matches ErrOpen, names the scope and the end of the open
// time, and unwraps to the failure that opened the circuit: the attempt's
// error, or a description of the response.
func TestOpenFailsFastWithLastFailure(t *testing.T) {
	tests := []struct {
		name     string
		out      classify.Outcome
		wantIs   error  // besides ErrOpen
		wantLast string // Last.Error()
	}{
		{"Timeout", timeout, context.DeadlineExceeded, "context deadline exceeded"},
		{"ConnectionRefused", refused, errRefused, errRefused.Error()},
		{"Status503", status503, nil, "status 503"}, // counted: Trips has Transient
		{"NoReason", classify.Outcome{Kind: classify.Transient}, nil, "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCircuit(&breaker.Circuit{Trips: breaker.Kinds{classify.Transient, classify.Timeout}})
			for c.State(scope).Phase == breaker.Closed {
				attempt(t, c, scope, tt.out)
			}
			p, err := c.Allow(scope)
			if p != (breaker.Pass{}) {
				t.Errorf("Allow while open returned pass %+v; want the zero Pass", p)
			}
			if !errors.Is(err, breaker.ErrOpen) {
				t.Errorf("Allow while open = %v; want an error matching ErrOpen", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Allow while open = %v; want an error matching %v", err, tt.wantIs)
			}
			var oe *breaker.OpenError
			if !errors.As(err, &oe) {
				t.Fatalf("Allow while open = %v (%T); want an *OpenError", err, err)
			}
			if oe.Scope != scope || oe.Last == nil || oe.Last.Error() != tt.wantLast {
				t.Errorf("OpenError{Scope: %q, Last: %v}; want {%q, %q}", oe.Scope, oe.Last, scope, tt.wantLast)
			}
			if want := faketime.Epoch.Add(breaker.DefaultOpenFor); !oe.Until.Equal(want) {
				t.Errorf("OpenError.Until = %v; want %v", oe.Until, want)
			}
			if want := `breaker: circuit open for scope "` + scope + `": ` + tt.wantLast; err.Error() != want {
				t.Errorf("Error() = %q; want %q", err.Error(), want)
			}
		})
	}
}

// TestOpenErrorWithoutLastFailure: an OpenError built without a failure
// still reads and matches as one.
func TestOpenErrorWithoutLastFailure(t *testing.T) {
	err := error(&breaker.OpenError{Scope: "a"})
	if got, want := err.Error(), `breaker: circuit open for scope "a"`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if !errors.Is(err, breaker.ErrOpen) || errors.Unwrap(err) != nil {
		t.Errorf("errors.Is(ErrOpen) = %t, Unwrap = %v; want true, nil", errors.Is(err, breaker.ErrOpen), errors.Unwrap(err))
	}
}

// TestOpenTimeIsJittered: each open time is the nominal one times a factor
// uniform in [0.9, 1.1), drawn from Rand; a Rand out of [0, 1) is held to it.
func TestOpenTimeIsJittered(t *testing.T) {
	tests := []struct {
		rand float64
		want time.Duration
	}{
		{0, 1350 * time.Millisecond},
		{0.25, 1425 * time.Millisecond},
		{0.5, 1500 * time.Millisecond},
		{0.999999, 1649999700 * time.Nanosecond},
		{-3, 1350 * time.Millisecond},
		{7, 1650 * time.Millisecond},
		{math.NaN(), 1350 * time.Millisecond},
	}
	for _, tt := range tests {
		c, _ := newCircuit(&breaker.Circuit{Rand: func() float64 { return tt.rand }})
		until := open(t, c, scope)
		if got := until.Sub(faketime.Epoch); got != tt.want {
			t.Errorf("open time with Rand %v = %v; want %v", tt.rand, got, tt.want)
		}
	}
}
