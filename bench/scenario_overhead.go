package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

// The two operations of the overhead scenario.
const (
	opGET = iota
	opPUT
)

var opNames = [...]string{opGET: "GET", opPUT: "PUT"}

// overheadRun is one contender's state in the overhead scenario.
type overheadRun struct {
	c      contender
	srv    *server
	client *http.Client
	ns     [opPUT + 1][]float64               // by operation: mean ns per request in each paired run
	p50    [opPUT + 1][]float64               // by operation: median ns per request in each paired run
	ratios [opPUT + 1][]float64               // by operation: p50 over the bare transport's p50 in the same paired run
	mem    [opPUT + 1]testing.BenchmarkResult // by operation: a run for B/op and allocs/op
	err    error                              // the first failed request, if any
}

// memRuns is the number of requests of the runs that count allocations.
const memRuns = 1000

// runOverhead measures the happy path: sequential GETs and 1 KiB PUTs (with
// GetBody) that all succeed. Loopback timings on two cores drift by several
// per cent from one run to the next, so a contender is never timed alone:
// each iteration of a testing.Benchmark sends one request through the bare
// transport and one through the contender, in alternating order, timing
// each, and the ratio comes from the same iterations. Allocations, which do
// not drift, come from a separate run of each contender alone.
func runOverhead(w io.Writer, cfg config, cs []contender) {
	payload := bytes.Repeat([]byte("x"), 1024)
	newReq := [...]func(url string) *http.Request{
		opGET: newGET,
		opPUT: func(url string) *http.Request {
			req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(payload)) // sets GetBody
			return req
		},
	}
	runs := make([]*overheadRun, len(cs))
	for i, c := range cs {
		srv := newServer(okHandler)
		base := newBase()
		runs[i] = &overheadRun{c: c, srv: srv, client: &http.Client{Transport: c.wrap(base)}}
		defer srv.Close()
		defer base.CloseIdleConnections()
	}
	bare := runs[0]
	for range cfg.benchRounds {
		for _, r := range runs[1:] {
			for op := range opNames {
				pairRound(bare, r, op, newReq[op])
			}
		}
	}
	bare.ratios = [2][]float64{{1}, {1}}
	setBenchTime(fmt.Sprintf("%dx", memRuns))
	for _, r := range runs {
		for op := range opNames {
			r.mem[op] = r.soloBench(newReq[op])
		}
	}
	setBenchTime(cfg.benchTime.String())

	t := &table{
		title: "overhead: sequential requests that all succeed, loopback server",
		notes: []string{fmt.Sprintf("GET, and PUT of 1 KiB with GetBody set. Timing: %d round(s) of a %v testing.Benchmark per contender "+
			"whose every iteration sends one request through the bare transport and one through the contender, alternating which goes first, "+
			"each request timed. ns/op is the mean, p50 the median request; \"× bare\" is the contender's p50 over the bare transport's "+
			"in the same run, since a mean moves by several per cent with a few scheduler stalls; each is the median over the rounds. "+
			"B/op and allocs/op: a separate run of %d requests, counting the whole process, so they include the in-process server's share, "+
			"the same for every row.", cfg.benchRounds, cfg.benchTime, memRuns)},
		cols: []string{"contender", "GET ns/op", "p50", "× bare", "B/op", "allocs/op", "PUT ns/op", "p50", "× bare", "B/op", "allocs/op", "conns"},
	}
	for _, r := range runs {
		if r.err != nil {
			t.add(r.c.name, "error: "+r.err.Error(), "", "", "", "", "", "", "", "", "", count(r.srv.conns.Load()))
			continue
		}
		cells := []string{r.c.name}
		for op := range opNames {
			m := r.mem[op]
			cells = append(cells, whole(medianOf(r.ns[op])), whole(medianOf(r.p50[op])), ratio(medianOf(r.ratios[op])),
				count(m.AllocedBytesPerOp()), count(m.AllocsPerOp()))
		}
		t.add(append(cells, count(r.srv.conns.Load()))...)
	}
	t.write(w)
	writeGoals(w, overheadGoals(runs))
}

// overheadGoals checks, for each of our contenders: time within 5 % of
// bare, fewer allocations than every peer, and the connection budget.
func overheadGoals(runs []*overheadRun) []goal {
	bare := runs[0]
	var fewest [2]int64 // fewest allocs/op among the peers, by operation
	var fewestName [2]string
	for op := range opNames {
		fewest[op] = -1
		for _, r := range runs {
			if r.c.kind != kindPeer || r.err != nil {
				continue
			}
			if a := r.mem[op].AllocsPerOp(); fewest[op] < 0 || a < fewest[op] {
				fewest[op], fewestName[op] = a, r.c.name
			}
		}
	}
	var goals []goal
	for _, r := range runs {
		if r.c.kind != kindOurs {
			continue
		}
		if err := cmp.Or(r.err, bare.err); err != nil {
			goals = append(goals, goal{false, fmt.Sprintf("%s: the benchmark failed: %v", r.c.name, err)})
			continue
		}
		gr, pr := medianOf(r.ratios[opGET]), medianOf(r.ratios[opPUT])
		ga, pa := r.mem[opGET].AllocsPerOp(), r.mem[opPUT].AllocsPerOp()
		goals = append(goals,
			goal{gr <= 1.05 && pr <= 1.05, fmt.Sprintf("%s time within 5 %% of bare (median request): GET %.3f×, PUT %.3f× (limit 1.050×)", r.c.name, gr, pr)},
			goal{ga < fewest[opGET] && pa < fewest[opPUT],
				fmt.Sprintf("%s fewer allocations than every retrying peer: GET %d allocs/op vs %d (%s), PUT %d vs %d (%s)",
					r.c.name, ga, fewest[opGET], fewestName[opGET], pa, fewest[opPUT], fewestName[opPUT])},
			connGoal(r.c.name, r.srv.conns.Load(), bare.srv.conns.Load(), 1))
	}
	return goals
}

// send sends one request built by newReq to r's server through r's
// client, reads the response, and returns how long that took. A failure
// is kept in r.err.
func (r *overheadRun) send(newReq func(url string) *http.Request) (time.Duration, bool) {
	start := time.Now()
	resp, err := r.client.Do(newReq(r.srv.URL))
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return 0, false
	}
	return time.Since(start), true
}

// newGET returns a GET of url.
func newGET(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	return req
}

// pairRound runs one round of operation op, a pairBench of r against
// bare, and appends what it measured to both.
func pairRound(bare, r *overheadRun, op int, newReq func(url string) *http.Request) {
	pt := pairBench(bare, r, newReq)
	bare.ns[op] = append(bare.ns[op], pt.bareMean)
	bare.p50[op] = append(bare.p50[op], pt.bareP50)
	r.ns[op] = append(r.ns[op], pt.mean)
	r.p50[op] = append(r.p50[op], pt.p50)
	r.ratios[op] = append(r.ratios[op], pt.p50/pt.bareP50)
}

// pairTimes is what one paired run measured, in nanoseconds per request.
type pairTimes struct {
	bareMean, mean float64 // the bare transport's and the contender's mean
	bareP50, p50   float64 // their medians
}

// pairBench runs one testing.Benchmark whose iterations each send a
// request through bare and one through r, in alternating order, timing
// each request.
func pairBench(bare, r *overheadRun, newReq func(url string) *http.Request) pairTimes {
	res := testing.Benchmark(func(b *testing.B) {
		dBare := make([]time.Duration, 0, b.N)
		dR := make([]time.Duration, 0, b.N)
		for i := range b.N {
			first, second := bare, r
			if i%2 == 1 {
				first, second = r, bare
			}
			d1, ok1 := first.send(newReq)
			d2, ok2 := second.send(newReq)
			if !ok1 || !ok2 {
				return
			}
			if first != bare {
				d1, d2 = d2, d1
			}
			dBare, dR = append(dBare, d1), append(dR, d2)
		}
		b.ReportMetric(meanOf(dBare), "bare-ns/op")
		b.ReportMetric(meanOf(dR), "contender-ns/op")
		slices.Sort(dBare)
		slices.Sort(dR)
		b.ReportMetric(float64(quantile(dBare, 0.50)), "bare-p50-ns")
		b.ReportMetric(float64(quantile(dR, 0.50)), "contender-p50-ns")
	})
	return pairTimes{
		bareMean: res.Extra["bare-ns/op"], mean: res.Extra["contender-ns/op"],
		bareP50: res.Extra["bare-p50-ns"], p50: res.Extra["contender-p50-ns"],
	}
}

func meanOf(d []time.Duration) float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum) / float64(max(len(d), 1))
}

// soloBench runs one testing.Benchmark of r alone, for its allocations.
func (r *overheadRun) soloBench(newReq func(url string) *http.Request) testing.BenchmarkResult {
	return testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, ok := r.send(newReq); !ok {
				return
			}
		}
	})
}

// medianOf returns the median of xs, or NaN if xs is empty.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
