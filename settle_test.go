package retrytransport_test

// Settling: every copy of a request that was sent is settled exactly
// once, whenever it ends. Its outcome is recorded or, when it ended
// without one (the caller gave up, or its race cancelled it), it is
// released, so that the limiter's count of attempts in flight returns to
// zero; and a losing hedge that answers after its race was decided is
// classified and settled all the same.

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"go.uber.org/goleak"
)

// tallyLimiter is a ratelimit.Adaptive on a fake clock that notes how each
// attempt it paced ended: "Record <kind>" (by Record, or by RecordQuota
// with the quota its response published) or "Release", and the quotas it
// was told.
type tallyLimiter struct {
	*ratelimit.Adaptive
	deadline time.Time     // waitEnds gives up then: a limit on a bug, not a wait
	ended    chan struct{} // a token for each end noted
	seen     int           // tokens taken by waitEnds

	mu     sync.Mutex
	ends   []string
	quotas []string // RecordQuota's calls: the kind and the remaining count, "throttle 7"
}

func newTallyLimiter(clock *faketime.Clock) *tallyLimiter {
	return &tallyLimiter{Adaptive: &ratelimit.Adaptive{Now: clock.Now}, deadline: time.Now().Add(leakBound), ended: make(chan struct{}, 100)}
}

func (l *tallyLimiter) Record(scope string, k classify.Kind) {
	l.Adaptive.Record(scope, k)
	l.note("Record " + k.String())
}

func (l *tallyLimiter) Release(scope string) {
	l.Adaptive.Release(scope)
	l.note("Release")
}

func (l *tallyLimiter) RecordQuota(scope string, k classify.Kind, remaining int64, reset time.Duration) {
	l.Adaptive.RecordQuota(scope, k, remaining, reset)
	l.mu.Lock()
	l.quotas = append(l.quotas, k.String()+" "+strconv.FormatInt(remaining, 10))
	l.mu.Unlock()
	l.note("Record " + k.String())
}

func (l *tallyLimiter) note(end string) {
	l.mu.Lock()
	l.ends = append(l.ends, end)
	l.mu.Unlock()
	l.ended <- struct{}{}
}

// waitEnds waits until n ends in all were noted, failing t if they were
// not by l's deadline.
func (l *tallyLimiter) waitEnds(t *testing.T, n int) {
	t.Helper()
	timeout := time.NewTimer(time.Until(l.deadline))
	defer timeout.Stop()
	for l.seen < n {
		select {
		case <-l.ended:
			l.seen++
		case <-timeout.C:
			ends := l.sortedEnds()
			t.Errorf("%d attempts ended (%v); want %d", len(ends), ends, n)
			return
		}
	}
}

// sortedEnds returns the ends noted, sorted.
func (l *tallyLimiter) sortedEnds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.ends))
}

// settleCaller is a request under a settling test: its context's cancel,
// closed returned once its RoundTrip returned, and the copies sent.
type settleCaller struct {
	cancel   context.CancelFunc
	returned chan struct{}
	copies   atomic.Int64
}

// waitDone waits for req's context to end, and returns its error, as a
// base transport's round trip does when its request is cancelled.
func waitDone(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// answerWith returns a response to req with status code and a short body.
func answerWith(req *http.Request, code int) *http.Response {
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("answer")), Request: req}
}

// TestEveryCopyIsSettledOnce: however a copy sent ends, the limiter hears
// of it exactly once, with its outcome or as released, and the count of
// its attempts in flight returns to zero, once every goroutine the
// request started has ended (hedges that lost may end after RoundTrip
// returned).
func TestEveryCopyIsSettledOnce(t *testing.T) {
	hedge := &policy.Hedge{Delay: hedgeDelay}
	tests := []struct {
		name string
		p    func(c *settleCaller) policy.Policy
		// answer answers copy n (1-based, in the order they reach the
		// base transport) of request req.
		answer   func(c *settleCaller, n int, req *http.Request) (*http.Response, error)
		requests int                                                                    // requests sent one after another; 0 means 1
		sleep    func(clock *faketime.Clock) func(context.Context, time.Duration) error // the rig's; nil: its clock's
		want     []string                                                               // the ends, sorted; nil: one timeout per copy sent
	}{{
		name: "success",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{MaxAttempts: 1} },
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) {
			return answerWith(req, 200), nil
		},
		want: []string{"Record success"},
	}, {
		name: "failure_retried",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{MaxAttempts: 2} },
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) {
			return answerWith(req, 500), nil
		},
		want: []string{"Record transient", "Record transient"},
	}, {
		name: "caller_cancels_before_headers",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{} },
		answer: func(c *settleCaller, _ int, req *http.Request) (*http.Response, error) {
			c.cancel()
			return nil, req.Context().Err()
		},
		want: []string{"Release"},
	}, {
		name: "caller_cancels_during_classify",
		p: func(c *settleCaller) policy.Policy {
			return policy.Policy{Classify: func(req *http.Request, resp *http.Response, err error) classify.Outcome {
				c.cancel()
				return classify.Default(req, resp, err)
			}}
		},
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) {
			return answerWith(req, 502), nil
		},
		want: []string{"Release"},
	}, {
		name: "attempt_timeout",
		p: func(*settleCaller) policy.Policy {
			return policy.Policy{MaxAttempts: 1, AttemptTimeout: 10 * time.Millisecond}
		},
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) { return waitDone(req) },
		want:   []string{"Record timeout"},
	}, {
		name: "hedge_loser_cancelled",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{MaxAttempts: 1, Hedge: hedge} },
		answer: func(_ *settleCaller, n int, req *http.Request) (*http.Response, error) {
			if n == 1 {
				return waitDone(req)
			}
			return answerWith(req, 200), nil
		},
		want: []string{"Record success", "Release"},
	}, {
		name: "hedge_loser_answers_late",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{MaxAttempts: 1, Hedge: hedge} },
		answer: func(c *settleCaller, n int, req *http.Request) (*http.Response, error) {
			if n == 1 {
				<-c.returned // the race was decided, and RoundTrip returned
				return answerWith(req, 503), nil
			}
			return answerWith(req, 200), nil
		},
		want: []string{"Record success", "Record transient"},
	}, {
		name: "hedge_caller_cancels",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{Hedge: hedge} },
		answer: func(c *settleCaller, n int, req *http.Request) (*http.Response, error) {
			if n == 2 {
				c.cancel()
			}
			return waitDone(req)
		},
		want: []string{"Release", "Release"},
	}, {
		name: "race_timeout",
		p: func(*settleCaller) policy.Policy {
			return policy.Policy{MaxAttempts: 1, AttemptTimeout: 50 * time.Millisecond, Hedge: hedge}
		},
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) { return waitDone(req) },
	}, {
		// The first request's 429 enables the limiter; the second's wait
		// for its send token outlasts MaxTotalTime, and it is not sent.
		name: "refused_after_pacing",
		p:    func(*settleCaller) policy.Policy { return policy.Policy{MaxAttempts: 1, MaxTotalTime: time.Second} },
		answer: func(_ *settleCaller, _ int, req *http.Request) (*http.Response, error) {
			return answerWith(req, 429), nil
		},
		requests: 2,
		sleep: func(clock *faketime.Clock) func(context.Context, time.Duration) error {
			return func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, d+2*time.Second) }
		},
		want: []string{"Record throttle"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			clock := faketime.NewAt(time.Now())
			lim := newTallyLimiter(clock)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &settleCaller{cancel: cancel, returned: make(chan struct{})}
			p := tt.p(c)
			p.Limiter = lim
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				return tt.answer(c, int(c.copies.Add(1)), req)
			})
			opts := []rigOption{onClock(clock), backoffUnlessSet(everySecond)}
			if tt.sleep != nil {
				opts = append(opts, sleepingWith(tt.sleep(clock)))
			}
			tr := newRig(t, base, p, opts...)
			for range max(tt.requests, 1) {
				resp, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx))
				if err == nil {
					resp.Body.Close()
				}
			}
			close(c.returned)
			want := tt.want
			if want == nil {
				for range c.copies.Load() {
					want = append(want, "Record timeout")
				}
			}
			lim.waitEnds(t, len(want))
			goleak.VerifyNone(t, before) // every copy's goroutine has ended: no end is still to come
			if diff := cmp.Diff(want, lim.sortedEnds()); diff != "" {
				t.Errorf("the limiter heard of %d copies sent (-want +got):\n%s", c.copies.Load(), diff)
			}
			if n := int64(len(lim.sortedEnds())); n != c.copies.Load() {
				t.Errorf("%d ends for %d copies sent; want one each", n, c.copies.Load())
			}
			if got := lim.State("api.example.com").Outstanding; got != 0 {
				t.Errorf("State.Outstanding = %d once the requests ended; want 0", got)
			}
		})
	}
}

// An attempt the caller gives up on in flight (an http.Client Timeout,
// say) is no longer in flight for the adaptive limiter: after five
// requests given up one at a time, the first throttle decreases from the
// cold-start rate of one attempt in flight, 10 req/s over the 100 ms
// floor of the first round trip, not from six, 60 req/s.
func TestAdaptiveColdStartAfterCallerCancels(t *testing.T) {
	clock := faketime.NewAt(time.Now())
	lim := &ratelimit.Adaptive{Now: clock.Now}
	var cancel context.CancelFunc
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if cancel != nil {
			cancel()
			return nil, req.Context().Err()
		}
		return answerWith(req, 429), nil
	})
	tr := newRig(t, base, policy.Policy{MaxAttempts: 1, Limiter: lim}, onClock(clock))
	for range 5 {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		if _, err := tr.RoundTrip(newReq(t, "GET", url, "").WithContext(ctx)); err == nil {
			t.Fatal("RoundTrip succeeded; want the caller's cancellation")
		}
	}
	cancel = nil
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := lim.State("api.example.com"); st.LastMax != 10 {
		t.Errorf("after 5 requests cancelled in flight, then a 429: State.LastMax = %v; want 10, from a concurrency of 1", st.LastMax)
	}
}

// The losing copies of hedged races are no longer in flight once their
// race is over: after six hedged requests one at a time, at most two
// copies at once, the first throttle decreases from the cold-start rate
// of a concurrency of at most 2, 20 req/s, not 7 or 8.
func TestAdaptiveColdStartAfterHedgedRequests(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	lim := newTallyLimiter(clock)
	var throttle atomic.Bool
	var n atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch {
		case throttle.Load():
			return answerWith(req, 429), nil
		case n.Add(1)%2 == 1: // the first copy to arrive loses
			return waitDone(req)
		}
		return answerWith(req, 200), nil
	})
	p := policy.Policy{MaxAttempts: 1, Limiter: lim, Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, base, p, onClock(clock))
	for i := range 6 {
		tr.get(t, url)
		lim.waitEnds(t, 2*(i+1)) // the winner's success and the loser's release
	}
	throttle.Store(true)
	tr.get(t, url)
	lim.waitEnds(t, 13)
	if st := lim.State("api.example.com"); st.LastMax > 20 {
		t.Errorf("after 6 hedged requests, then a 429: State.LastMax = %v; want at most 20, from a concurrency of at most 2", st.LastMax)
	}
}

// A losing copy that answers after its race was decided is classified and
// settled, in its own goroutine: its 429 is counted as a throttle and
// enables the adaptive limiter, and the quota its response publishes is
// recorded with it, in one call, as a copy's that answered in time would
// be.
func TestLateLosingCopyIsSettled(t *testing.T) {
	before := goleak.IgnoreCurrent()
	clock := faketime.NewAt(time.Now())
	lim := newTallyLimiter(clock)
	returned := make(chan struct{})
	var n atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if n.Add(1) == 1 {
			<-returned
			resp := answerWith(req, 429)
			resp.Header.Set("X-Ratelimit-Remaining", "7")
			resp.Header.Set("X-Ratelimit-Reset", "10")
			return resp, nil
		}
		return answerWith(req, 200), nil
	})
	p := policy.Policy{MaxAttempts: 1, Limiter: lim, Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, base, p, onClock(clock))
	tr.get(t, url)
	close(returned)
	lim.waitEnds(t, 2)
	goleak.VerifyNone(t, before) // the loser's goroutine, which settles it, has ended
	if diff := cmp.Diff([]string{"Record success", "Record throttle"}, lim.sortedEnds()); diff != "" {
		t.Errorf("the limiter heard (-want +got):\n%s", diff)
	}
	s := tr.scopeStats("api.example.com")
	if s.Throttles != 1 || !s.Adaptive.Enabled {
		t.Errorf("after a losing copy's late 429: Throttles = %d, limiter enabled = %v; want 1 and true", s.Throttles, s.Adaptive.Enabled)
	}
	lim.mu.Lock()
	quotas := lim.quotas
	lim.mu.Unlock()
	if diff := cmp.Diff([]string{"throttle 7"}, quotas); diff != "" {
		t.Errorf("published quotas recorded (-want +got):\n%s", diff)
	}
}
