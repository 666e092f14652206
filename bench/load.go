package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// requestTimeout bounds every logical request, as callers usually do; it
// is far above anything a scenario should take.
const requestTimeout = 30 * time.Second

// outcome is what the caller saw of one logical request: a request as the
// application issues it, however many attempts the contender made.
type outcome struct {
	start, end time.Time
	status     int   // 0 when err is set
	err        error // the client's error, if any
}

// ok reports whether the logical request succeeded: a 2xx response.
func (o outcome) ok() bool { return o.err == nil && o.status >= 200 && o.status < 300 }

// send issues req through client under its own timeout, reads and closes
// the response body, and reports the outcome. The timeout's cancel also
// releases whatever the contender may have left open for the request.
func send(parent context.Context, client *http.Client, req *http.Request) outcome {
	ctx, cancel := context.WithTimeout(parent, requestTimeout)
	defer cancel()
	o := outcome{start: time.Now()}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		o.err = err
	} else {
		_, o.err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.status = resp.StatusCode
	}
	o.end = time.Now()
	return o
}

// runCount issues n logical requests, numbered 0 to n-1 in the order they
// start, from workers goroutines, and returns their outcomes by number.
func runCount(workers, n int, do func(ctx context.Context, i int) outcome) []outcome {
	out := make([]outcome, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out[i] = do(context.Background(), i)
			}
		}()
	}
	wg.Wait()
	return out
}

// runFor runs workers closed-loop goroutines, each issuing its next logical
// request as soon as the previous one ends, until deadline. Requests still
// running then are cancelled, and only outcomes that ended by the deadline
// are returned. The number passed to do is unique within the run.
//
// The end of the run is a cancellation, not a context deadline: a
// contender that sees a deadline may rightly refuse to start a wait that
// would pass it, which would turn the run's end into failures.
func runFor(workers int, deadline time.Time, do func(ctx context.Context, i int) outcome) []outcome {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Until(deadline), cancel)
	defer stop.Stop()
	var next atomic.Int64
	var mu sync.Mutex
	var all []outcome
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []outcome
			for ctx.Err() == nil {
				o := do(ctx, int(next.Add(1)-1))
				if !o.end.After(deadline) {
					mine = append(mine, o)
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

// failures counts the outcomes that did not succeed.
func failures(outs []outcome) int {
	n := 0
	for _, o := range outs {
		if !o.ok() {
			n++
		}
	}
	return n
}

// latencies returns the p50 and p99 of the outcomes' durations.
func latencies(outs []outcome) (p50, p99 time.Duration) {
	if len(outs) == 0 {
		return 0, 0
	}
	d := make([]time.Duration, len(outs))
	for i, o := range outs {
		d[i] = o.end.Sub(o.start)
	}
	slices.Sort(d)
	return quantile(d, 0.50), quantile(d, 0.99)
}

// quantile returns the q-quantile (nearest rank) of sorted, which is in
// ascending order; 0 if it is empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}
