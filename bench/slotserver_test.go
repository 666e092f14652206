package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// getWithin sends a GET to url that gives up after timeout (none if zero)
// and reports whether it succeeded and how long it took.
func getWithin(url string, timeout time.Duration) (ok bool, took time.Duration) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, time.Since(start)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, time.Since(start)
}

// TestSlotServer checks the slots-and-queue server: it serves at most its
// slots at once, for the service time each; it queues the rest first come
// first served and serves a queued request whose client has gone all the
// same, counting it as wasted, so that the request queued behind it waits
// for it.
func TestSlotServer(t *testing.T) {
	const service = 60 * time.Millisecond
	srv := newSlotServer(2, service)
	defer srv.close()
	now := time.Now()
	srv.count(now, now.Add(time.Hour))

	// Two requests take both slots; two more queue and give up after 20
	// ms; the last queues behind them.
	var wg sync.WaitGroup
	type result struct {
		ok   bool
		took time.Duration
	}
	results := make([]result, 5)
	timeouts := []time.Duration{0, 0, 20 * time.Millisecond, 20 * time.Millisecond, 0}
	for i, timeout := range timeouts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].ok, results[i].took = getWithin(srv.URL, timeout)
		}()
		time.Sleep(5 * time.Millisecond) // in this order
	}
	wg.Wait()
	for i, r := range results {
		if want := timeouts[i] == 0; r.ok != want {
			t.Errorf("request %d (timeout %v): succeeded %t; want %t", i, timeouts[i], r.ok, want)
		}
	}
	// The last waited for the first two and then for the two whose
	// clients had gone: two services before its own, at least.
	if last := results[4].took; last < 2*service {
		t.Errorf("the request queued behind two abandoned ones took %v; want at least %v (they are served all the same)", last, 2*service)
	}
	deadline := time.Now().Add(2 * time.Second)
	for srv.served.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if served, wasted, peak := srv.results(); served != 5 || wasted != 2 || peak != 2 {
		t.Errorf("slot server (2 slots), 5 requests, 2 abandoned while queued: served %d, wasted %d, at most %d at once; want 5, 2, 2",
			served, wasted, peak)
	}
}

// TestSlotServerCountsItsWindow checks that the slot server counts only
// the services that end within the window count gave it.
func TestSlotServerCountsItsWindow(t *testing.T) {
	srv := newSlotServer(1, time.Millisecond)
	defer srv.close()
	if ok, _ := getWithin(srv.URL, 0); !ok {
		t.Fatalf("GET %s before counting failed; want 200", srv.URL)
	}
	now := time.Now()
	srv.count(now, now.Add(time.Hour))
	if ok, _ := getWithin(srv.URL, 0); !ok {
		t.Fatalf("GET %s while counting failed; want 200", srv.URL)
	}
	srv.count(now, time.Now())
	if ok, _ := getWithin(srv.URL, 0); !ok {
		t.Fatalf("GET %s after counting failed; want 200", srv.URL)
	}
	if served, wasted, _ := srv.results(); served != 1 || wasted != 0 {
		t.Errorf("slot server, one request before, one within and one after the window: served %d, wasted %d; want 1, 0", served, wasted)
	}
}

// getAll sends n GETs to url at once and waits for them all.
func getAll(url string, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			getWithin(url, 0)
		}()
	}
	wg.Wait()
}

// TestSlotServerServesAtMostItsSlots checks that the latency table's
// server serves latencySlots requests at once when it has more, and no
// more.
func TestSlotServerServesAtMostItsSlots(t *testing.T) {
	srv := newSlotServer(latencySlots, 5*time.Millisecond)
	defer srv.close()
	getAll(srv.URL, 3*latencySlots)
	if _, _, peak := srv.results(); peak != latencySlots {
		t.Errorf("slot server of %d slots, %d requests at once: at most %d in service; want %d", latencySlots, 3*latencySlots, peak, latencySlots)
	}
}

// TestSlotServerKeepsItsSchedule checks that the slots keep their
// schedule when the sleeps wake up late: a queue of 20 requests on one
// slot of 10 ms, each sleep waking 5 ms late, is served in about 200 ms,
// not 20 late wake-ups' 300 ms.
func TestSlotServerKeepsItsSchedule(t *testing.T) {
	const n, service, late = 20, 10 * time.Millisecond, 5 * time.Millisecond
	srv := newSlotServerSleeping(1, service, func(d time.Duration) { time.Sleep(d + late) })
	defer srv.close()
	start := time.Now()
	getAll(srv.URL, n)
	if took, most := time.Since(start), n*service+(n*late)/2; took < n*service || took > most {
		t.Errorf("%d requests on one slot of %v, sleeps %v late, took %v; want %v to %v", n, service, late, took, n*service, most)
	}
}
