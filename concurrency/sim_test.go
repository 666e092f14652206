package concurrency_test

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// The issue's latency overload in virtual time: a server that serves 8
// requests at once for 10 ms each (800 req/s) and queues the rest, first
// come first served, without bound; open-loop Poisson arrivals whose
// clients give up after 1 s, when the server, which cannot tell, still
// serves them (the work wasted). Each arrival asks the limiter for a place
// and is dropped when refused: a refused request is not sent again.

const ms = time.Millisecond

// simServer is the server: Workers at once, each request taking Service
// (or, when Exp is set, an exponentially distributed time of that mean).
type simServer struct {
	Workers int
	Service time.Duration
	Exp     bool
}

// simLoad is one run: Offer arrivals per second for Duration against
// Server, the clients giving up after Timeout.
type simLoad struct {
	Server   simServer
	Offer    float64
	Duration time.Duration
	Timeout  time.Duration
	Seed     uint64

	// Slower, from At on, makes the server's service time this instead.
	Slower   time.Duration
	SlowerAt time.Duration
}

// simResult is what a run measured.
type simResult struct {
	arrived, refused, succeeded, timedOut int
	latencies                             []time.Duration // of the successes
	sentAt                                []time.Duration // when each success was sent
	work, wasted                          time.Duration   // service time spent, and spent on requests whose client had left
	limits                                []int           // the scope's limit at each arrival (nil without a limiter)
}

// goodput returns the successes per second as a share of the capacity.
func (r simResult) goodput(l simLoad) float64 {
	capacity := float64(l.Server.Workers) / l.Server.Service.Seconds() * l.Duration.Seconds()
	return float64(r.succeeded) / capacity
}

// between returns the latencies of the successes sent in [from, to).
func (r simResult) between(from, to time.Duration) []time.Duration {
	var d []time.Duration
	for i, at := range r.sentAt {
		if at >= from && at < to {
			d = append(d, r.latencies[i])
		}
	}
	return d
}

// p99 returns the 99th percentile of the successes' latencies.
func (r simResult) p99() time.Duration { return percentile(r.latencies, 0.99) }

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// wastedShare returns the share of the server's work done for clients
// that had left.
func (r simResult) wastedShare() float64 {
	if r.work == 0 {
		return 0
	}
	return float64(r.wasted) / float64(r.work)
}

const (
	evArrive = iota
	evComplete
	evGiveUp
)

type simEvent struct {
	at   time.Duration
	seq  int
	kind int
	req  *simRequest
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simRequest struct {
	sent     time.Duration
	service  time.Duration
	permit   concurrency.Permit
	left     bool // the client gave up
	answered bool
}

// simulate runs l with lim (nil for a bare client) deciding each arrival
// in scope "api".
func simulate(l simLoad, lim concurrency.Limiter, state func() concurrency.State) simResult {
	rnd := rand.New(rand.NewPCG(l.Seed, 34))
	var (
		res     simResult
		q       simQueue
		seq     int
		busy    int
		waiting []*simRequest
	)
	push := func(at time.Duration, kind int, r *simRequest) {
		seq++
		heap.Push(&q, simEvent{at: at, seq: seq, kind: kind, req: r})
	}
	serviceAt := func(now time.Duration) time.Duration {
		s := l.Server.Service
		if l.Slower > 0 && now >= l.SlowerAt {
			s = l.Slower
		}
		if l.Server.Exp {
			s = time.Duration(rnd.ExpFloat64() * float64(s))
		}
		return s
	}
	start := func(now time.Duration, r *simRequest) {
		busy++
		r.service = serviceAt(now)
		push(now+r.service, evComplete, r)
	}
	nextArrival := func(now time.Duration) time.Duration {
		return now + time.Duration(rnd.ExpFloat64()/l.Offer*float64(time.Second))
	}
	ctx := context.Background()
	push(nextArrival(0), evArrive, nil)
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		now := e.at
		switch e.kind {
		case evArrive:
			if now >= l.Duration {
				continue // no more arrivals; what was sent finishes
			}
			push(nextArrival(now), evArrive, nil)
			res.arrived++
			r := &simRequest{sent: now}
			if lim != nil {
				p, err := lim.Acquire(ctx, "api")
				if state != nil {
					res.limits = append(res.limits, state().Limit)
				}
				if err != nil {
					res.refused++
					continue
				}
				r.permit = p
			}
			push(now+l.Timeout, evGiveUp, r)
			if busy < l.Server.Workers {
				start(now, r)
			} else {
				waiting = append(waiting, r)
			}
		case evComplete:
			r := e.req
			busy--
			res.work += r.service
			if r.left {
				res.wasted += r.service
			} else {
				r.answered = true
				res.succeeded++
				res.latencies = append(res.latencies, now-r.sent)
				res.sentAt = append(res.sentAt, r.sent)
				r.permit.Done(now-r.sent, classify.Success)
			}
			if len(waiting) > 0 {
				next := waiting[0]
				waiting = waiting[1:]
				start(now, next)
			}
		case evGiveUp:
			r := e.req
			if r.answered {
				continue
			}
			r.left = true
			res.timedOut++
			r.permit.Done(l.Timeout, classify.Timeout)
		}
	}
	return res
}

// issueServer is the issue's server: 8 at once, 10 ms each, 800 req/s.
var issueServer = simServer{Workers: 8, Service: 10 * ms}

// TestSimLatencyOverloadKeepsGoodputAndLatency runs the issue's server
// offered 0.5, 1.2, 2 and 4 times its capacity for 20 s on 5 seeds, an
// Adaptive with its defaults in front: under overload the successes are at
// least 97 % of the capacity, their p99 at most 40 ms and the work wasted
// on clients that left at most 1 %; at half the capacity nothing is
// refused and the p99 is within 5 % of a bare client's.
func TestSimLatencyOverloadKeepsGoodputAndLatency(t *testing.T) {
	for _, x := range []float64{0.5, 1.2, 2, 4} {
		for seed := range uint64(5) {
			l := simLoad{Server: issueServer, Offer: x * 800, Duration: 20 * time.Second, Timeout: time.Second, Seed: seed}
			a := &concurrency.Adaptive{}
			r := simulate(l, a, func() concurrency.State { return a.State("api") })
			t.Logf("%.1fx seed %d: goodput %.1f %%, p99 %v, wasted %.2f %%, refused %.1f %%, limit median %d p99 %d",
				x, seed, 100*r.goodput(l), r.p99(), 100*r.wastedShare(),
				100*float64(r.refused)/float64(r.arrived), medianInt(r.limits), percentileInt(r.limits, 0.99))
			if x < 1 || seed == 0 {
				bare := simulate(l, nil, nil)
				t.Logf("%.1fx seed %d bare: goodput %.1f %%, p99 %v, wasted %.1f %%", x, seed, 100*bare.goodput(l), bare.p99(), 100*bare.wastedShare())
				if x < 1 {
					if got, bp := r.p99(), bare.p99(); float64(got) > 1.05*float64(bp) {
						t.Errorf("%.1fx seed %d: p99 = %v; want within 5 %% of bare %v", x, seed, got, bp)
					}
				}
			}
			if x < 1 {
				if r.refused != 0 {
					t.Errorf("%.1fx seed %d: %d of %d refused; want none", x, seed, r.refused, r.arrived)
				}
				continue
			}
			if g := r.goodput(l); g < 0.97 {
				t.Errorf("%.1fx seed %d: goodput = %.1f %% of capacity; want >= 97 %%", x, seed, 100*g)
			}
			if p := r.p99(); p > 40*ms {
				t.Errorf("%.1fx seed %d: p99 = %v; want <= 40ms", x, seed, p)
			}
			if w := r.wastedShare(); w > 0.01 {
				t.Errorf("%.1fx seed %d: wasted = %.2f %% of the work; want <= 1 %%", x, seed, 100*w)
			}
		}
	}
}

func medianInt(v []int) int { return percentileInt(v, 0.5) }

func percentileInt(v []int, q float64) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// TestSimWorkedSequence: the first rounds at twice the issue server's
// capacity are those the worked sequence on Adaptive shows: the first
// round's own queue probed away, slow start, a fall to the server's
// concurrency plus a small queue, and the climb by √L.
func TestSimWorkedSequence(t *testing.T) {
	l := simLoad{Server: issueServer, Offer: 1600, Duration: 400 * time.Millisecond, Timeout: time.Second}
	a := &concurrency.Adaptive{}
	var limits []int
	var first time.Duration
	simulate(l, a, func() concurrency.State {
		s := a.State("api")
		if len(limits) == 0 || s.Limit != limits[len(limits)-1] {
			limits = append(limits, s.Limit)
		}
		if first == 0 {
			first = s.Latency
		}
		return s
	})
	want := []int{20, 5, 2, 13, 27, 13, 17, 21, 10, 14}
	if len(limits) < len(want) || !slices.Equal(limits[:len(want)], want) {
		t.Errorf("limits = %v; want them to start %v", limits, want)
	}
	if first.Round(100*time.Microsecond) != 14800*time.Microsecond {
		t.Errorf("first round's mean latency = %v; want 14.8ms", first)
	}
}

// TestSimNoLoadLatencyFollowsServer: the server's service time doubles
// (its capacity halves) or halves halfway through 20 s of overload; over
// the last 5 s the no-load latency learned is the new service time, the
// successes are at least 95 % of the new capacity and their p99 at most 4
// times the new service time.
func TestSimNoLoadLatencyFollowsServer(t *testing.T) {
	tests := []struct {
		name          string
		before, after time.Duration
	}{
		{"slower", 10 * ms, 20 * ms},
		{"faster", 20 * ms, 10 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := simLoad{
				Server: simServer{Workers: 8, Service: tt.before}, Offer: 1600, Duration: 20 * time.Second,
				Timeout: time.Second, Slower: tt.after, SlowerAt: 10 * time.Second,
			}
			a := &concurrency.Adaptive{}
			r := simulate(l, a, nil)
			last := r.between(15*time.Second, 20*time.Second)
			capacity := 8 / tt.after.Seconds()
			rate, p99, minLat := float64(len(last))/5, percentile(last, 0.99), a.State("api").MinLatency
			t.Logf("%s: last 5 s %.0f/s of %.0f, p99 %v, no-load latency %v", tt.name, rate, capacity, p99, minLat)
			if rate < 0.95*capacity {
				t.Errorf("successes = %.0f/s; want >= 95 %% of %.0f", rate, capacity)
			}
			if p99 > 4*tt.after {
				t.Errorf("p99 = %v; want <= %v", p99, 4*tt.after)
			}
			if minLat < tt.after*9/10 || minLat > tt.after*21/20 {
				t.Errorf("MinLatency = %v; want within -10 %% and +5 %% of %v", minLat, tt.after)
			}
		})
	}
}
