package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/quota"
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
		n           = 2
		outage      = 60
		capacity    = quota.DefaultCapacity
		cost        = quota.DefaultRetryCost
		throttleFee = quota.DefaultTimeoutCost // a retry after a 429 pays the timeout cost
		// Before the quota runs dry, each outage request makes 2 retries.
		dryAfter = capacity / cost / 2
	)
	// account is the quota's account of retries that each paid fee after
	// outcomes of kind after, recovered of them succeeding and getting
	// their fee back.
	account := func(retries int, after string, fee, recovered int) quotaAccount {
		return quotaAccount{start: capacity, costs: map[retryCost]int{{after, fee}: retries},
			paid: float64(retries * fee), recovered: recovered, refunded: float64(recovered * fee)}
	}
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
			statuses: map[string]int{"200": n}, retries: 2 * n, quota: capacity - n*cost,
			account: account(2*n, "transient", cost, n)},
		ignoreWait: true,
	}, {
		path:  pathThrottle,
		plain: plain(n, "429"),
		retry: tally{client: "retrytransport", requests: n, succeeded: n, hits: 2 * n, perRequest: ones(n, 2),
			statuses: map[string]int{"200": n}, retries: n, wait: n * time.Second, quota: capacity,
			account: account(n, "throttle", throttleFee, n)},
	}, {
		path:  pathDrop,
		plain: plain(n, "err"),
		retry: tally{client: "retrytransport", requests: n, succeeded: n, hits: 2 * n, perRequest: ones(n, 2),
			statuses: map[string]int{"200": n}, retries: n, quota: capacity,
			account: account(n, "transient", cost, n)},
		ignoreWait: true,
	}, {
		path:  pathOutage,
		plain: plain(outage, "503"),
		retry: tally{client: "retrytransport", requests: outage, hits: 3*dryAfter + (outage - dryAfter),
			perRequest: append(ones(dryAfter, 3), ones(outage-dryAfter, 1)...),
			statuses:   map[string]int{"503": outage}, retries: 2 * dryAfter,
			refused: outage - dryAfter, firstRefused: dryAfter + 1, quota: 0,
			account: account(2*dryAfter, "transient", cost, 0)},
		ignoreWait: true,
	}}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			r, ok := got[tt.path]
			if !ok {
				t.Fatalf("run(fastConfig) reported no scenario %s", tt.path)
			}
			opts := []cmp.Option{cmp.AllowUnexported(tally{}, quotaAccount{}, retryCost{})}
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
		for _, want := range []string{"server hits per logical request", "retry quota ran dry at request 51", "Summary:",
			"go-cleanhttp's pooled transport", "retrytransport.New(nil,"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run(fastConfig) output lacks %q; got:\n%s", want, out.String())
			}
		}
	})

	// The quota's explanation must add up to the level the transport
	// reports, and say so, with the numbers of the quota's rules.
	t.Run("quotaExplanation", func(t *testing.T) {
		for _, r := range reports {
			if got, want := r.retry.account.expected(), r.retry.quota; got != want {
				t.Errorf("run(fastConfig) on %s: account %+v leads to %v; want the Snapshot's level %v", r.path, r.retry.account, got, want)
			}
			for _, line := range r.retry.account.explain(r.retry.quota) {
				if !strings.Contains(out.String(), line) {
					t.Errorf("run(fastConfig) output lacks the quota explanation of %s, %q; got:\n%s", r.path, line, out.String())
				}
			}
		}
		for _, want := range []string{
			fmt.Sprintf("Why %d tokens are left: the quota started full at %d;\n"+
				"    %d retries after transient outcomes paid %d tokens each: -%d\n"+
				"    %d requests succeeded on a retry, and each got that retry's cost back: +%d\n"+
				"    the other %d retries failed, and stay paid\n"+
				"    %d - %d + %d = %d, the level Transport.Snapshot reports\n",
				capacity-n*cost, capacity, 2*n, cost, 2*n*cost, n, n*cost, n, capacity, 2*n*cost, n*cost, capacity-n*cost),
			fmt.Sprintf("%d retries after throttle outcomes paid %d tokens each: -%d", n, throttleFee, n*throttleFee),
			fmt.Sprintf("%d - %d = 0, the level Transport.Snapshot reports", capacity, capacity),
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run(fastConfig) output lacks %q; got:\n%s", want, out.String())
			}
		}
	})
}

// TestExplainMismatch checks that the quota's explanation says so when its
// account does not lead to the level the transport reports.
func TestExplainMismatch(t *testing.T) {
	a := quotaAccount{start: 500, costs: map[retryCost]int{{"transient", 5}: 2}, paid: 10}
	got := strings.Join(a.explain(480), "\n")
	if want := "500 - 10 = 490, but Transport.Snapshot reports 480"; !strings.Contains(got, want) {
		t.Errorf("explain(480) = %q; want it to contain %q", got, want)
	}
	got = strings.Join(a.explain(490), "\n")
	if want := "500 - 10 = 490, the level Transport.Snapshot reports"; !strings.Contains(got, want) {
		t.Errorf("explain(490) = %q; want it to contain %q", got, want)
	}
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
