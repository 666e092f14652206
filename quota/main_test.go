package quota_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// quotas must never start one (refill is computed lazily).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
