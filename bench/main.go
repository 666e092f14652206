// Command bench runs retrytransport side by side with the bare transport
// and peer retry libraries against loopback servers, and prints one
// Markdown table per scenario followed by the project's goals for that
// scenario, each met or missed, as ratios measured in the same run.
//
//	go run .                   # full run, about an hour on 2 cores
//	go run . -quick            # every scenario shrunk, about two minutes
//	go run . -scenarios fleet,single-ra -runs 1 -svg /tmp/fleet
//	                           # the fleet and single-client tables, with pictures
//	go run . -scenarios nginx -nginx-bins
//	                           # the single-client table against nginx's limit_req,
//	                           # with every run's goodput and 429s per 500 ms
//
// The fleet-redis, published and hang-redis tables start a redis-server
// from PATH on a free loopback port and stop it at the end; the bench
// fails if there is none. The nginx table starts an nginx from PATH (or
// Debian's /usr/sbin/nginx) on a free loopback port for each of its runs,
// configured with limit_req at the throttled server's rate; without nginx
// it prints a line saying it did not run, and the rest of the bench goes
// on.
//
// It is a separate module so that the peer libraries never become
// dependencies of retrytransport itself.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// config sizes the scenarios.
type config struct {
	benchTime        time.Duration // per paired testing.Benchmark run (overhead)
	benchRounds      int           // rounds of the overhead's paired benchmarks
	outageRequests   int           // logical requests in the outage
	outageTail       int           // the last requests whose amplification is a goal
	throttleFor      time.Duration // each throttled run
	throttledRuns    int           // runs of each throttled table per contender
	brownoutOutage   time.Duration // 503 phase of the brownout
	brownoutHealthy  time.Duration // healthy phase after it
	faultRequests    int           // logical requests per method with connection faults
	scopesFor        time.Duration // each phase of the two-scope run
	fleetFor         time.Duration // each run of a fleet variant
	fleetRuns        int           // runs of each fleet variant, and of the fleet-redis outage and fleet-redis throttled tables, per contender
	singleRuns       int           // runs of the single-client Retry-After table per contender
	nginxRuns        int           // runs of the nginx limit_req table per contender
	nginxBins        bool          // print every nginx run's goodput and 429s per bin, not only the runs that miss a goal
	redisOutage      int           // logical requests of the fleet-on-Redis outage, over all replicas
	redisCalls       int           // calls of each kind in the fleet-on-Redis cost table
	hedgeRequests    int           // logical GETs of each hedge run
	hedgeRuns        int           // runs of the hedge table per contender
	budgetFor        time.Duration // the open-loop outage under a retry budget
	failoverRequests int           // logical requests of each failover mode
	publishedWindow  time.Duration // the published quota's fixed window
	publishedFor     time.Duration // each run of the published quota
	publishedRuns    int           // runs of the published quota per contender
	shapesFor        time.Duration // each closed-loop run of a shapes cell
	shapesReachFor   time.Duration // each run of a shapes round's reachable, against a server that admits everything
	shapesRuns       int           // rounds of the shapes tables: runs of every cell per contender
	shapesStandard   bool          // add our standard mode to the shapes tables
	openloopFor      time.Duration // each run of an open-loop cell
	openloopRuns     int           // rounds of the open-loop table
	recoveryBefore   time.Duration // a warm client's admitted phase before the throttles, and a fresh client's R0 run
	recoveryAfter    time.Duration // the admitted phase after the first admitted response
	recoveryKs       []int         // the throttles in a row, one row each
	recoveryRuns     int           // rounds of the recovery tables
	latencyFor       time.Duration // the measured part of each run of a latency cell, after its start-up
	latencyRuns      int           // rounds of the latency table
	hangBefore       time.Duration // the hanging server's healthy phase before the hang
	hangFor          time.Duration // the hang
	hangAfter        time.Duration // the healthy phase after it
	hangRuns         int           // rounds of the hang table and of its brownout table
	hangRedisRuns    int           // rounds of the hang-redis table
	scenarios        []string      // the scenarios to run (names from scenarios()); nil means all
	svgDir           string        // where the fleet's pictures go; "" means none
}

// fullConfig sizes the full run, the one whose tables the docs report.
func fullConfig() config {
	return config{
		benchTime: 250 * time.Millisecond, benchRounds: 3,
		outageRequests: 2000, outageTail: 500,
		throttleFor: 8 * time.Second, throttledRuns: 3,
		brownoutOutage: 2 * time.Second, brownoutHealthy: time.Second,
		faultRequests: 2000,
		scopesFor:     4 * time.Second,
		fleetFor:      10 * time.Second, fleetRuns: 3,
		singleRuns: 10, nginxRuns: 5,
		redisOutage: 1600, redisCalls: 20000,
		hedgeRequests: 2000, hedgeRuns: 3,
		budgetFor:        4 * time.Second,
		failoverRequests: 2000,
		publishedWindow:  10 * time.Second, publishedFor: 30 * time.Second, publishedRuns: 5,
		shapesFor: 5 * time.Second, shapesReachFor: time.Second, shapesRuns: 5,
		openloopFor: 8 * time.Second, openloopRuns: 3,
		recoveryBefore: time.Second, recoveryAfter: 3 * time.Second, recoveryKs: []int{1, 2, 4}, recoveryRuns: 3,
		latencyFor: 2 * time.Second, latencyRuns: 5,
		hangBefore: 3 * time.Second, hangFor: 5 * time.Second, hangAfter: 3 * time.Second, hangRuns: 5, hangRedisRuns: 5,
	}
}

// quickConfig shrinks every scenario so that the whole run takes about two
// minutes; it checks the harness, not the figures.
func quickConfig() config {
	return config{
		benchTime: 30 * time.Millisecond, benchRounds: 1,
		outageRequests: 400, outageTail: 100,
		throttleFor: time.Second, throttledRuns: 1,
		brownoutOutage: 500 * time.Millisecond, brownoutHealthy: 300 * time.Millisecond,
		faultRequests: 300,
		scopesFor:     500 * time.Millisecond,
		fleetFor:      2 * time.Second, fleetRuns: 1,
		singleRuns: 2, nginxRuns: 1,
		redisOutage: 800, redisCalls: 2000,
		hedgeRequests: 400, hedgeRuns: 1,
		budgetFor:        1500 * time.Millisecond,
		failoverRequests: 300,
		publishedWindow:  2 * time.Second, publishedFor: 4 * time.Second, publishedRuns: 1,
		shapesFor: 300 * time.Millisecond, shapesReachFor: 200 * time.Millisecond, shapesRuns: 1,
		openloopFor: 400 * time.Millisecond, openloopRuns: 1,
		recoveryBefore: 300 * time.Millisecond, recoveryAfter: 500 * time.Millisecond, recoveryKs: []int{1}, recoveryRuns: 1,
		latencyFor: 300 * time.Millisecond, latencyRuns: 1,
		hangBefore: 500 * time.Millisecond, hangFor: 1500 * time.Millisecond, hangAfter: time.Second, hangRuns: 1, hangRedisRuns: 1,
	}
}

func main() {
	testing.Init() // registers -test.benchtime, which the overhead scenario sets
	quick := flag.Bool("quick", false, "shrink every scenario so that the whole run takes about two minutes")
	runs := flag.Int("runs", 0, "runs of each fleet variant, and of the fleet-redis outage and fleet-redis throttled tables, per contender; 0 means 3, or 1 with -quick")
	throttledRuns := flag.Int("throttled-runs", 0, "runs of the two throttled tables per contender; 0 means 3, or 1 with -quick")
	singleRuns := flag.Int("single-runs", 0, "runs of the single-client Retry-After table per contender; 0 means 10, or 2 with -quick")
	nginxRuns := flag.Int("nginx-runs", 0, "runs of the nginx limit_req table per contender; 0 means 5, or 1 with -quick")
	nginxBins := flag.Bool("nginx-bins", false, "print every nginx run's goodput and 429s per 500 ms, not only those of our runs that miss a goal")
	publishedRuns := flag.Int("published-runs", 0, "runs of the published-quota table per contender; 0 means 5, or 1 with -quick")
	shapesRuns := flag.Int("shapes-runs", 0, "runs of every shapes cell per contender; 0 means 5, or 1 with -quick")
	shapesStandard := flag.Bool("shapes-standard", false, "add our standard mode, the reference without a limiter, to the shapes tables (12 more runs a round)")
	openloopRuns := flag.Int("openloop-runs", 0, "runs of every open-loop cell per contender; 0 means 3, or 1 with -quick")
	recoveryRuns := flag.Int("recovery-runs", 0, "runs of every recovery row; 0 means 3, or 1 with -quick")
	latencyRuns := flag.Int("latency-runs", 0, "runs of every latency cell per contender; 0 means 5, or 1 with -quick")
	latencyFor := flag.Duration("latency-for", 0, "length of the measured part of each latency run, after its 500ms start-up; 0 means 2s, or 300ms with -quick (the issue's runs were 8s)")
	hangRuns := flag.Int("hang-runs", 0, "runs of the hang table and of its brownout table per contender; 0 means 5, or 1 with -quick")
	hangRedisRuns := flag.Int("hang-redis-runs", 0, "runs of the hang-redis table per contender; 0 means 5, or 1 with -quick")
	names := flag.String("scenarios", strings.Join(scenarioNames(), ","), "comma-separated `list` of the scenarios to run, always in this order")
	svgDir := flag.String("svg", "", "write a picture (SVG) of each fleet variant, its contenders' first runs side by side, into `dir`")
	flag.Parse()
	cfg := fullConfig()
	if *quick || os.Getenv("BENCH_QUICK") != "" {
		cfg = quickConfig()
	}
	if *runs != 0 {
		cfg.fleetRuns = *runs
	}
	if *throttledRuns != 0 {
		cfg.throttledRuns = *throttledRuns
	}
	if *singleRuns != 0 {
		cfg.singleRuns = *singleRuns
	}
	if *nginxRuns != 0 {
		cfg.nginxRuns = *nginxRuns
	}
	cfg.nginxBins = *nginxBins
	if *publishedRuns != 0 {
		cfg.publishedRuns = *publishedRuns
	}
	if *shapesRuns != 0 {
		cfg.shapesRuns = *shapesRuns
	}
	cfg.shapesStandard = *shapesStandard
	if *openloopRuns != 0 {
		cfg.openloopRuns = *openloopRuns
	}
	if *recoveryRuns != 0 {
		cfg.recoveryRuns = *recoveryRuns
	}
	if *latencyRuns != 0 {
		cfg.latencyRuns = *latencyRuns
	}
	if *latencyFor != 0 {
		cfg.latencyFor = *latencyFor
	}
	if *hangRuns != 0 {
		cfg.hangRuns = *hangRuns
	}
	if *hangRedisRuns != 0 {
		cfg.hangRedisRuns = *hangRedisRuns
	}
	for n := range strings.SplitSeq(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			cfg.scenarios = append(cfg.scenarios, n)
		}
	}
	cfg.svgDir = *svgDir
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// A scenario prints one table (with its goals) to w. Several may share a
// name, which -scenarios selects together.
type scenario struct {
	name string
	run  func(w io.Writer, cfg config, cs []contender) error
}

// scenarios returns every scenario in run order.
func scenarios() []scenario {
	// table adapts the scenarios that cannot fail.
	table := func(f func(w io.Writer, cfg config, cs []contender)) func(io.Writer, config, []contender) error {
		return func(w io.Writer, cfg config, cs []contender) error { f(w, cfg, cs); return nil }
	}
	return []scenario{
		{"overhead", table(runOverhead)},
		{"outage", table(runOutage)},
		{"throttled", table(func(w io.Writer, cfg config, cs []contender) { runThrottled(w, cfg, cs, false) })},
		{"throttled", table(func(w io.Writer, cfg config, cs []contender) { runThrottled(w, cfg, cs, true) })},
		{"scopes", table(runScopes)},
		{"brownout", table(runBrownout)},
		{"faults", table(runFaults)},
		{"fleet", runFleet},
		{"single-ra", runSingleRetryAfter},
		{"nginx", runNginx},
		{"fleet-redis", runFleetRedis},
		{"hedge", table(runHedge)},
		{"budget-outage", table(runBudgetOutage)},
		{"failover", table(runFailover)},
		{"published", runPublished},
		{"shapes", table(runShapes)},
		{"openloop", table(runOpenloop)},
		{"recovery", table(runRecovery)},
		{"latency", table(runLatency)},
		{"hang", table(runHang)},
		{"hang-redis", runHangRedis},
	}
}

// scenarioNames returns the scenarios' names in run order, each once.
func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		if !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
	}
	return names
}

// check reports the first setting that cannot run.
func (cfg config) check() error {
	known := scenarioNames()
	for _, n := range cfg.scenarios {
		if !slices.Contains(known, n) {
			return fmt.Errorf("unknown scenario %q; the scenarios are %s", n, strings.Join(known, ","))
		}
	}
	if cfg.fleetRuns < 1 {
		return fmt.Errorf("-runs is %d; want at least 1", cfg.fleetRuns)
	}
	if cfg.throttledRuns < 1 {
		return fmt.Errorf("-throttled-runs is %d; want at least 1", cfg.throttledRuns)
	}
	if cfg.singleRuns < 1 {
		return fmt.Errorf("-single-runs is %d; want at least 1", cfg.singleRuns)
	}
	if cfg.nginxRuns < 1 {
		return fmt.Errorf("-nginx-runs is %d; want at least 1", cfg.nginxRuns)
	}
	if cfg.publishedRuns < 1 {
		return fmt.Errorf("-published-runs is %d; want at least 1", cfg.publishedRuns)
	}
	if cfg.shapesRuns < 1 {
		return fmt.Errorf("-shapes-runs is %d; want at least 1", cfg.shapesRuns)
	}
	if cfg.openloopRuns < 1 {
		return fmt.Errorf("-openloop-runs is %d; want at least 1", cfg.openloopRuns)
	}
	if cfg.recoveryRuns < 1 {
		return fmt.Errorf("-recovery-runs is %d; want at least 1", cfg.recoveryRuns)
	}
	if cfg.latencyRuns < 1 {
		return fmt.Errorf("-latency-runs is %d; want at least 1", cfg.latencyRuns)
	}
	if cfg.latencyFor <= 0 {
		return fmt.Errorf("-latency-for is %v; want more than 0", cfg.latencyFor)
	}
	if cfg.hangRuns < 1 {
		return fmt.Errorf("-hang-runs is %d; want at least 1", cfg.hangRuns)
	}
	if cfg.hangRedisRuns < 1 {
		return fmt.Errorf("-hang-redis-runs is %d; want at least 1", cfg.hangRedisRuns)
	}
	return nil
}

// run prints the header and the selected scenarios' tables to w, in the
// order of scenarios().
func run(w io.Writer, cfg config) error {
	if err := prepare(cfg); err != nil {
		return err
	}
	start := time.Now()
	writeHeader(w)
	if err := runScenarios(w, cfg); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTotal time %s.\n", secs(time.Since(start)))
	return nil
}

// prepare checks cfg and sets what its scenarios share: the time of the
// testing.Benchmark runs.
func prepare(cfg config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	return setBenchTime(cfg.benchTime.String())
}

// runScenarios runs the scenarios cfg selects, in order, once prepare
// has checked cfg; it sets nothing the scenarios share, so that runs of
// different scenarios may go at once.
func runScenarios(w io.Writer, cfg config) error {
	cs := contenders()
	for _, s := range scenarios() {
		if cfg.scenarios != nil && !slices.Contains(cfg.scenarios, s.name) {
			continue
		}
		t0 := time.Now()
		if err := s.run(w, cfg, cs); err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
		fmt.Fprintf(w, "\nScenario time %s.\n", secs(time.Since(t0)))
	}
	return nil
}

func writeHeader(w io.Writer) {
	fmt.Fprintln(w, "## retrytransport side by side")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s, %s/%s, %d CPUs, GOMAXPROCS %d. Peers: %s.\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), peerVersions())
	fmt.Fprintln(w)
	awsMode := "its legacy retry behaviour (AWS_NEW_RETRIES_2026 unset)"
	if os.Getenv("AWS_NEW_RETRIES_2026") == "true" {
		awsMode = "AWS_NEW_RETRIES_2026=true, whose loop the adapter does NOT follow: the aws rows are not faithful"
	}
	fmt.Fprintf(w, "Every library keeps its defaults (attempts, what it retries, quotas, Retry-After handling) except its waits: "+
		"backoff scaled to a %v base and a %v cap for all alike; a server's Retry-After stays real time. "+
		"go-retryablehttp's logger is off; failsafe-go, which waits nothing by default, gets exponential backoff %v to %v; "+
		"the aws-sdk-go-v2 retryers run in an adapter that follows the SDK's retry middleware, in %s. "+
		"Each contender gets a fresh go-cleanhttp pooled transport (idle pool %d per host) and a fresh server and library state in every scenario. "+
		"\"conns\" is the connections the server accepted.\n",
		baseWait, maxWait, baseWait, maxWait, awsMode, maxIdlePerHost)
	if adaptiveIsStandard() {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "\"retrytransport adaptive (= standard)\": policy.Adaptive() still returns policy.Standard(), "+
			"since its client-side rate limiter is not built yet; the row measures standard mode a second time.")
	}
}

// setBenchTime sets the -test.benchtime of the testing.Benchmark runs that
// follow: a duration, or a count of iterations such as "1000x".
func setBenchTime(v string) error {
	if err := flag.Set("test.benchtime", v); err != nil {
		return fmt.Errorf("setting the benchmark time to %q: %w", v, err)
	}
	return nil
}

// peerVersions lists the module versions of the peer libraries in this
// binary.
func peerVersions() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var vs []string
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/hashicorp/go-retryablehttp", "github.com/failsafe-go/failsafe-go",
			"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go":
			vs = append(vs, d.Path+" "+d.Version)
		}
	}
	return strings.Join(vs, ", ")
}
