package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// scopesWorkers is how many closed-loop workers call the healthy server,
// beside the throttleWorkers that call the throttled one.
const scopesWorkers = 4

// runScopes checks that throttling of one scope does not slow another:
// one client sends to a throttled server (the throttled scenario's, 200
// req/s, burst 20) and, at the same time, to a healthy one. The healthy
// scope's goodput is compared with what the same client reaches on it
// alone. Only our contenders run: the peers keep no per-host state to test.
// The goal is adaptive mode's (docs/aws.md, throttling of one resource must not
// slow requests to others); standard mode's row shows what happens without
// a limiter.
func runScopes(w io.Writer, cfg config, cs []contender) {
	t := &table{
		title: fmt.Sprintf("two scopes: %d workers on a throttled server (%d req/s, burst %d) and %d on a healthy one, one client, %v",
			throttleWorkers, throttleRate, throttleBurst, scopesWorkers, cfg.scopesFor),
		notes: []string{"\"alone\" is the healthy scope's goodput with the same client and no throttled traffic, measured just before. " +
			"The ratio shows whether the throttled scope slowed the healthy one; both share this 2-core machine, so CPU spent on one is lost to the other.",
			waitsNote},
		cols: []string{"contender", "throttled goodput/s", "throttled 429 share", "healthy goodput/s", "healthy alone/s", "ratio", "healthy 429s"},
	}
	var goals []goal
	for _, c := range cs {
		if c.kind != kindOurs {
			continue
		}
		r := scopes(cfg, c)
		ratio := r.healthy / r.alone
		t.add(c.name, fmt.Sprintf("%.1f", r.throttled), percent(r.share429), fmt.Sprintf("%.0f", r.healthy),
			fmt.Sprintf("%.0f", r.alone), fmt.Sprintf("%.3f", ratio), fmt.Sprint(r.healthy429))
		if !strings.Contains(c.name, "adaptive") {
			continue // standard mode has no limiter: its throttled scope takes what CPU it can
		}
		goals = append(goals, goal{ratio >= 0.9 && r.healthy429 == 0,
			fmt.Sprintf("%s: the healthy scope keeps its rate while the other is throttled: %.0f/s vs %.0f/s alone (ratio %.3f, want >= 0.9), %d throttles",
				c.name, r.healthy, r.alone, ratio, r.healthy429)})
	}
	t.write(w)
	writeGoals(w, goals)
}

type scopesRun struct {
	throttled, share429 float64
	healthy, alone      float64
	healthy429          int
}

func scopes(cfg config, c contender) scopesRun {
	throttled := newThrottledServer(false)
	defer throttled.Close()
	healthy := newServer(okHandler)
	defer healthy.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}
	get := func(url string) func(ctx context.Context, _ int) outcome {
		return func(ctx context.Context, _ int) outcome {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			return send(ctx, client, req)
		}
	}

	var r scopesRun
	alone := runFor(scopesWorkers, time.Now().Add(cfg.scopesFor), get(healthy.URL))
	r.alone = float64(len(alone)-failures(alone)) / cfg.scopesFor.Seconds()

	end := time.Now().Add(cfg.scopesFor)
	throttled.countUntil(end)
	var wg sync.WaitGroup
	var throttledOuts, healthyOuts []outcome
	wg.Add(2)
	go func() { defer wg.Done(); throttledOuts = runFor(throttleWorkers, end, get(throttled.URL)) }()
	go func() { defer wg.Done(); healthyOuts = runFor(scopesWorkers, end, get(healthy.URL)) }()
	wg.Wait()
	r.throttled = float64(len(throttledOuts)-failures(throttledOuts)) / cfg.scopesFor.Seconds()
	r.share429 = throttled.share429()
	r.healthy = float64(len(healthyOuts)-failures(healthyOuts)) / cfg.scopesFor.Seconds()
	for _, o := range healthyOuts {
		if o.status == http.StatusTooManyRequests {
			r.healthy429++
		}
	}
	return r
}
