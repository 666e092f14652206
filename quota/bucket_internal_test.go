package quota

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// A bucket back at capacity is forgotten, so a healthy client keeps no
// state and Success stays a single atomic load.
func TestBucketForgetsFullBuckets(t *testing.T) {
	q := &Bucket{}
	now := time.Unix(0, 0)
	cost, _, ok := q.AcquireAt(now, "a", classify.Transient)
	if !ok || q.tracked.Load() != 1 {
		t.Fatalf("after AcquireAt: ok %t, tracked %d; want true, 1", ok, q.tracked.Load())
	}
	q.RefundAt(now, "a", cost)
	if n := q.tracked.Load(); n != 0 || len(q.buckets) != 0 {
		t.Errorf("after a refund to capacity: tracked %d, buckets %d; want 0, 0", n, len(q.buckets))
	}
	q.AcquireAt(now, "b", classify.Transient)
	for range DefaultRetryCost {
		q.SuccessAt(now, "b")
	}
	if n := q.tracked.Load(); n != 0 {
		t.Errorf("after successes refill to capacity: tracked %d; want 0", n)
	}
}
