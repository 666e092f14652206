package retrytransport_test

// What a hedge costs: it pays the retry budget, gives it back when the
// rate limiter keeps it from being sent, and its throttles are heard by
// the adaptive limiter like any attempt's.

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// refusing is a retry quota that pays for nothing, and tells asked each
// time it refuses.
type refusing struct{ asked chan classify.Kind }

func (q refusing) Acquire(_ string, k classify.Kind) (int, time.Duration, bool) {
	q.asked <- k
	return 0, 0, false
}
func (refusing) Refund(string, int)   {}
func (refusing) Success(string)       {}
func (refusing) Level(string) float64 { return 0 }

func TestHedgesStopWhenTheBudgetIsEmpty(t *testing.T) {
	noLeaks(t)
	g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	srv := newFaultServer(t, g)
	budget := refusing{asked: make(chan classify.Kind, 1)}
	tr := newRig(t, nil, policy.Policy{Budget: budget, Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond))
	client := tr.client(t)
	done := make(chan string, 1)
	go func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- readBody(t, resp)
	}()
	g.wait(t)
	if k := <-budget.asked; k != classify.Timeout {
		t.Errorf("the hedge asked the budget for a retry after %v; want Timeout", k)
	}
	close(g.release)
	if body := <-done; body != "answer 1" {
		t.Errorf("got %q, want the attempt's own answer", body)
	}
	if s := tr.scopeStats(srv.host()); s.Hedges != 0 || g.n.Load() != 1 {
		t.Errorf("%d hedges, %d requests at the server; want none beside the attempt", s.Hedges, g.n.Load())
	}
}

// signalLimiter passes Reserve to a Limiter and closes second after the
// second call.
type signalLimiter struct {
	ratelimit.Limiter
	n      atomic.Int64
	second chan struct{}
}

func (l *signalLimiter) Reserve(scope string) (ratelimit.Reservation, time.Duration, bool) {
	r, w, ok := l.Limiter.Reserve(scope)
	if l.n.Add(1) == 2 {
		close(l.second)
	}
	return r, w, ok
}

// A hedge pays the Budget before the rate limiter is asked; when the
// limiter would make it wait, the hedge is not sent, and its cost goes
// back through Budget.Cancel (Refund is for retries that were sent), so
// the request's real retry is still granted.
func TestUnsentHedgeGivesBackItsBudget(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	lim := &signalLimiter{Limiter: &ratelimit.Fixed{Rate: 1, Now: clock.Now}, second: make(chan struct{})}
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			// The attempt answers once its hedge was asked for a send token
			// (and refused: the fixed rate's token is the attempt's).
			if !waitOr(lim.second, r) {
				return
			}
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "ok")
	}))
	p := policy.Policy{
		Budget:    &quota.Budget{Ratio: 1, MinPerSecond: -1, Now: clock.Now}, // one retry per request
		RateLimit: lim,
		Hedge:     &policy.Hedge{Delay: hedgeDelay},
	}
	tr := newRig(t, nil, p, onClock(clock), backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	resp, _ := getBody(t, client, srv.URL)
	s := tr.scopeStats(srv.host())
	if resp.StatusCode != 200 {
		var stop error
		if ev := tr.finalEvents(); len(ev) > 0 {
			stop = ev[len(ev)-1].Stop
		}
		t.Errorf("status %d after %d request(s) at the server, %d hedges sent, stop %v; want the retry the budget allows (1 per request) and 200: the unsent hedge spent it",
			resp.StatusCode, n.Load(), s.Hedges, stop)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge's 429 is recorded, by the adaptive limiter (its Recorder is told
// "after every attempt", and a hedge is one) and in the scope's Throttles
// counter, even when the attempt it raced then succeeds.
func TestLosingHedgesThrottleIsRecorded(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	srv, n := raceLostTo(t, http.StatusTooManyRequests, classified)
	p := policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(429, classified)}
	tr := newRig(t, nil, p, adaptiveOnRig(), backoffUnlessSet(everySecond))
	client := tr.client(t)
	getBody(t, client, srv.URL)
	s := tr.scopeStats(srv.host())
	if s.Hedges != 1 || n.Load() != 2 {
		t.Fatalf("%d hedges, %d requests at the server; want the race to have happened", s.Hedges, n.Load())
	}
	if s.Throttles != 1 || !s.Adaptive.Enabled {
		t.Errorf("after the hedge got a 429: Throttles = %d, adaptive limiter enabled = %v; want 1 and true (the limiter hears every attempt's outcome)", s.Throttles, s.Adaptive.Enabled)
	}
	srv.conns.expectAllClosed(t, client)
}
