package retrytransport

import (
	"math"
	"sync"
	"time"
)

// The latency histogram's shape: buckets a quarter of an octave wide, from
// latencyFloor up, so that a quantile is known within 19 %; the last
// bucket holds everything above about 50 s.
const (
	latencyFloor   = 50 * time.Microsecond
	latencyBuckets = 4 * 20 // 20 octaves above the floor
	// latencyMinSamples is how many attempts a scope must have seen before
	// its quantiles are used.
	latencyMinSamples = 20
	// latencyHalfLife is how many samples it takes for older ones to weigh
	// half: every latencyHalfLife samples, every count is halved, so the
	// quantiles follow a server whose latency changes.
	latencyHalfLife = 1000
)

// latencyHist is a scope's histogram of the time its attempts took to
// their response headers, for Policy.Hedge.Quantile. Only scopes whose
// policy hedges by a quantile keep one.
type latencyHist struct {
	mu     sync.Mutex
	counts [latencyBuckets]float64
	total  float64 // sum of counts
	since  int     // samples since the last halving
}

// bucket returns the bucket of d.
func latencyBucket(d time.Duration) int {
	if d <= latencyFloor {
		return 0
	}
	b := int(math.Ceil(4 * math.Log2(float64(d)/float64(latencyFloor))))
	return min(b, latencyBuckets-1)
}

// bucketTop returns the longest latency bucket b holds.
func bucketTop(b int) time.Duration {
	return time.Duration(float64(latencyFloor) * math.Exp2(float64(b)/4))
}

// observe records an attempt that took d.
func (h *latencyHist) observe(d time.Duration) {
	b := latencyBucket(d)
	h.mu.Lock()
	h.counts[b]++
	h.total++
	if h.since++; h.since >= latencyHalfLife {
		h.since = 0
		h.total = 0
		for i := range h.counts {
			h.counts[i] /= 2
			h.total += h.counts[i]
		}
	}
	h.mu.Unlock()
}

// learned reports whether h has seen enough samples for its quantiles to
// be used.
func (h *latencyHist) learned() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total >= latencyMinSamples
}

// quantile returns the q quantile of the latencies observed, rounded up to
// its bucket's top, or false while too few have been seen.
func (h *latencyHist) quantile(q float64) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total < latencyMinSamples {
		return 0, false
	}
	want, sum := q*h.total, 0.0
	for b, n := range h.counts {
		if sum += n; sum >= want {
			return bucketTop(b), true
		}
	}
	return bucketTop(latencyBuckets - 1), true
}
