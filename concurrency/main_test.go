package concurrency_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// limiters must never start one.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
