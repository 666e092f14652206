package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/ratelimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fastConfig is a small run: 2 requests per fault scenario (the 429
// scenario still waits the server's Retry-After, 1 s per request), and just
// enough outage requests for the quota to run dry, all with millisecond
// backoff.
func fastConfig() config {
	fast := backoff.FullJitter{Base: time.Millisecond, Max: 5 * time.Millisecond}
	return config{requests: 2, outageRequests: 60, backoff: fast, outageBackoff: fast}
}

// ones returns a slice of n copies of v: the server hits of n requests.
func ones(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestRun runs the demo once and checks what each client experienced. Waits
// drawn from the backoff are random, so wait is compared only where the
// server sets it (Retry-After).
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	reports, err := run(ctx, &out, fastConfig())
	if err != nil {
		t.Fatalf("run(fastConfig) error: %v", err)
	}
	got := make(map[string]report)
	for _, r := range reports {
		got[r.path] = r
	}
	const (
		n        = 2
		outage   = 60
		capacity = ratelimit.DefaultQuotaCapacity
		cost     = ratelimit.DefaultRetryCost
		// Before the quota runs dry, each outage request makes 2 retries.
		dryAfter = capacity / cost / 2
	)
	plain := func(n int, status string) tally {
		return tally{client: "plain", requests: n, hits: n, perRequest: ones(n, 1),
			statuses: map[string]int{status: n}, quota: -1}
	}
	tests := []struct {
		path       string
		plain      tally
		retry      tally
		ignoreWait bool
	}{{
		path:  pathBurst,
		plain: plain(n, "503"),
		// Only the last retry's cost comes back when it succeeds.
		retry: tally{client: "retrytransport", requests: n, succeeded: n, hits: 3 * n, perRequest: ones(n, 3),
			statuses: map[string]int{"200": n}, retries: 2 * n, quota: capacity - n*cost},
		ignoreWait: true,
	}, {
		path:  pathThrottle,
		plain: plain(n, "429"),
		retry: tally{client: "retrytransport", requests: n, succeeded: n, hits: 2 * n, perRequest: ones(n, 2),
			statuses: map[string]int{"200": n}, retries: n, wait: n * time.Second, quota: capacity},
	}, {
		path:  pathDrop,
		plain: plain(n, "err"),
		retry: tally{client: "retrytransport", requests: n, succeeded: n, hits: 2 * n, perRequest: ones(n, 2),
			statuses: map[string]int{"200": n}, retries: n, quota: capacity},
		ignoreWait: true,
	}, {
		path:  pathOutage,
		plain: plain(outage, "503"),
		retry: tally{client: "retrytransport", requests: outage, hits: 3*dryAfter + (outage - dryAfter),
			perRequest: append(ones(dryAfter, 3), ones(outage-dryAfter, 1)...),
			statuses:   map[string]int{"503": outage}, retries: 2 * dryAfter,
			refused: outage - dryAfter, firstRefused: dryAfter + 1, quota: 0},
		ignoreWait: true,
	}}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			r, ok := got[tt.path]
			if !ok {
				t.Fatalf("run(fastConfig) reported no scenario %s", tt.path)
			}
			opts := []cmp.Option{cmp.AllowUnexported(tally{})}
			if tt.ignoreWait {
				opts = append(opts, cmpopts.IgnoreFields(tally{}, "wait"))
			}
			if diff := cmp.Diff(tt.plain, r.plain, opts...); diff != "" {
				t.Errorf("run(fastConfig) plain client on %s mismatch (-want +got):\n%s", tt.path, diff)
			}
			if diff := cmp.Diff(tt.retry, r.retry, opts...); diff != "" {
				t.Errorf("run(fastConfig) retrytransport client on %s mismatch (-want +got):\n%s", tt.path, diff)
			}
		})
	}

	t.Run("output", func(t *testing.T) {
		for _, sc := range scenarios(fastConfig()) {
			if !strings.Contains(out.String(), sc.name+": "+sc.fault) {
				t.Errorf("run(fastConfig) output lacks the heading of %q; got:\n%s", sc.name, out.String())
			}
		}
		for _, want := range []string{"server hits per logical request", "retry quota ran dry at request 51", "Summary:"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run(fastConfig) output lacks %q; got:\n%s", want, out.String())
			}
		}
	})
}

// TestRunCanceled checks that run stops, with the context's error, when its
// context ends, and leaks nothing (TestMain checks goroutines).
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if _, err := run(ctx, &out, fastConfig()); !errors.Is(err, context.Canceled) {
		t.Errorf("run(canceled context) error = %v; want %v", err, context.Canceled)
	}
}
