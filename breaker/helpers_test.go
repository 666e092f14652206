package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
)

// scope is the scope the tests use when one is enough.
const scope = "api.example.com:443"

// Outcomes as the transport reports them, with their errors.
var (
	ok        = classify.Outcome{Kind: classify.Success}
	status503 = classify.Outcome{Kind: classify.Transient, Reason: "status 503"}
	refused   = classify.Outcome{Kind: classify.Transient, Reason: "connection refused", Unprocessed: true}
	timeout   = classify.Outcome{Kind: classify.Timeout, Reason: "timeout"}
	status429 = classify.Outcome{Kind: classify.Throttle, Reason: "status 429", Unprocessed: true}
	status404 = classify.Outcome{Kind: classify.Fatal, Reason: "status 404"}
	cancelled = classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}

	errRefused = errors.New("dial tcp 127.0.0.1:443: connect: connection refused")
)

// errOf returns the error an attempt with outcome out comes with: nil when
// a response came.
func errOf(out classify.Outcome) error {
	switch out {
	case timeout:
		return context.DeadlineExceeded
	case refused:
		return errRefused
	case cancelled:
		return context.Canceled
	}
	return nil
}

// newCircuit returns c on a fake clock at faketime.Epoch, with Rand 0.5 (no
// jitter) unless c sets one, and the clock.
func newCircuit(c *breaker.Circuit) (*breaker.Circuit, *faketime.Clock) {
	clk := faketime.New()
	c.Now = clk.Now
	if c.Rand == nil {
		c.Rand = func() float64 { return 0.5 }
	}
	return c, clk
}

// mustAllow calls c.Allow(sc) and fails the test if it refuses.
func mustAllow(t *testing.T, c *breaker.Circuit, sc string) breaker.Pass {
	t.Helper()
	p, err := c.Allow(sc)
	if err != nil {
		t.Fatalf("Allow(%q) = %v; want a pass", sc, err)
	}
	return p
}

// attempt lets one attempt of sc through c and settles it with out, at
// once; it fails the test if c refuses it.
func attempt(t *testing.T, c *breaker.Circuit, sc string, out classify.Outcome) {
	t.Helper()
	mustAllow(t, c, sc).Done(out, errOf(out))
}

// openError calls c.Allow(sc) and returns its *OpenError, failing the test
// if c lets the attempt through or refuses it with another error.
func openError(t *testing.T, c *breaker.Circuit, sc string) *breaker.OpenError {
	t.Helper()
	p, err := c.Allow(sc)
	if err == nil {
		p.Drop()
		t.Fatalf("Allow(%q) let the attempt through (probe %t); want an *OpenError", sc, p.Probe())
	}
	var oe *breaker.OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("Allow(%q) = %v (%T); want an *OpenError", sc, err, err)
	}
	return oe
}

// open opens sc's circuit in c with Failures refused connections and returns the instant
// its open time ends.
func open(t *testing.T, c *breaker.Circuit, sc string) time.Time {
	t.Helper()
	n := c.Failures
	if n <= 0 {
		n = breaker.DefaultFailures
	}
	for range n {
		attempt(t, c, sc, refused)
	}
	st := c.State(sc)
	if st.Phase != breaker.Open {
		t.Fatalf("State(%q).Phase after %d failures = %v; want open", sc, n, st.Phase)
	}
	return st.Until
}
