package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// snsExample is the example delivery policy of docs/sns.md: 50 retries, 3
// immediate, 2 at 1 s, 10 backing off exponentially from 1 to 60 s, 35 at
// 60 s.
const snsExample = `{ "healthyRetryPolicy": { "minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50,
    "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35,
    "backoffFunction": "exponential" },
  "throttlePolicy": { "maxReceivesPerSecond": 10 },
  "requestPolicy": { "headerContentType": "application/json" } }`

// runOK calls run with args and returns what it printed; it fails the test
// if run returns an error.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(&out, args); err != nil {
		t.Fatalf("run(%q) error: %v\noutput:\n%s", args, err, out.String())
	}
	return out.String()
}

// writeFile writes content to a file named name in a new temporary
// directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tableLines returns the lines of the first table in out: from its
// header to the line before the first that does not start with a digit.
func tableLines(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "attempt ") {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "" && lines[j][0] >= '0' && lines[j][0] <= '9' {
			j++
		}
		return lines[i:j]
	}
	t.Fatalf("no table in output:\n%s", out)
	return nil
}

// near reports whether got is within tol of want.
func near(got, want, tol time.Duration) bool {
	d := got - want
	return -tol <= d && d <= tol
}

func TestRunStandardPrintsThreeAttempts(t *testing.T) {
	out := runOK(t, "-preset", "standard")
	want := []string{
		"attempt  wait min  wait max  total min  total max  notes",
		"1        -         -         0s         0s",
		"2        0s        1s        0s         1s",
		"3        0s        2s        0s         3s",
	}
	if diff := cmp.Diff(want, tableLines(t, out)); diff != "" {
		t.Errorf("run(-preset standard) table mismatch (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if !strings.Contains(out, "In all: 3 attempts, waiting 0s to 3s.") {
		t.Errorf("run(-preset standard) output lacks the summary line:\n%s", out)
	}
}

func TestRunDefaultsToStandard(t *testing.T) {
	if got, want := runOK(t), runOK(t, "-preset", "standard"); got != want {
		t.Errorf("run() = %q; want the output of run(-preset standard), %q", got, want)
	}
}

func TestBuildStandardRanges(t *testing.T) {
	p := policy.Standard().WithDefaults()
	tb := build(p, p.Backoff, 0)
	if len(tb.rows) != 3 {
		t.Fatalf("build(Standard) has %d rows; want 3", len(tb.rows))
	}
	for _, tt := range []struct {
		attempt int
		wait    span
		total   span
	}{
		{1, span{0, 0}, span{0, 0}},
		{2, span{0, time.Second}, span{0, time.Second}},
		{3, span{0, 2 * time.Second}, span{0, 3 * time.Second}},
	} {
		r := tb.rows[tt.attempt-1]
		if r.attempt != tt.attempt || r.wait.lo != tt.wait.lo || !near(r.wait.hi, tt.wait.hi, time.Microsecond) ||
			r.total.lo != tt.total.lo || !near(r.total.hi, tt.total.hi, time.Microsecond) {
			t.Errorf("build(Standard) row %d = %+v; want wait [%v, %v), total up to %v",
				tt.attempt, r, tt.wait.lo, tt.wait.hi, tt.total.hi)
		}
	}
	if !tb.exact || tb.last.attempt != 3 || tb.made.attempt != 3 {
		t.Errorf("build(Standard) exact %t, last %d, made %d; want true, 3, 3", tb.exact, tb.last.attempt, tb.made.attempt)
	}
}

func TestRunSNSDocumentFirstRows(t *testing.T) {
	path := writeFile(t, "delivery.json", snsExample)
	out := runOK(t, "-file", path, "-max", "9")
	if !strings.Contains(out, "(SNS delivery policy): 51 attempts at most, MaxDelay 1m") {
		t.Errorf("run(-file %s) did not read an SNS policy with 51 attempts:\n%s", path, out)
	}
	want := []string{
		"attempt  wait min  wait max  total min  total max  notes",
		"1        -         -         0s         0s",
		"2        0s        0s        0s         0s         immediate",
		"3        0s        0s        0s         0s         immediate",
		"4        0s        0s        0s         0s         immediate",
		"5        1s        1s        1s         1s         pre-backoff",
		"6        1s        1s        2s         2s         pre-backoff",
		"7        1s        1s        3s         3s         backoff 1/10",
		"8        1.518s    1.576s    4.518s     4.576s     backoff 2/10",
		"9        2.336s    2.484s    6.854s     7.06s      backoff 3/10",
	}
	if diff := cmp.Diff(want, tableLines(t, out)); diff != "" {
		t.Errorf("run(-file docs/sns.md example) table mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(out, "… 42 more attempts; the last, attempt 51, waits 54.1s to 1m (post-backoff)") {
		t.Errorf("run(-file docs/sns.md example) lacks the summary of attempts 10 to 51:\n%s", out)
	}
}

// TestBuildSNSDocumentDelays checks the waits of the docs/sns.md example
// against the formula of backoff.Curve: the k-th backoff retry waits
// 60^((k-1)/9) s, less up to a tenth of its distance above 1 s (the jitter
// of policy.LoadSNS).
func TestBuildSNSDocumentDelays(t *testing.T) {
	p, err := policy.LoadSNS(strings.NewReader(snsExample))
	if err != nil {
		t.Fatalf("LoadSNS(SNS guide example) error: %v", err)
	}
	p = p.WithDefaults()
	tb := build(p, p.Backoff, 0)
	if len(tb.rows) != 51 {
		t.Fatalf("build(SNS guide example) has %d rows; want 51", len(tb.rows))
	}
	for _, r := range tb.rows[1:] {
		retry := r.attempt - 1
		var hi time.Duration
		switch {
		case retry <= 3:
			hi = 0
		case retry <= 5:
			hi = time.Second
		case retry <= 15:
			hi = time.Duration(math.Pow(60, float64(retry-6)/9) * float64(time.Second))
		default:
			hi = time.Minute
		}
		lo := hi
		if hi > time.Second {
			lo = hi - (hi-time.Second)/10
		}
		if !near(r.wait.lo, lo, time.Microsecond) || !near(r.wait.hi, hi, time.Microsecond) {
			t.Errorf("build(SNS guide example) attempt %d waits [%v, %v]; want [%v, %v]", r.attempt, r.wait.lo, r.wait.hi, lo, hi)
		}
	}
	s := p.Backoff.(backoff.Schedule)
	if got, want := tb.made.total.hi, s.Total(); got != want {
		t.Errorf("build(SNS guide example) longest total = %v; want Schedule.Total() = %v", got, want)
	}
}

func TestRunSNSAWSManagedSummarisesTheTail(t *testing.T) {
	out := runOK(t, "-preset", "sns-aws-managed")
	if n := len(tableLines(t, out)) - 1; n != defaultMaxRows {
		t.Errorf("run(-preset sns-aws-managed) printed %d rows; want %d", n, defaultMaxRows)
	}
	for _, want := range []string{
		"… 99,996 more attempts; the last, attempt 100,016, waits 18.1s to 20s (post-backoff)",
		"In all: 100,016 attempts, waiting 502h47m44.297s to 555h34m30.107s (20.9 to 23.1 days).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run(-preset sns-aws-managed) lacks %q:\n%s", want, out)
		}
	}
	p := policy.SNSAWSManaged().WithDefaults()
	if got, want := build(p, p.Backoff, 1).made.total.hi, p.Backoff.(backoff.Schedule).Total(); got != want {
		t.Errorf("build(SNSAWSManaged) longest total = %v; want Schedule.Total() = %v", got, want)
	}
}

func TestRunEveryPreset(t *testing.T) {
	for _, name := range policy.PresetNames() {
		t.Run(name, func(t *testing.T) {
			out := runOK(t, "-preset", name)
			if !strings.HasPrefix(out, "Policy "+name+": ") || !strings.Contains(out, "\nIn all: ") {
				t.Errorf("run(-preset %s) output lacks its header or summary:\n%s", name, out)
			}
		})
	}
}

func TestRunMaxZeroPrintsEveryAttempt(t *testing.T) {
	out := runOK(t, "-preset", "sns-customer-managed", "-max", "0")
	if n := len(tableLines(t, out)) - 1; n != 51 {
		t.Errorf("run(-preset sns-customer-managed -max 0) printed %d rows; want 51", n)
	}
	if strings.Contains(out, "more attempt") {
		t.Errorf("run(-max 0) summarised attempts it should have printed:\n%s", out)
	}
}

func TestRunThrottleBackoffTable(t *testing.T) {
	out := runOK(t, "-preset", "standard-v2")
	if !strings.Contains(out, "If every failure is a throttle, ThrottleBackoff: {\"type\":\"fullJitter\",\"base\":\"1s\"}") {
		t.Fatalf("run(-preset standard-v2) has no ThrottleBackoff table:\n%s", out)
	}
	throttle := out[strings.Index(out, "If every failure"):]
	want := []string{
		"attempt  wait min  wait max  total min  total max  notes",
		"1        -         -         0s         0s",
		"2        0s        1s        0s         1s",
		"3        0s        2s        0s         3s",
	}
	if diff := cmp.Diff(want, tableLines(t, throttle)); diff != "" {
		t.Errorf("run(-preset standard-v2) throttle table mismatch (-want +got):\n%s", diff)
	}
	if got := tableLines(t, out)[2]; got != "2        0s        50ms      0s         50ms" {
		t.Errorf("run(-preset standard-v2) first table, attempt 2 = %q; want the 50ms range of Backoff", got)
	}
}

func TestRunTimeLimitStopsTheSchedule(t *testing.T) {
	out := runOK(t, "-preset", "azure-storage-background")
	for _, want := range []string{
		"5        25.4s     30s       47.2s      58.2s      over MaxTotalTime: not attempted",
		"MaxTotalTime, 30s, is spent before attempt 5: the transport does not start it.",
		"In all: 4 attempts, waiting 21.8s to 28.2s.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run(-preset azure-storage-background) lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n6 ") {
		t.Errorf("run(-preset azure-storage-background) lists attempt 6, after MaxTotalTime is spent:\n%s", out)
	}
	out = runOK(t, "-preset", "azure-background")
	if !strings.Contains(out, "6        24s       36s       41.6s      1m2.4s     may exceed MaxTotalTime") {
		t.Errorf("run(-preset azure-background) does not mark attempt 6 as possibly over MaxTotalTime:\n%s", out)
	}
}

func TestRunMarksCappedDelays(t *testing.T) {
	// Incremental has no cap of its own; MaxDelay (20s by default) cuts it.
	path := writeFile(t, "p.json", `{"maxAttempts": 6, "backoff": {"type": "incremental", "initial": "15s", "increment": "3s"}}`)
	out := runOK(t, "-file", path)
	for _, want := range []string{
		"3        18s       18s       33s        33s",
		"4        20s       20s       53s        53s        cap",
		"6        20s       20s       1m33s      1m33s      cap",
		"cap: the backoff exceeds MaxDelay, 20s, which cuts it.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run(-file incremental) lacks %q:\n%s", want, out)
		}
	}
}

func TestRunSNSFlagForcesLoadSNS(t *testing.T) {
	// A document with only SNS's defaults has no member to detect it by.
	path := writeFile(t, "empty.json", `{}`)
	if out := runOK(t, "-file", path); !strings.Contains(out, "(policy): 3 attempts at most") {
		t.Errorf("run(-file {}) did not read policy.Load's zero policy:\n%s", out)
	}
	out := runOK(t, "-sns", "-file", path)
	if !strings.Contains(out, "(SNS delivery policy): 4 attempts at most") || !strings.Contains(out, "backoff 1/3") {
		t.Errorf("run(-sns -file {}) did not read SNS's default policy (3 retries of 20s):\n%s", out)
	}
}

func TestBuildExtrapolatesHugeAttemptCounts(t *testing.T) {
	p := policy.Policy{
		MaxAttempts:  3_000_000,
		Backoff:      backoff.Constant{Interval: time.Millisecond},
		MaxTotalTime: 2000 * time.Second,
	}.WithDefaults()
	tb := build(p, p.Backoff, 5)
	// Attempt n starts after n-1 ms; attempt 2,000,001 at MaxTotalTime's end.
	if tb.last.attempt != 2_000_001 || tb.last.mark != overLimit {
		t.Errorf("build(3e6 attempts, 1ms, 2000s) last = attempt %d, mark %d; want 2,000,001 over MaxTotalTime", tb.last.attempt, tb.last.mark)
	}
	if tb.made.attempt != 2_000_000 || tb.made.total != (span{1999999 * time.Millisecond, 1999999 * time.Millisecond}) {
		t.Errorf("build(3e6 attempts, 1ms, 2000s) made = %+v; want attempt 2,000,000 after 1999.999s", tb.made)
	}
	if tb.estimatedAfter != exactAttempts || len(tb.rows) != 5 {
		t.Errorf("build(3e6 attempts) estimatedAfter %d, %d rows; want %d, 5", tb.estimatedAfter, len(tb.rows), exactAttempts)
	}
}

func TestBoundsOf(t *testing.T) {
	sched := backoff.Schedule{MinDelay: time.Second, MaxDelay: 11 * time.Second, NumRetries: 2, BackoffFunction: backoff.CurveLinear, Jitter: 0.5}
	tests := []struct {
		name   string
		s      backoff.Strategy
		retry  int
		lo, hi time.Duration
		exact  bool
	}{
		{"nil", nil, 2, 0, 2 * time.Second, true},
		{"fullJitter", backoff.FullJitter{}, 3, 0, 4 * time.Second, true},
		{"equalJitter", backoff.EqualJitter{}, 1, 500 * time.Millisecond, time.Second, true},
		{"decorrelated", backoff.Decorrelated{}, 2, time.Second, 9 * time.Second, true},
		{"scaledJitter", backoff.ScaledJitter{}, 2, 0, 15 * time.Millisecond, true},
		{"exponential", backoff.Exponential{MinBackoff: 3 * time.Second, MaxBackoff: 30 * time.Second, DeltaBackoff: 4 * time.Second}, 2,
			6200 * time.Millisecond, 7800 * time.Millisecond, true},
		{"schedule", sched, 2, 6 * time.Second, 11 * time.Second, true},
		{"constant", backoff.Constant{}, 4, time.Second, time.Second, true},
		{"incremental", backoff.Incremental{}, 4, 4 * time.Second, 4 * time.Second, true},
		{"capped", backoff.Capped{Strategy: backoff.FullJitter{}, Max: 3 * time.Second}, 5, 0, 3 * time.Second, true},
		{"jittered", backoff.Jittered{Strategy: backoff.Constant{Interval: 4 * time.Second}, Fraction: 0.25}, 1,
			3 * time.Second, 4 * time.Second, true},
		{"jitteredJitter", backoff.Jittered{Strategy: backoff.EqualJitter{}, Fraction: 0.5}, 2,
			500 * time.Millisecond, 2 * time.Second, true},
		{"func", backoff.Func(func(n int) time.Duration { return time.Duration(n) * time.Second }), 3,
			3 * time.Second, 3 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := boundsOf(tt.s)
			lo, hi := b.lo.Delay(tt.retry), b.hi.Delay(tt.retry)
			if !near(lo, tt.lo, time.Microsecond) || !near(hi, tt.hi, time.Microsecond) || b.exact != tt.exact {
				t.Errorf("boundsOf(%s) at retry %d = [%v, %v], exact %t; want [%v, %v], exact %t",
					tt.name, tt.retry, lo, hi, b.exact, tt.lo, tt.hi, tt.exact)
			}
		})
	}
}

func TestRunUnknownStrategyIsMarked(t *testing.T) {
	p := policy.Policy{MaxAttempts: 2, Backoff: backoff.Func(func(int) time.Duration { return 1500 * time.Millisecond })}
	var out bytes.Buffer
	printPolicy(&out, "func", p, 0)
	for _, want := range []string{
		"backoff.Func (no JSON form)",
		"2        ~1.5s     ~1.5s     ~1.5s      ~1.5s",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printPolicy(Func) lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPhase(t *testing.T) {
	s := backoff.Schedule{NumRetries: 10, NumNoDelayRetries: 1, NumMinDelayRetries: 2, NumMaxDelayRetries: 3}
	var got []string
	for n := 1; n <= 11; n++ {
		got = append(got, phase(s, n))
	}
	want := []string{"immediate", "pre-backoff", "pre-backoff", "backoff 1/4", "backoff 2/4", "backoff 3/4", "backoff 4/4",
		"post-backoff", "post-backoff", "post-backoff", "past the policy"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phase(Schedule 1+2+4+3, 1..11) mismatch (-want +got):\n%s", diff)
	}
	if got := phase(backoff.FullJitter{}, 1); got != "" {
		t.Errorf("phase(FullJitter, 1) = %q; want \"\"", got)
	}
}

func TestFmtDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999_999_999, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{1_389_495_494, "1.389s"},
		{22_500 * time.Microsecond, "22.5ms"},
		{2 * time.Minute, "2m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h0m5s"},
	}
	for _, tt := range tests {
		if got := fmtDur(tt.d); got != tt.want {
			t.Errorf("fmtDur(%d) = %q; want %q", int64(tt.d), got, tt.want)
		}
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100016: "100,016", -1234567: "-1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q; want %q", n, got, want)
		}
	}
}

// svgChart is what TestWriteChart reads back from the SVG.
type svgChart struct {
	root      xml.StartElement
	polylines map[string][]float64 // id -> y coordinates of the points
	elements  map[string]int       // element name -> count
}

// parseChart decodes an SVG document with encoding/xml, failing the test
// if it is not well-formed.
func parseChart(t *testing.T, data []byte) svgChart {
	t.Helper()
	c := svgChart{polylines: make(map[string][]float64), elements: make(map[string]int)}
	d := xml.NewDecoder(bytes.NewReader(data))
	first := true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if first {
			c.root, first = se.Copy(), false
		}
		c.elements[se.Name.Local]++
		if se.Name.Local != "polyline" {
			continue
		}
		var id, points string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "id":
				id = a.Value
			case "points":
				points = a.Value
			}
		}
		for _, pt := range strings.Fields(points) {
			_, ys, ok := strings.Cut(pt, ",")
			y, err := strconv.ParseFloat(ys, 64)
			if !ok || err != nil {
				t.Fatalf("polyline %q has a bad point %q", id, pt)
			}
			c.polylines[id] = append(c.polylines[id], y)
		}
	}
	return c
}

func TestWriteChart(t *testing.T) {
	var buf bytes.Buffer
	c := snsChart()
	if err := writeChart(&buf, c); err != nil {
		t.Fatalf("writeChart(snsChart()) error: %v", err)
	}
	got := parseChart(t, buf.Bytes())
	if got.root.Name.Local != "svg" || got.root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Errorf("writeChart root element = %v; want svg in the SVG namespace", got.root.Name)
	}
	for _, a := range got.root.Attr {
		if a.Name.Local == "version" && a.Value != "1.1" {
			t.Errorf("writeChart version = %q; want 1.1", a.Value)
		}
	}
	if n := got.elements["polyline"]; n != 4 {
		t.Errorf("writeChart has %d polylines; want 4", n)
	}
	for _, banned := range []string{"script", "style", "image", "foreignObject", "a"} {
		if got.elements[banned] > 0 {
			t.Errorf("writeChart has a <%s> element; want plain shapes and text", banned)
		}
	}
	if bytes.Contains(buf.Bytes(), []byte("href")) || bytes.Contains(buf.Bytes(), []byte("url(")) {
		t.Errorf("writeChart refers to an external resource")
	}
	for _, name := range []string{"linear", "arithmetic", "exponential", "geometric"} {
		ys := got.polylines[name]
		if len(ys) != 10 {
			t.Errorf("polyline %q has %d points; want 10", name, len(ys))
			continue
		}
		first, last := c.seconds(ys[0]), c.seconds(ys[len(ys)-1])
		if math.Abs(first-5) > 0.01 || math.Abs(last-260) > 0.01 {
			t.Errorf("polyline %q runs from %.3f s to %.3f s; want 5 s to 260 s", name, first, last)
		}
	}
	// Exponential at retry 5 is 5*52^(4/9) s, 28.95 s (backoff.Curve).
	if y := got.polylines["exponential"][4]; math.Abs(c.seconds(y)-28.95) > 0.02 {
		t.Errorf("exponential retry 5 at %.3f s; want 28.95 s", c.seconds(y))
	}
}

func TestWriteChartIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := writeChart(&a, snsChart()); err != nil {
		t.Fatal(err)
	}
	if err := writeChart(&b, snsChart()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("writeChart(snsChart()) wrote different bytes on two calls")
	}
	committed, err := os.ReadFile("sns-curves.svg")
	if err != nil {
		t.Fatalf("reading the committed chart: %v", err)
	}
	if !bytes.Equal(committed, a.Bytes()) {
		t.Error("sns-curves.svg is out of date: run go run ./examples/schedule -svg examples/schedule/sns-curves.svg from the module root")
	}
}

func TestWriteChartRejectsBadCharts(t *testing.T) {
	for _, c := range []chart{
		{minDelay: time.Second, maxDelay: 2 * time.Second, retries: 1},
		{minDelay: 0, maxDelay: 2 * time.Second, retries: 10},
		{minDelay: 3 * time.Second, maxDelay: 2 * time.Second, retries: 10},
	} {
		if err := writeChart(io.Discard, c); err == nil {
			t.Errorf("writeChart(%+v) = nil; want an error", c)
		}
	}
}

func TestRunWritesSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.svg")
	out := runOK(t, "-svg", path)
	if !strings.Contains(out, "Wrote "+path) {
		t.Errorf("run(-svg %s) does not say it wrote the chart:\n%s", path, out)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("run(-svg) wrote no file: %v", err)
	}
	var want bytes.Buffer
	if err := writeChart(&want, snsChart()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("run(-svg) wrote a chart other than writeChart(snsChart())")
	}
}

func TestRunHelp(t *testing.T) {
	out := runOK(t, "-h")
	if !strings.HasPrefix(out, "usage: go run ./examples/schedule") || !strings.Contains(out, "-preset") {
		t.Errorf("run(-h) = %q; want the usage", out)
	}
}

func TestRunErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	broken := writeFile(t, "broken.json", `{"maxAttempts": `)
	bad := writeFile(t, "bad.json", `{"maxAttempts": -3}`)
	badSNS := writeFile(t, "sns.json", `{"healthyRetryPolicy": {"numRetries": 101}}`)
	tests := []struct {
		name string
		args []string
		want string // a part of the error message
	}{
		{"unknownPreset", []string{"-preset", "fast"}, `preset = "fast"; want one of standard`},
		{"missingFile", []string{"-file", missing}, "missing.json: no such file"},
		{"brokenJSON", []string{"-file", broken}, "broken.json (read as policy)"},
		{"badField", []string{"-file", bad}, "maxAttempts = -3"},
		{"badSNSField", []string{"-file", badSNS}, "healthyRetryPolicy.numRetries = 101; want 0..100"},
		{"presetAndFile", []string{"-preset", "none", "-file", bad}, "-preset and -file exclude each other"},
		{"snsWithoutFile", []string{"-sns"}, "-sns needs -file"},
		{"emptyFile", []string{"-file", ""}, "-file needs a path"},
		{"negativeMax", []string{"-max", "-1"}, "-max -1"},
		{"badMax", []string{"-max", "many"}, `invalid value "many" for flag -max`},
		{"unknownFlag", []string{"-verbose"}, "flag provided but not defined: -verbose"},
		{"extraArgument", []string{"standard"}, `unexpected argument "standard"`},
		{"svgDirMissing", []string{"-svg", filepath.Join(missing, "c.svg")}, "writing the chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(io.Discard, tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) error = %v; want one containing %q", tt.args, err, tt.want)
			}
		})
	}
	var fe *policy.FieldError
	if err := run(io.Discard, []string{"-preset", "fast"}); !errors.As(err, &fe) || fe.Field != "preset" {
		t.Errorf("run(-preset fast) error = %v; want a *policy.FieldError for preset", err)
	}
}

// The tables of the Azure service presets, derived by hand in
// policy/preset_azure_services_test.go from the numbers of docs/azure.md.
func TestRunAzureServicePresets(t *testing.T) {
	tests := []struct {
		name   string
		header string
		table  []string
		total  string
	}{
		{
			// 429s without x-ms-retry-after-ms wait the SDK's 5 s; an
			// eighth wait would take the waits past 30 s.
			name:   "azure-cosmos-db",
			header: "Policy azure-cosmos-db: 10 attempts at most, MaxDelay 30s, no MaxTotalTime, MaxTotalWait 30s\n",
			table: []string{
				"attempt  wait min  wait max  total min  total max  notes",
				"1        -         -         0s         0s",
				"2        5s        5s        5s         5s",
				"3        5s        5s        10s        10s",
				"4        5s        5s        15s        15s",
				"5        5s        5s        20s        20s",
				"6        5s        5s        25s        25s",
				"7        5s        5s        30s        30s",
				"8        5s        5s        35s        35s        over MaxTotalWait: not attempted",
			},
			total: "In all: 7 attempts, waiting 30s.",
		},
		{
			// 0.1s, then 0.1s + [2.4s, 3.6s) and 0.1s + [7.2s, 10.8s).
			name:   "azure-service-bus",
			header: "Policy azure-service-bus: 4 attempts at most, MaxDelay 30s, no MaxTotalTime, TerminationBuffer 5s (of a context deadline)\n",
			table: []string{
				"attempt  wait min  wait max  total min  total max  notes",
				"1        -         -         0s         0s",
				"2        100ms     100ms     100ms      100ms",
				"3        2.5s      3.7s      2.6s       3.8s",
				"4        7.3s      10.9s     9.9s       14.7s",
			},
			total: "In all: 4 attempts, waiting 9.9s to 14.7s.",
		},
		{
			// Fast first retry, then min(1s + [8s, 12s), 10s) and 10s.
			name:   "azure-search",
			header: "Policy azure-search: 4 attempts at most, MaxDelay 20s, no MaxTotalTime\n",
			table: []string{
				"attempt  wait min  wait max  total min  total max  notes",
				"1        -         -         0s         0s",
				"2        0s        0s        0s         0s",
				"3        9s        10s       9s         10s",
				"4        10s       10s       19s        20s",
			},
			total: "In all: 4 attempts, waiting 19s to 20s.",
		},
		{
			// 0, then 1, 3, 7 and 15 times [1.6s, 2.4s), within 60 s.
			name:   "azure-active-directory",
			header: "Policy azure-active-directory: 6 attempts at most, MaxDelay 1m, MaxTotalTime 1m\n",
			table: []string{
				"attempt  wait min  wait max  total min  total max  notes",
				"1        -         -         0s         0s",
				"2        0s        0s        0s         0s",
				"3        1.6s      2.4s      1.6s       2.4s",
				"4        4.8s      7.2s      6.4s       9.6s",
				"5        11.2s     16.8s     17.6s      26.4s",
				"6        24s       36s       41.6s      1m2.4s     may exceed MaxTotalTime",
			},
			total: "In all: 6 attempts, waiting 41.6s to 1m2.4s.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runOK(t, "-preset", tt.name)
			if !strings.HasPrefix(out, tt.header) {
				t.Errorf("run(-preset %s) header = %q; want %q", tt.name, out[:strings.IndexByte(out, '\n')+1], tt.header)
			}
			if diff := cmp.Diff(tt.table, tableLines(t, out)); diff != "" {
				t.Errorf("run(-preset %s) table mismatch (-want +got):\n%s\noutput:\n%s", tt.name, diff, out)
			}
			if !strings.Contains(out, tt.total) {
				t.Errorf("run(-preset %s) lacks %q:\n%s", tt.name, tt.total, out)
			}
		})
	}
	out := runOK(t, "-preset", "azure-cosmos-db")
	for _, want := range []string{
		"Server delays: only x-ms-retry-after-ms, each in place of the backoff, up to MaxDelay.",
		"MaxTotalWait, 30s, leaves no room for the wait before attempt 8: the transport does not start it.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run(-preset azure-cosmos-db) lacks %q:\n%s", want, out)
		}
	}
}

// Service Bus adds 10 s to every wait after a ServerBusy error; when every
// failure is one, every wait is 10 s longer.
func TestRunServiceBusPenaltyTable(t *testing.T) {
	out := runOK(t, "-preset", "azure-service-bus")
	const head = "If every failure signals the Penalty (error code ServerBusy), each wait is 10s longer:"
	i := strings.Index(out, head)
	if i < 0 {
		t.Fatalf("run(-preset azure-service-bus) has no Penalty table:\n%s", out)
	}
	want := []string{
		"attempt  wait min  wait max  total min  total max  notes",
		"1        -         -         0s         0s",
		"2        10.1s     10.1s     10.1s      10.1s",
		"3        12.5s     13.7s     22.6s      23.8s",
		"4        17.3s     20.9s     39.9s      44.7s",
	}
	if diff := cmp.Diff(want, tableLines(t, out[i:])); diff != "" {
		t.Errorf("run(-preset azure-service-bus) Penalty table mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(out[i:], "In all: 4 attempts, waiting 39.9s to 44.7s.") {
		t.Errorf("run(-preset azure-service-bus) Penalty table lacks its summary:\n%s", out[i:])
	}
	if strings.Contains(runOK(t, "-preset", "azure-search"), "Penalty") {
		t.Error("run(-preset azure-search) prints a Penalty table for a policy without one")
	}
}

// The Kotlin SDK's delay provider: ceilings of 10ms·1.5^(n-1), full jitter.
func TestRunKotlinPresets(t *testing.T) {
	out := runOK(t, "-preset", "kotlin-adaptive")
	if !strings.HasPrefix(out, "Policy kotlin-adaptive: 10 attempts at most, MaxDelay 20s, no MaxTotalTime, adaptive rate limiter (can add waits)\n") {
		t.Errorf("run(-preset kotlin-adaptive) header lacks 10 attempts or the limiter:\n%s", out)
	}
	lines := tableLines(t, out)
	if len(lines) != 11 {
		t.Fatalf("run(-preset kotlin-adaptive) printed %d rows; want 10", len(lines)-1)
	}
	for i, want := range []string{"10ms", "15ms", "22.5ms", "33.75ms", "50.63ms", "75.94ms", "113.9ms", "170.9ms", "256.3ms"} {
		if f := strings.Fields(lines[i+2]); len(f) < 3 || f[2] != want {
			t.Errorf("run(-preset kotlin-adaptive) attempt %d waits at most %q; want %s", i+2, lines[i+2], want)
		}
	}
	if got := tableLines(t, runOK(t, "-preset", "kotlin-standard")); len(got) != 4 || !strings.Contains(got[3], "15ms") {
		t.Errorf("run(-preset kotlin-standard) table = %q; want 3 attempts, the last waiting up to 15ms", got)
	}
}

func TestRunTerminationBufferCutsTheTimeLimit(t *testing.T) {
	p := policy.Policy{
		MaxAttempts:       5,
		Backoff:           backoff.Constant{Interval: 10 * time.Second},
		MaxTotalTime:      35 * time.Second,
		TerminationBuffer: 10 * time.Second,
	}
	var out bytes.Buffer
	printPolicy(&out, "buffered", p, 0)
	for _, want := range []string{
		"Policy buffered: 5 attempts at most, MaxDelay 20s, MaxTotalTime 35s, TerminationBuffer 10s\n",
		// Attempt 4 would start at 30 s, with 5 s left: less than 10 s.
		"4        10s       10s       30s        30s        over MaxTotalTime: not attempted",
		"MaxTotalTime, 35s, less its TerminationBuffer, 10s, is spent before attempt 4: the transport does not start it.",
		"In all: 3 attempts, waiting 20s.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printPolicy(TerminationBuffer 10s of 35s) lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCutoffOf(t *testing.T) {
	tests := []struct {
		name string
		p    policy.Policy
		want cutoff
	}{
		{"None", policy.Policy{}, cutoff{}},
		{"MaxTotalTime", policy.Policy{MaxTotalTime: 30 * time.Second}, cutoff{at: 30 * time.Second, field: "MaxTotalTime", value: 30 * time.Second}},
		{"Buffer", policy.Policy{MaxTotalTime: 30 * time.Second, TerminationBuffer: 5 * time.Second},
			cutoff{at: 25*time.Second + 1, field: "MaxTotalTime", value: 30 * time.Second, buffer: 5 * time.Second}},
		{"BufferAlone", policy.Policy{TerminationBuffer: 5 * time.Second}, cutoff{}},
		{"MaxTotalWait", policy.Policy{MaxTotalWait: 30 * time.Second}, cutoff{at: 30*time.Second + 1, field: "MaxTotalWait", value: 30 * time.Second}},
		{"WaitFirst", policy.Policy{MaxTotalTime: time.Minute, MaxTotalWait: 30 * time.Second},
			cutoff{at: 30*time.Second + 1, field: "MaxTotalWait", value: 30 * time.Second}},
		{"TimeFirst", policy.Policy{MaxTotalTime: 20 * time.Second, MaxTotalWait: 30 * time.Second},
			cutoff{at: 20 * time.Second, field: "MaxTotalTime", value: 20 * time.Second}},
		{"HugeWait", policy.Policy{MaxTotalWait: math.MaxInt64}, cutoff{at: math.MaxInt64, field: "MaxTotalWait", value: math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, cutoffOf(tt.p), cmp.AllowUnexported(cutoff{})); diff != "" {
				t.Errorf("cutoffOf(%s) mismatch (-want +got):\n%s", tt.name, diff)
			}
		})
	}
	// An attempt after exactly MaxTotalWait of waiting is made; one after
	// a nanosecond more is not.
	c := cutoffOf(policy.Policy{MaxTotalWait: 30 * time.Second})
	if got := c.mark(span{30 * time.Second, 30 * time.Second}); got != withinLimit {
		t.Errorf("mark(30s) under MaxTotalWait 30s = %d; want withinLimit", got)
	}
	if got := c.mark(span{29 * time.Second, 31 * time.Second}); got != mayOverrun {
		t.Errorf("mark(29s..31s) under MaxTotalWait 30s = %d; want mayOverrun", got)
	}
	if got := c.mark(span{30*time.Second + 1, 31 * time.Second}); got != overLimit {
		t.Errorf("mark(30s+1ns..31s) under MaxTotalWait 30s = %d; want overLimit", got)
	}
}

func TestSignals(t *testing.T) {
	pen := &policy.Penalty{Codes: []string{"ServerBusy", "Busy"}, Statuses: []int{503}, Delay: time.Second}
	if got, want := signals(pen), "error code ServerBusy or error code Busy or status 503"; got != want {
		t.Errorf("signals(%+v) = %q; want %q", pen, got, want)
	}
}
