package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/quota"
	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: run must stop
// everything it starts, redis-server's reaper included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// quotaRetries is how many retries after a 503 one full retry quota pays
// for: 100 with the defaults.
const quotaRetries = quota.DefaultCapacity / quota.DefaultRetryCost

// smallConfig is a quick run: 3 replicas, enough requests each to empty a
// quota of its own (2 retries per request), and a Redis timeout generous
// enough that a busy CI machine (go test -race) still gets every answer
// from Redis, so that the shared quota is exact.
func smallConfig() config {
	cfg := defaultConfig()
	cfg.replicas, cfg.requests, cfg.recovery = 3, 60, 5
	cfg.timeout = time.Second
	return cfg
}

// TestRun runs the demo against a real redis-server (from PATH: without
// it the test fails, as the module's other tests do) and checks what it is
// there to show: with a quota each the API gets about one quota's worth of
// retries per replica, with the shared quota one quota's worth in all, and
// the successes after the outage refill the shared bucket.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := smallConfig()
	var out bytes.Buffer
	res, err := run(ctx, &out, cfg)
	if err != nil {
		t.Fatalf("run(smallConfig) error: %v\noutput:\n%s", err, out.String())
	}

	// Own quotas: each replica stops after its own quota's worth.
	if want, got := cfg.replicas*quotaRetries, res.own.retries; got < want*95/100 || got > want*105/100 {
		t.Errorf("run(smallConfig) own quotas: fleet retries = %d; want %d ± 5 %% (%d replicas × %d)",
			got, want, cfg.replicas, quotaRetries)
	}
	// Shared quota: the whole fleet stops after one quota's worth.
	if got, most := res.shared.retries, quotaRetries*105/100; got > most || got < quotaRetries*95/100 {
		t.Errorf("run(smallConfig) shared quota: fleet retries = %d; want %d ± 5 %% (one quota, whatever the replicas)",
			got, quotaRetries)
	}
	for i, r := range res.shared.replicas {
		if r.fallbacks != 0 {
			t.Errorf("run(smallConfig) shared quota: replica %d fallbacks = %d; want 0 (Redis answered)", i+1, r.fallbacks)
		}
	}
	for name, fr := range map[string]fleetRun{"own quotas": res.own, "shared quota": res.shared} {
		for i, r := range fr.replicas {
			if r.openedAt == 0 {
				t.Errorf("run(smallConfig) %s: replica %d's circuit never opened; want it to open during the outage", name, i+1)
			}
		}
	}

	// Recovery: every success adds one token to the shared bucket, once
	// the replicas have paid what they owe.
	rec := res.recovery
	if rec.before >= quota.DefaultRetryCost {
		t.Errorf("run(smallConfig) recovery: shared level before = %v; want below %d, the outage having emptied the bucket",
			rec.before, quota.DefaultRetryCost)
	}
	if want := cfg.replicas * (cfg.recovery + 1); rec.successes != want {
		t.Errorf("run(smallConfig) recovery: successes = %d; want %d", rec.successes, want)
	}
	if want := min(rec.before+float64(rec.successes), quota.DefaultCapacity); rec.after != want {
		t.Errorf("run(smallConfig) recovery: shared level after = %v; want %v (before %v + %d successes)",
			rec.after, want, rec.before, rec.successes)
	}

	for _, want := range []string{"Act 1:", "Act 2:", "Act 3:", "one quota's worth for the whole fleet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run(smallConfig) output lacks %q; got:\n%s", want, out.String())
		}
	}
}

// cancelWriter cancels a context once the text written to it contains
// after, so that a test can stop run in the middle.
type cancelWriter struct {
	buf    bytes.Buffer
	after  string
	cancel context.CancelFunc
}

// Write keeps p and cancels once the text so far contains w.after.
func (w *cancelWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.after) {
		w.cancel()
	}
	return n, err
}

// TestRunCanceled checks that run stops with the context's error when its
// context ends between two acts, and that nothing it started outlives it
// (TestMain checks goroutines, and redis-server is reaped by one).
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelWriter{after: "Act 1:", cancel: cancel}
	if _, err := run(ctx, w, smallConfig()); !errors.Is(err, context.Canceled) {
		t.Errorf("run(context canceled after act 1) error = %v; want %v", err, context.Canceled)
	}
	if strings.Contains(w.buf.String(), "Act 2:") {
		t.Errorf("run(context canceled after act 1) printed act 2; got:\n%s", w.buf.String())
	}
}
