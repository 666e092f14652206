package breaker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// Circuit must never start one (open times end lazily).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
