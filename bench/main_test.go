package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestQuickRun runs every scenario once in quick mode and checks that the
// harness printed a table for each, a row for every contender, and goal
// lines, with no failed benchmark. It checks the harness, not the goals.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick run takes about 25 s")
	}
	var out bytes.Buffer
	if err := run(&out, quickConfig()); err != nil {
		t.Fatalf("run(quick) = %v; want nil", err)
	}
	got := out.String()
	if n, want := strings.Count(got, "\n### "), 7; n != want {
		t.Errorf("run(quick) printed %d tables; want %d\n%s", n, want, got)
	}
	for _, c := range contenders() {
		want := 6 // every table but the two-scope one, which runs only ours
		if c.kind == kindOurs {
			want = 7
		}
		if n := strings.Count(got, "\n| "+c.name+" "); n != want {
			t.Errorf("run(quick) printed %d rows for %q; want %d, one per table", n, c.name, want)
		}
	}
	if n := strings.Count(got, "\n- goal "); n < 6 {
		t.Errorf("run(quick) printed %d goal lines; want at least one per table", n)
	}
	if strings.Contains(got, "error:") {
		t.Errorf("run(quick) output reports a failed benchmark:\n%s", got)
	}
}
