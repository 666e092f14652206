package retrytransport

import (
	"testing"
	"time"
)

func TestLatencyQuantiles(t *testing.T) {
	var h latencyHist
	for range latencyMinSamples - 1 {
		h.observe(time.Millisecond)
	}
	if _, ok := h.quantile(0.5); ok {
		t.Errorf("a quantile after %d samples; want none before %d", latencyMinSamples-1, latencyMinSamples)
	}
	h = latencyHist{}
	for i := range 1000 {
		d := time.Millisecond
		if i%20 == 0 { // 5 %
			d = 300 * time.Millisecond
		}
		h.observe(d)
	}
	// Buckets are a quarter octave wide: a quantile is its bucket's top,
	// within 19 % above the true value.
	within := func(got, want time.Duration) bool { return got >= want && got <= want*119/100 }
	if q, ok := h.quantile(0.9); !ok || !within(q, time.Millisecond) {
		t.Errorf("p90 = %v, %v; want about 1ms", q, ok)
	}
	if q, ok := h.quantile(0.99); !ok || !within(q, 300*time.Millisecond) {
		t.Errorf("p99 = %v, %v; want about 300ms", q, ok)
	}
}

// The histogram forgets: after the latency changes, a few half-lives of
// new samples move the quantile.
func TestLatencyFollowsChange(t *testing.T) {
	var h latencyHist
	for range 5000 {
		h.observe(100 * time.Millisecond)
	}
	for range 3 * latencyHalfLife {
		h.observe(time.Millisecond)
	}
	if q, _ := h.quantile(0.5); q > 2*time.Millisecond {
		t.Errorf("p50 after the latency fell to 1ms = %v; want about 1ms", q)
	}
}

func TestLatencyBucketsBounded(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Nanosecond, time.Hour, 1<<63 - 1} {
		if b := latencyBucket(d); b < 0 || b >= latencyBuckets {
			t.Errorf("latencyBucket(%v) = %d; want within 0..%d", d, b, latencyBuckets-1)
		}
	}
}
