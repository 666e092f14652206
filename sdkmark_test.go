package retrytransport

import (
	"net/http"
	"testing"
)

// FuzzSDKAttemptOf: any amz-sdk-request value either parses to a sane mark
// or is ignored, and a mark never lets the server see more attempts per call
// than the larger of the SDK's and the policy's counts.
func FuzzSDKAttemptOf(f *testing.F) {
	for _, s := range []string{"attempt=1; max=3", "ttl=20261124T101500Z; attempt=2; max=5", "attempt=3;max=3", "max=0", "attempt=-1; max=2", "attempt=99999999999999999999; max=1", ";;=;", "", "gl-go/1.24 gccl-invocation-id/x gccl-attempt-count/2"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, v string, limit int) {
		if limit < 1 || limit > 100 {
			return
		}
		if g, ok := sdkAttemptOf(http.Header{"X-Goog-Api-Client": {v}}); ok {
			if g.n < 2 || g.max != 0 || g.attemptsFor(limit) != 1 {
				t.Fatalf("x-goog-api-client %q: %+v, %d attempts; want attempt >= 2, no max, 1 attempt", v, g, g.attemptsFor(limit))
			}
		}
		a, ok := sdkAttemptOf(http.Header{"Amz-Sdk-Request": {v}})
		if !ok {
			return
		}
		if a.n < 1 || a.max < a.n {
			t.Fatalf("sdkAttemptOf(%q) = %+v; want 1 <= attempt <= max", v, a)
		}
		if a.max > 1000 {
			return // too many SDK attempts to play out
		}
		total := 0
		for n := 1; n <= a.max; n++ {
			total += sdkAttempt{n: n, max: a.max}.attemptsFor(limit)
		}
		if want := max(a.max, limit); total != want {
			t.Fatalf("SDK max %d, policy %d: %d attempts per call; want %d", a.max, limit, total, want)
		}
	})
}
