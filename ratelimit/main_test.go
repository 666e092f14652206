package ratelimit_test

import (
	"testing"

	"github.com/retrytransport/retrytransport/internal/faketime"
	"go.uber.org/goleak"
)

// t0 is the instant the tests' clocks start at.
var t0 = faketime.Epoch

// TestMain fails the package's tests if any goroutine outlives them: the
// limiters must never start one (refill is computed lazily).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
