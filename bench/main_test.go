package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestQuickRun runs every scenario once in quick mode and checks that the
// harness printed a table for each, a row for every contender, goal lines
// and the fleet's pictures, with no failed benchmark. It checks the
// harness, not the goals, so the scenarios run at once, each into its own
// output, which is then read in run order: most of them wait on servers
// paced in real time, and one after the other they took three minutes.
// The fleet-redis tables need redis-server on PATH, the nginx table nginx.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick run takes about a minute")
	}
	cfg := quickConfig()
	cfg.svgDir = t.TempDir()
	if err := prepare(cfg); err != nil {
		t.Fatalf("prepare(quick) = %v; want nil", err)
	}
	names := scenarioNames()
	outs := make([]bytes.Buffer, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		one := cfg
		one.scenarios = []string{name}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runScenarios(&outs[i], one)
		}()
	}
	wg.Wait()
	var out bytes.Buffer
	for i := range names {
		if errs[i] != nil {
			t.Errorf("runScenarios(quick, %s) = %v; want nil", names[i], errs[i])
		}
		out.Write(outs[i].Bytes())
	}
	if t.Failed() {
		t.FailNow()
	}
	got := out.String()
	if n, want := strings.Count(got, "\n### "), 29; n != want {
		t.Errorf("run(quick) printed %d tables; want %d\n%s", n, want, got)
	}

	// Rows by their first cell, exactly: one name may begin another.
	rows := map[string]int{}
	for line := range strings.SplitSeq(got, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && cells[0] == "" {
			rows[strings.TrimSpace(cells[1])]++
		}
	}
	want := map[string]int{}
	for _, c := range contenders() {
		want[c.name] = 6 // every table up to the faults' but the two-scope one, which runs only ours
		if c.kind == kindOurs {
			want[c.name] = 7
		}
	}
	fcs := fleetContenders()
	for _, fc := range fcs {
		want[fc.name] += len(fleetVariants())
	}
	want[oursAdaptive().name] += 2 // the single-client Retry-After table, and the nginx one
	want[awsAdaptive().name] += 2
	want[contenders()[0].name]++ // the fleet-redis overhead table's baseline
	for _, c := range append(append(redisOutageReplicas(), redisThrottledReplicas()...), redisSharedAdaptive()) {
		want[c.name]++ // the last: the fleet-redis overhead table's
	}
	// The hedge, budget-outage and failover tables: one row each.
	for _, hc := range hedgeContenders() {
		want[hc.name]++
	}
	for _, bp := range budgetPolicies() {
		want[bp.name]++
	}
	for _, m := range failoverModes {
		want[m.String()]++
	}
	for _, c := range publishedContenders(nil) {
		want[c.name]++
	}
	// The shapes tables (one per capacity) and the open-loop table: a row
	// per worker count or load and capacity, for each of their contenders;
	// the two recovery tables, a row per k for each of theirs.
	for _, c := range shapesContenders(cfg) {
		want[c.name] += len(shapesCapacities()) * len(shapesWorkers())
	}
	want[oursAdaptive().name] += len(shapesCapacities()) * len(openloopLoads())
	want[awsAdaptive().name] += len(shapesCapacities()) * len(openloopLoads())
	for _, c := range recoveryContenders() {
		want[c.name] += 2 * len(cfg.recoveryKs)
	}
	// The latency table: a row per load for each of its contenders; the
	// hang table, its brownout table with our breaker and the hang-redis
	// table: a row for each of theirs.
	for _, c := range latencyContenders() {
		want[c.name] += len(latencyLoads())
	}
	for _, c := range hangContenders() {
		want[c.name]++
	}
	for _, c := range brownoutBreakerContenders() {
		want[c.name]++
	}
	for _, c := range hangRedisReplicas() {
		want[c.name]++
	}
	for name, n := range want {
		if rows[name] != n {
			t.Errorf("run(quick) printed %d rows for %q; want %d, one per table it runs in", rows[name], name, n)
		}
	}

	if n := strings.Count(got, "\n- goal "); n < 11 {
		t.Errorf("run(quick) printed %d goal lines; want at least one per table", n)
	}
	// The fleet goals: fairness in each variant (in every run, and at the
	// median without Retry-After), settling at each of the capacity
	// variant's two changes.
	fairness := 0
	for _, v := range fleetVariants() {
		fairness++
		if !v.retryAfter {
			fairness++
		}
	}
	if n := strings.Count(got, "Jain's index at least"); n != fairness {
		t.Errorf("run(quick) printed %d fairness goals; want %d, two per fleet variant without Retry-After and one with", n, fairness)
	}
	if n := strings.Count(got, "in under 2 s in every run"); n != 2 {
		t.Errorf("run(quick) printed %d settle goals; want 2, one per capacity change", n)
	}
	// The fleet-redis goals, table by table (titles up to their colon):
	// the outage's quota, the throttled fleet's goodput, 429s and fairness,
	// the cost table's round trips, the happy path's time and round trips.
	goals := map[string]int{}
	var title string
	for line := range strings.SplitSeq(got, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			title, _, _ = strings.Cut(h, ":")
		} else if strings.HasPrefix(line, "- goal ") {
			goals[title]++
		}
	}
	// Then the hedge table's two goals (p99, load) for each of our two
	// hedging rows, the budget's window goal for each of the two policies
	// with a Budget, the failover's two (reads, writes) for each mode, the
	// published quota's four (429s, quota used, fairness, failures) for
	// each of its two rows with goals, in process and on Redis, and the
	// nginx table's two (rate, 429s).
	for title, n := range map[string]int{"fleet-redis, outage": 1, "fleet-redis, throttled": 3,
		"fleet-redis, cost per call": 1, "fleet-redis, overhead": 2,
		"hedge": 2 * 2, "budget-outage": 2, "failover": 2 * len(failoverModes), "published quota": 2 * 4,
		"nginx limit_req":              2,
		"shapes, 100 req/s (burst 10)": 2, "shapes, 1000 req/s (burst 10)": 2, "openloop": 3 * len(shapesCapacities()),
		"recovery, warm client": 2, "recovery, fresh client": 2,
		"latency": 5, "hang": 4, "hang, brownout with our breaker": 1, "hang-redis": 2} {
		if goals[title] != n {
			t.Errorf("run(quick) printed %d goal lines under %q; want %d", goals[title], title, n)
		}
	}
	for _, g := range []string{"one quota's worth + 5 %", "fairness across replicas (Jain's index)",
		"one round trip per call", "no Redis round trip per request"} {
		if n := strings.Count(got, g); n != 1 {
			t.Errorf("run(quick) printed %d goal lines with %q; want 1", n, g)
		}
	}
	infos := []string{redisOutageReplicas()[0].name}
	for _, bp := range budgetPolicies() {
		infos = append(infos, bp.name)
	}
	for _, name := range infos {
		if info := "\n- for information, " + name + ": "; strings.Count(got, info) != 1 {
			t.Errorf("run(quick) printed %d lines %q; want 1", strings.Count(got, info), info)
		}
	}
	if strings.Contains(got, "error:") {
		t.Errorf("run(quick) output reports a failed benchmark:\n%s", got)
	}
	var pictures []string
	for _, v := range fleetVariants() {
		pictures = append(pictures, fleetPicture(cfg.svgDir, v))
	}
	slices.Sort(pictures)
	svgs, err := filepath.Glob(filepath.Join(cfg.svgDir, "*.svg"))
	if err != nil || !slices.Equal(svgs, pictures) {
		t.Errorf("run(quick) wrote the pictures %v (%v); want one per fleet variant, %v", svgs, err, pictures)
	}
}
