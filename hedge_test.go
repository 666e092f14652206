package retrytransport_test

// Hedging: which requests are hedged, who wins a race and what the losers
// leave behind, and, under faults, copies that stall, fail, time out or are
// refused a send token, with failover and the budget, and where their
// outcomes, costs and events are recorded.

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// hedgeDelay is the hedge delay of these tests. The transport sleeps it on
// a fake clock that returns at once, so a hedge is due as soon as its
// attempt is sent; a server that holds the attempt decides who wins.
const hedgeDelay = 7 * time.Millisecond

// gate is a test server's handler that holds the requests it is told to
// until released or cancelled, and answers the others at once. It counts
// what arrived and what was cancelled while held.
type gate struct {
	hold      func(n int, r *http.Request) bool // whether request n (1-based) is held
	status    func(n int) int                   // its answer's status; nil: 200
	release   chan struct{}                     // closed: held requests answer
	arrived   chan int                          // each request's number, as it arrives
	n         atomic.Int64
	cancelled atomic.Int64
}

func newGate(hold func(int, *http.Request) bool) *gate {
	return &gate{hold: hold, release: make(chan struct{}), arrived: make(chan int, 100)}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	n := int(g.n.Add(1))
	g.arrived <- n
	if g.hold(n, r) {
		select {
		case <-g.release:
		case <-r.Context().Done():
			g.cancelled.Add(1)
			return
		}
	}
	status := 200
	if g.status != nil {
		status = g.status(n)
	}
	w.WriteHeader(status)
	io.WriteString(w, "answer "+string(rune('0'+n)))
}

// cancelledSoon fails t unless want held requests see their cancellation
// within leakBound.
func (g *gate) cancelledSoon(t *testing.T, want int64) {
	t.Helper()
	for end := time.Now().Add(leakBound); g.cancelled.Load() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("%d held requests saw their cancellation; want %d", g.cancelled.Load(), want)
			return
		}
	}
}

// wait returns the number of the next request to arrive, or fails t.
func (g *gate) wait(t *testing.T) int {
	t.Helper()
	select {
	case n := <-g.arrived:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the server")
		return 0
	}
}

// hedgeClient is hedgeClientOn with a fake clock of its own, started at
// the real time.
func hedgeClient(t *testing.T, p policy.Policy, sleep func(context.Context, time.Duration) error) (*http.Client, *retrytransport.Transport, *faketime.Clock, func() []retrytransport.Event) {
	t.Helper()
	clock := faketime.NewAt(time.Now())
	client, tr, finals := hedgeClientOn(t, p, clock, sleep)
	return client, tr, clock, finals
}

// hedgeClientOn is a client over the rig on clock, sleeping with sleep
// (nil: the clock's Sleep), with a Constant 1 s backoff unless p sets one,
// and the rig's final events.
func hedgeClientOn(t *testing.T, p policy.Policy, clock *faketime.Clock, sleep func(context.Context, time.Duration) error) (*http.Client, *retrytransport.Transport, func() []retrytransport.Event) {
	t.Helper()
	r := newRig(t, nil, p, onClock(clock), sleepingWith(sleep),
		backoffUnlessSet(backoff.Constant{Interval: time.Second}), recordFinals())
	return r.client(t), r.Transport, r.finalEvents
}

func statsOf(tr *retrytransport.Transport, scope string) retrytransport.ScopeStats {
	for _, s := range tr.Snapshot() {
		if s.Scope == scope {
			return s
		}
	}
	return retrytransport.ScopeStats{}
}

func TestHedgeWinsOverASlowAttempt(t *testing.T) {
	noLeaks(t)
	g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	srv := newFaultServer(t, g)
	client, tr, _, finals := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)

	resp, err := client.Get(srv.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); body != "answer 2" {
		t.Errorf("body %q, want the hedge's answer", body)
	}
	if resp.Request.URL.Path != "/slow" || resp.Request.Context() == nil {
		t.Errorf("resp.Request = %v; want the caller's", resp.Request.URL)
	}
	s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://"))
	if s.Attempts != 2 || s.Hedges != 1 || s.Retries != 0 {
		t.Errorf("stats %+v; want 2 attempts, 1 hedge, no retry", s)
	}
	if ev := finals(); len(ev) != 1 || ev[0].Hedges != 1 || ev[0].Attempt != 1 || ev[0].Stop != nil {
		t.Errorf("final events %+v; want one, of attempt 1 with 1 hedge", ev)
	}
	srv.conns.expectAllClosed(t, client)
	g.cancelledSoon(t, 1)
}

func TestHedgeNotSentWhenTheAttemptIsFast(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return false })
	srv := newFaultServer(t, g)
	// A sleep that waits for its context: the hedge is never due.
	never := func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }
	client, tr, _, _ := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: time.Hour}}, never)
	for range 5 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	if s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://")); s.Attempts != 5 || s.Hedges != 0 {
		t.Errorf("stats %+v; want 5 attempts and no hedge", s)
	}
}

func TestHedgeOnlySafeRequests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   func(url string) *http.Request
		hedge bool
	}{
		{"POST", func(u string) *http.Request { r, _ := http.NewRequest("POST", u, strings.NewReader("x")); return r }, false},
		{"PATCH", func(u string) *http.Request { r, _ := http.NewRequest("PATCH", u, nil); return r }, false},
		{"PUTWithoutGetBody", func(u string) *http.Request {
			r, _ := http.NewRequest("PUT", u, io.NopCloser(strings.NewReader("x")))
			return r
		}, false},
		{"PUT", func(u string) *http.Request { r, _ := http.NewRequest("PUT", u, strings.NewReader("x")); return r }, true},
		// A key makes a POST safe to send again, not twice at once: the
		// server answers a copy whose key is in flight with 409.
		{"POSTWithIdempotencyKey", func(u string) *http.Request {
			r, _ := http.NewRequest("POST", u, strings.NewReader("x"))
			r.Header.Set("Idempotency-Key", "k")
			return r
		}, false},
		{"DELETE", func(u string) *http.Request { r, _ := http.NewRequest("DELETE", u, nil); return r }, true},
		// An SDK that retries the request itself: a hedge would multiply
		// its attempts, as retries would (docs/sdk.md).
		{"GETFromTheAWSSDK", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("amz-sdk-request", "attempt=1; max=3")
			return r
		}, false},
		{"GETRetriedByAGoogleClient", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("x-goog-api-client", "gl-go/1.24 gccl-attempt-count/2")
			return r
		}, false},
		{"GETFromTheAWSSDKWithItsRetriesOff", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("amz-sdk-request", "attempt=1; max=1")
			return r
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
			srv := newFaultServer(t, g)
			// RetryNonIdempotent does not make a POST safe to hedge.
			client, tr, clock, _ := hedgeClient(t, policy.Policy{RetryNonIdempotent: true, Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)
			done := make(chan error, 1)
			go func() {
				resp, err := client.Do(tc.req(srv.URL))
				if err == nil {
					readBody(t, resp)
				}
				done <- err
			}()
			g.wait(t)
			if tc.hedge {
				g.wait(t) // the hedge arrives, and answers
			} else {
				close(g.release)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !tc.hedge {
				for _, d := range clock.Sleeps() {
					if d == hedgeDelay {
						t.Error("a hedge delay was slept for a request that may not be hedged")
					}
				}
			}
			if s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://")); (s.Hedges == 1) != tc.hedge {
				t.Errorf("%d hedges; want hedged %v", s.Hedges, tc.hedge)
			}
			if tc.hedge {
				close(g.release)
			}
		})
	}
}

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
	client, tr, _, _ := hedgeClient(t, policy.Policy{Budget: budget, Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)
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
	if s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://")); s.Hedges != 0 || g.n.Load() != 1 {
		t.Errorf("%d hedges, %d requests at the server; want none beside the attempt", s.Hedges, g.n.Load())
	}
}

func TestHedgeCallerCancels(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return true })
	srv := newFaultServer(t, g)
	client, _, _, _ := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: hedgeDelay, MaxHedges: 2}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for range 3 { // the attempt and its two hedges
		g.wait(t)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v; want context.Canceled", err)
	}
	srv.conns.expectAllClosed(t, client)
	if n := g.n.Load(); n != 3 {
		t.Errorf("the server got %d requests; want the attempt and 2 hedges", n)
	}
}

func TestHedgesAtMostMaxHedges(t *testing.T) {
	noLeaks(t)
	g := newGate(func(n int, _ *http.Request) bool { return n < 3 })
	srv := newFaultServer(t, g)
	client, tr, _, _ := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: hedgeDelay, MaxHedges: 2}}, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); body != "answer 3" {
		t.Errorf("body %q, want the second hedge's", body)
	}
	srv.conns.expectAllClosed(t, client)
	if s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://")); s.Hedges != 2 || g.n.Load() != 3 {
		t.Errorf("%d hedges, %d requests; want 2 and 3", s.Hedges, g.n.Load())
	}
}

// An attempt whose copies all fail is retried as usual.
func TestHedgedAttemptThatFailsIsRetried(t *testing.T) {
	noLeaks(t)
	second := make(chan struct{})
	g := newGate(func(n int, _ *http.Request) bool {
		if n == 1 {
			<-second // the attempt waits for its hedge, so that both fail
		}
		if n == 2 {
			close(second)
		}
		return false
	})
	g.status = func(n int) int {
		if n <= 2 {
			return 503
		}
		return 200
	}
	srv := newFaultServer(t, g)
	client, _, _, finals := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 200 || retrytransport.ResponseAttempts(resp).Count != 2 {
		t.Errorf("status %d after %d attempts; want 200 at the second", resp.StatusCode, retrytransport.ResponseAttempts(resp).Count)
	}
	if ev := finals(); len(ev) != 1 || ev[0].Attempt != 2 || ev[0].Hedges < 1 {
		t.Errorf("final events %+v; want attempt 2 with the first attempt's hedge counted", ev)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge goes where a retry would: to the secondary of a request that may
// fail over, which then races the primary.
func TestHedgeRacesFailover(t *testing.T) {
	noLeaks(t)
	pg := newGate(func(int, *http.Request) bool { return true })
	primary := newFaultServer(t, pg)
	sg := newGate(func(int, *http.Request) bool { return false })
	secondary := newFaultServer(t, sg)
	sh := strings.TrimPrefix(secondary.URL, "http://")
	client, tr, _, finals := hedgeClient(t, policy.Policy{Endpoints: []string{sh}, Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)

	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != sh || ev[0].Scope != sh || ev[0].Hedges != 1 {
		t.Errorf("final events %+v; want the secondary's answer, in its scope, after 1 hedge", ev)
	}
	if s := statsOf(tr, sh); s.Hedges != 1 || s.Attempts != 1 {
		t.Errorf("secondary stats %+v; want its one attempt, a hedge", s)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
	// The secondary may win before the primary's request even arrives;
	// one that arrived saw its cancellation.
	pg.cancelledSoon(t, pg.n.Load())

	// A write stays on the primary: its hedge too.
	pg2 := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	primary2 := newFaultServer(t, pg2)
	client2, _, _, _ := hedgeClient(t, policy.Policy{Endpoints: []string{sh}, Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)
	req, _ := http.NewRequest("PUT", primary2.URL, strings.NewReader("x"))
	resp, err = client2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if pg2.n.Load() != 2 || sg.n.Load() != 1 {
		t.Errorf("primary %d, secondary %d requests; want the PUT and its hedge on the primary", pg2.n.Load(), sg.n.Load())
	}
	primary2.conns.expectAllClosed(t, client2)
}

// A 404 from a secondary, which may lag the primary, does not win a race:
// the primary's answer does.
func TestHedgeNotFoundOnSecondaryDoesNotWin(t *testing.T) {
	noLeaks(t)
	got404 := make(chan struct{})
	pg := newGate(func(int, *http.Request) bool { <-got404; return false })
	primary := newFaultServer(t, pg)
	sg := newGate(func(int, *http.Request) bool { return false })
	sg.status = func(int) int { return 404 }
	secondary := newFaultServer(t, sg)
	sh := strings.TrimPrefix(secondary.URL, "http://")
	client, _, _, _ := hedgeClient(t, policy.Policy{Endpoints: []string{sh}, Hedge: policy.Hedge{Delay: hedgeDelay}}, nil)
	go func() { sg.wait(t); close(got404) }()
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Errorf("status %d; want the primary's 200", resp.StatusCode)
	}
}

// Nor does it when both copies fail: the primary's 503, which came first,
// is the attempt's result, not the secondary's later 404.
func TestHedgeNotFoundOnSecondaryDoesNotWinWhenBothFail(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !waitOr(hedgeIn, r) {
			return
		}
		w.WriteHeader(503)
	}))
	secondary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hedgeIn)
		if !waitOr(classified, r) { // after the primary's 503
			return
		}
		w.WriteHeader(404)
	}))
	p := policy.Policy{MaxAttempts: 1, Endpoints: []string{strings.TrimPrefix(secondary.URL, "http://")},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(503, classified)}
	client, _, _, finals := hedgeClient(t, p, nil)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 503 {
		t.Errorf("status %d; want the primary's 503: a secondary's 404 never wins over the primary", resp.StatusCode)
	}
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != strings.TrimPrefix(primary.URL, "http://") {
		t.Errorf("final events %+v; want one, naming the primary", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// Nor when the primary's copy is still out as the attempt times out: the
// secondary's 404 is no answer that came in time, and the caller gets the
// timeout.
func TestHedgeNotFoundOnSecondaryDoesNotWinAtTheTimeout(t *testing.T) {
	noLeaks(t)
	pg := newGate(func(int, *http.Request) bool { return true })
	primary := newFaultServer(t, pg)
	sg := newGate(func(int, *http.Request) bool { return false })
	sg.status = func(int) int { return 404 }
	secondary := newFaultServer(t, sg)
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond,
		Endpoints: []string{strings.TrimPrefix(secondary.URL, "http://")}, Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, _, _ := hedgeClient(t, p, nil)
	resp, err := client.Get(primary.URL)
	if err == nil {
		readBody(t, resp)
		t.Fatalf("status %d; want the attempt's timeout: the secondary's 404 does not win over the primary", resp.StatusCode)
	}
	if !errors.Is(err, retrytransport.ErrExhausted) || sg.n.Load() != 1 {
		t.Errorf("Get = %v after %d request(s) at the secondary; want the timeout of the one attempt, ErrExhausted, after its hedge", err, sg.n.Load())
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// With a Quantile, the delay is the fixed Delay until the scope has seen
// enough attempts, then the observed quantile.
func TestHedgeDelayFollowsTheQuantile(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return false })
	srv := newFaultServer(t, g)
	var mu sync.Mutex
	var delays []time.Duration
	record := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		<-ctx.Done() // never due: every attempt answers first
		return ctx.Err()
	}
	client, _, _, _ := hedgeClient(t, policy.Policy{Hedge: policy.Hedge{Delay: 5 * time.Millisecond, Quantile: 0.9}}, record)
	for range 30 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delays) != 30 {
		t.Fatalf("%d hedge delays; want one per attempt", len(delays))
	}
	for i, d := range delays {
		// The fake clock stands still: every attempt took no time, and the
		// quantile is the first bucket's top, 50µs.
		want := 50 * time.Microsecond
		if i < 20 {
			want = 5 * time.Millisecond
		}
		if d != want {
			t.Errorf("attempt %d's hedge delay = %v; want %v", i+1, d, want)
		}
	}
}

// callerBody is a request body that counts the reads made of it after
// the RoundTrip it was given to returned.
type callerBody struct {
	r         io.Reader
	returned  atomic.Bool
	lateReads atomic.Int64
}

func (b *callerBody) Read(p []byte) (int, error) {
	if b.returned.Load() {
		b.lateReads.Add(1)
	}
	return b.r.Read(p)
}

func (b *callerBody) Close() error { return nil }

// Every copy of a hedged attempt is a request of its own: a copy that
// loses may still be in the base transport after RoundTrip returned, when
// the caller may reuse its request (the RoundTripper contract), so no copy
// shares the caller's URL, header or body. Run with -race: the losing copy
// reads its header and URL while the caller changes its own.
func TestHedgeCopiesAreIndependentOfTheCallersRequest(t *testing.T) {
	noLeaks(t)
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	reused := make(chan struct{})  // the caller has changed its request
	loser := make(chan string, 1)  // what the losing copy saw of its request, after that
	firstIn := make(chan struct{}) // the first copy is in the base transport
	var n atomic.Int64
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if n.Add(1) > 1 {
			return inner.RoundTrip(r) // the hedge, which wins
		}
		close(firstIn)
		// The first copy is slow (an upload, say): still in the base
		// transport, as a real one may be, when RoundTrip has returned.
		<-r.Context().Done()
		_ = r.Header.Get("X-Step") + r.URL.Path // unsynchronised with the caller: -race sees a shared map
		<-reused
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		loser <- r.Header.Get("X-Step") + " " + r.URL.Path + " " + string(b)
		return nil, r.Context().Err()
	})
	clock := faketime.NewAt(time.Now())
	// The hedge is due once the first copy is in the base transport.
	sleep := func(ctx context.Context, d time.Duration) error {
		select {
		case <-firstIn:
		case <-ctx.Done():
		}
		return clock.Sleep(ctx, d)
	}
	tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Hedge: policy.Hedge{Delay: hedgeDelay}}),
		retrytransport.WithClock(clock.Now, sleep))

	body := &callerBody{r: strings.NewReader("payload")}
	req, err := http.NewRequest("PUT", srv.URL+"/first", body)
	if err != nil {
		t.Fatal(err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
	req.ContentLength = int64(len("payload"))
	req.Header.Set("X-Step", "1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	body.returned.Store(true)
	// The caller reuses its request at once.
	req.Header.Set("X-Step", "2")
	req.URL.Path = "/second"
	close(reused)
	if got, want := <-loser, "1 /first payload"; got != want {
		t.Errorf("the losing copy saw %q after the caller changed its request; want %q, as it was sent", got, want)
	}
	if k := body.lateReads.Load(); k != 0 {
		t.Errorf("the caller's body was read %d times after RoundTrip returned; want 0", k)
	}
}

// A MaxHedges that bypasses Validate is held to policy.HedgeLimit: the
// request is sent, not a race sized by the field.
func TestHedgeCountBeyondTheLimitIsBounded(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	srv := serve(t, s)
	p := policy.Policy{Hedge: policy.Hedge{Delay: time.Hour, MaxHedges: math.MaxInt}}
	never := func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() } // no hedge is due
	client, _, _, _ := hedgeClient(t, p, never)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 1 {
		t.Errorf("status %d after %d requests; want 200 after 1", resp.StatusCode, s.count())
	}
}

// onClassified is a Policy.Classify that classifies as classify.Standard
// does and closes ch once it has classified a response with status.
func onClassified(status int, ch chan struct{}) classify.Func {
	var once sync.Once
	return func(req *http.Request, resp *http.Response, err error) classify.Outcome {
		out := classify.Standard(req, resp, err)
		if resp != nil && resp.StatusCode == status {
			once.Do(func() { close(ch) })
		}
		return out
	}
}

// raceLostTo returns a fault server for a race that the first copy wins
// while the second's answer counts: it answers its first request 200 "ok"
// once classified is closed (the second copy's answer was classified), its
// second with status, its third and later with later[n-3], or 200 "ok"
// past the end of later; and it counts the requests.
func raceLostTo(t *testing.T, status int, classified chan struct{}, later ...int) (*faultServer, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch k := int(n.Add(1)); {
		case k == 1:
			if !waitOr(classified, r) {
				return
			}
			io.WriteString(w, "ok")
		case k == 2:
			w.WriteHeader(status)
		case k-3 < len(later):
			w.WriteHeader(later[k-3])
		default:
			io.WriteString(w, "ok")
		}
	}))
	return srv, &n
}

// waitOr waits for ch, or for the request's end, or gives up after
// leakBound (a limit on a bug, not a wait).
func waitOr(ch <-chan struct{}, r *http.Request) bool {
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		return false
	case <-time.After(leakBound):
		return false
	}
}

// A failed copy that waits for the others ("kept") is cancelled before
// its body is drained, so a failed response whose body stalls does not
// hold the winner back for ReadTimeout, past MaxTotalTime.
func TestHedgeStalledLoserDoesNotDelayTheWinner(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: a 500 whose body stalls after 10 of its 1000 bytes
			if !waitOr(hedgeIn, r) {
				return
			}
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(500)
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case 2: // the hedge: 200 once the attempt's 500 was classified
			close(hedgeIn)
			if !waitOr(classified, r) {
				return
			}
			io.WriteString(w, "ok")
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{
		Hedge:        policy.Hedge{Delay: hedgeDelay},
		MaxTotalTime: 300 * time.Millisecond,
		ReadTimeout:  3 * time.Second,
		Classify:     onClassified(500, classified),
	}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	start := time.Now()
	resp, err := client.Get(srv.URL)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if took > time.Second {
		t.Errorf("the hedge's 200 came back after %v with MaxTotalTime 300ms; the losing copy's stalled body was drained (ReadTimeout 3s) before its context was cancelled", took.Round(10*time.Millisecond))
	}
	srv.conns.expectAllClosed(t, client)
}

// The attempt timer of a hedged attempt keeps a response that arrived in
// time: the attempt's own 500 came back, its hedge was still running when
// the timer fired, and the caller gets the 500, as from a lone attempt.
func TestHedgeTimeoutKeepsAResponseThatArrivedInTime(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: 500 as soon as its hedge is sent
			if !waitOr(hedgeIn, r) {
				return
			}
			w.WriteHeader(500)
			io.WriteString(w, "attempt's answer")
		case 2: // the hedge: never answers
			close(hedgeIn)
			<-r.Context().Done()
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Errorf("Get = %v; want the attempt's 500, which arrived well within AttemptTimeout", err)
	} else {
		if resp.StatusCode != 500 {
			t.Errorf("status %d; want 500", resp.StatusCode)
		}
		readBody(t, resp)
	}
	srv.conns.expectAllClosed(t, client)
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
		Budget:    &ratelimit.Budget{Ratio: 1, MinPerSecond: -1, Now: clock.Now}, // one retry per request
		RateLimit: lim,
		Hedge:     policy.Hedge{Delay: hedgeDelay},
	}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://"))
	if resp.StatusCode != 200 {
		var stop error
		if ev := finals(); len(ev) > 0 {
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
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{Adaptive: true, Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(429, classified)}
	client, tr, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	s := statsOf(tr, strings.TrimPrefix(srv.URL, "http://"))
	if s.Hedges != 1 || n.Load() != 2 {
		t.Fatalf("%d hedges, %d requests at the server; want the race to have happened", s.Hedges, n.Load())
	}
	if s.Throttles != 1 || !s.Adaptive.Enabled {
		t.Errorf("after the hedge got a 429: Throttles = %d, adaptive limiter enabled = %v; want 1 and true (the limiter hears every attempt's outcome)", s.Throttles, s.Adaptive.Enabled)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge's outcome, from another endpoint, is recorded in that endpoint's
// scope: the secondary's 429 is the secondary's throttle, and enables its
// adaptive limiter, not the primary's.
func TestHedgeOutcomeRecordedInItsOwnScope(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !waitOr(hedgeIn, r) {
			return
		}
		w.WriteHeader(500)
	}))
	secondary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hedgeIn)
		if !waitOr(classified, r) { // the primary's 500 first, so that the 429 is the last failure
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	ph, sh := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(secondary.URL, "http://")
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, Adaptive: true, Endpoints: []string{sh},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d; want the secondary's 429, the last failure", resp.StatusCode)
	}
	if ev := finals(); len(ev) != 1 || ev[0].Scope != sh {
		t.Errorf("final events %+v; want one in the secondary's scope", ev)
	}
	ps, ss := statsOf(tr, ph), statsOf(tr, sh)
	if ps.Throttles != 0 || ps.Adaptive.Enabled {
		t.Errorf("primary: Throttles = %d, limiter enabled = %v; want 0 and false: it answered 500, never 429", ps.Throttles, ps.Adaptive.Enabled)
	}
	if ss.Throttles != 1 || !ss.Adaptive.Enabled {
		t.Errorf("secondary: Throttles = %d, limiter enabled = %v; want 1 and true: its 429 was the attempt's outcome", ss.Throttles, ss.Adaptive.Enabled)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// A hedge's failure at a secondary is remembered by the route: the retry
// goes to "the next endpoint in that order that the request has not yet
// seen fail" (docs/failover.md), not back to that secondary.
func TestRouteRemembersAFailedHedge(t *testing.T) {
	noLeaks(t)
	aIn := make(chan struct{})
	classified := make(chan struct{})
	var pn, an, bn atomic.Int64
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pn.Add(1) == 1 && !waitOr(aIn, r) {
			return
		}
		w.WriteHeader(500)
	}))
	a := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if an.Add(1) == 1 {
			close(aIn)
			if !waitOr(classified, r) {
				return
			}
		}
		w.WriteHeader(500)
	}))
	b := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bn.Add(1)
		io.WriteString(w, "ok")
	}))
	host := func(s *faultServer) string { return strings.TrimPrefix(s.URL, "http://") }
	clock := faketime.NewAt(time.Now())
	// Only the first attempt is hedged: later hedge delays never end.
	var hedgeDelays atomic.Int64
	sleep := func(ctx context.Context, d time.Duration) error {
		if d == hedgeDelay && hedgeDelays.Add(1) > 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return clock.Sleep(ctx, d)
	}
	p := policy.Policy{MaxAttempts: 2, Endpoints: []string{host(a), host(b)},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, _, finals := hedgeClientOn(t, p, clock, sleep)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	var endpoint string
	if ev := finals(); len(ev) == 1 {
		endpoint = ev[0].Endpoint
	}
	if an.Load() != 1 || bn.Load() != 1 {
		t.Errorf("the retry went to %s (P %d, A %d, B %d requests); want B: P and A had both failed the first attempt", endpoint, pn.Load(), an.Load(), bn.Load())
	}
	for _, s := range []*faultServer{primary, a, b} {
		s.conns.expectAllClosed(t, client)
	}
}

// When the last copy to answer fails with a transport error, the attempt's
// result is the response another copy got: with no attempts left, the
// caller gets it ("the last response, when there is one", README).
func TestHedgeResponseBeatsAnError(t *testing.T) {
	noLeaks(t)
	hedgeIn := make(chan struct{})
	classified := make(chan struct{})
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // the attempt: 500, once the hedge is out
			if !waitOr(hedgeIn, r) {
				return
			}
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(500)
		case 2: // the hedge: its connection reset after the 500 was classified
			close(hedgeIn)
			if !waitOr(classified, r) {
				return
			}
			resetConn(w, r)
		}
	}))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, _, _ := hedgeClientOn(t, p, clock, nil)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Errorf("Get = %v; want the attempt's 500 (with its Retry-After), the only response the attempt got", err)
	} else {
		if resp.StatusCode != 500 {
			t.Errorf("status %d; want 500", resp.StatusCode)
		}
		readBody(t, resp)
	}
	srv.conns.expectAllClosed(t, client)
}

// The latency quantile hears of attempts that ran into their
// AttemptTimeout: the copies the timer ends are censored at the time they
// took, so the hedge delay does not collapse to the fast answers'. Here 20
// attempts answered at once and 40 took over a (fake) second before their
// timer ended them: the 0.5 quantile is above a second.
func TestHedgeQuantileCountsTimedOutAttempts(t *testing.T) {
	noLeaks(t)
	clock := faketime.NewAt(time.Now())
	var slow atomic.Bool
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			clock.Advance(2 * time.Second) // this attempt takes 2 s of the transport's clock
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}))
	var mu sync.Mutex
	var delays []time.Duration
	never := func(ctx context.Context, d time.Duration) error { // hedge delays only: MaxAttempts 1
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 5 * time.Millisecond,
		Hedge: policy.Hedge{Delay: time.Millisecond, Quantile: 0.5}}
	client, _, _ := hedgeClientOn(t, p, clock, never)
	get := func() {
		resp, err := client.Get(srv.URL)
		if err == nil {
			readBody(t, resp)
		}
	}
	for range 20 {
		get()
	}
	slow.Store(true)
	for range 40 {
		get()
	}
	slow.Store(false)
	get()
	mu.Lock()
	last := delays[len(delays)-1]
	mu.Unlock()
	if last < time.Second {
		t.Errorf("hedge delay after 20 fast and 40 timed-out (2 s) attempts = %v; want the 0.5 quantile, above 1s", last)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedge of a retry that goes to another endpoint keeps what the
// WithBeforeRetry hook made of the retry's URL: only the host changes.
func TestHedgeOfARetryKeepsTheHooksURL(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var seen []string // endpoint letter and query of each request, as they arrive
	// Each attempt's first copy to arrive waits for the other, so that
	// both are sent and both fail.
	bothIn := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var n atomic.Int64
	record := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, name+"?"+r.URL.RawQuery)
			mu.Unlock()
			k := n.Add(1)
			if both := bothIn[(k-1)/2%2]; k%2 == 1 {
				waitOr(both, r)
			} else {
				close(both)
			}
			w.WriteHeader(503)
		}
	}
	primary := newFaultServer(t, record("P"))
	alt := newFaultServer(t, record("A"))
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 2, Endpoints: []string{strings.TrimPrefix(alt.URL, "http://")},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Backoff: backoff.Constant{Interval: time.Second}}
	tr := retrytransport.New(&http.Transport{}, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep),
		retrytransport.WithBeforeRetry(func(req *http.Request, _ retrytransport.Event) error {
			req.URL.RawQuery = "sig=retry"
			return nil
		}))
	client := &http.Client{Transport: tr}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get(primary.URL + "/x?sig=first")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	primary.conns.expectAllClosed(t, client)
	alt.conns.expectAllClosed(t, client)
	mu.Lock()
	defer mu.Unlock()
	retries := seen[2:]
	for _, s := range retries {
		if !strings.HasSuffix(s, "?sig=retry") {
			t.Errorf("the retry's copies arrived as %q; want each with the hook's query sig=retry", retries)
			break
		}
	}
	if len(retries) != 2 {
		t.Errorf("the retry's copies: %q; want the retry and its hedge", retries)
	}
}

// When a hedge to the primary wins for an attempt sent to a secondary, the
// final event names the primary, and its scope.
func TestHedgeToThePrimaryNamedInTheEvent(t *testing.T) {
	noLeaks(t)
	pg := newGate(func(int, *http.Request) bool { return false })
	primary := newFaultServer(t, pg)
	sg := newGate(func(int, *http.Request) bool { return true })
	secondary := newFaultServer(t, sg)
	ph, sh := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(secondary.URL, "http://")
	p := policy.Policy{Endpoints: []string{sh}, LocationMode: policy.SecondaryThenPrimary, Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, _, finals := hedgeClient(t, p, nil)
	resp, err := client.Get(primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph || ev[0].Hedges != 1 {
		t.Errorf("final events %+v; want the primary's answer, in its scope, after 1 hedge", ev)
	}
	primary.conns.expectAllClosed(t, client)
	secondary.conns.expectAllClosed(t, client)
}

// A hedged attempt whose copies all run into AttemptTimeout describes
// itself in its own endpoint's scope: not in that of the copy whose result
// the attempt before it took. Attempt 1 goes to the primary, its hedge to
// A, and both fail, A last; attempt 2 goes to B, its hedge to the primary,
// and neither answers in time.
func TestHedgedAttemptTimeoutIsInItsOwnScope(t *testing.T) {
	noLeaks(t)
	aIn := make(chan struct{})
	classified := make(chan struct{})
	var pn atomic.Int64
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pn.Add(1) == 1 && waitOr(aIn, r) {
			w.WriteHeader(500)
			return
		}
		<-r.Context().Done()
	}))
	a := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(aIn)
		if waitOr(classified, r) { // after the primary's 500, so that A's result is kept
			w.WriteHeader(503)
		}
	}))
	b := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	host := func(s *faultServer) string { return strings.TrimPrefix(s.URL, "http://") }
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 2, AttemptTimeout: 200 * time.Millisecond, Endpoints: []string{host(a), host(b)},
		Hedge: policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	client, tr, finals := hedgeClientOn(t, p, clock, nil)
	_, err := client.Get(primary.URL)
	if !errors.Is(err, retrytransport.ErrExhausted) {
		t.Fatalf("Get = %v; want the second attempt's timeout, ErrExhausted", err)
	}
	ev := finals()
	if len(ev) != 1 || ev[0].Attempt != 2 {
		t.Fatalf("final events %+v; want one, of attempt 2", ev)
	}
	if want := host(b); ev[0].Endpoint != want || ev[0].Scope != want || ev[0].Quota != statsOf(tr, want).Quota {
		t.Errorf("final event: Endpoint %s, Scope %s, Quota %v; want B's endpoint, scope and quota level (%s, %v)",
			ev[0].Endpoint, ev[0].Scope, ev[0].Quota, want, statsOf(tr, want).Quota)
	}
	for _, s := range []*faultServer{primary, a, b} {
		s.conns.expectAllClosed(t, client)
	}
}

// So does one whose hedge failed with a transport error before the timer
// ended the attempt's own copy: the attempt's timeout is the primary's,
// and its event names the primary, with its scope.
func TestHedgedAttemptTimeoutAfterAFailedHedgeIsInItsOwnScope(t *testing.T) {
	noLeaks(t)
	primary := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	a := newFaultServer(t, http.HandlerFunc(resetConn))
	ph, ah := strings.TrimPrefix(primary.URL, "http://"), strings.TrimPrefix(a.URL, "http://")
	clock := faketime.NewAt(time.Now())
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Endpoints: []string{ah},
		Hedge: policy.Hedge{Delay: hedgeDelay}}
	client, _, finals := hedgeClientOn(t, p, clock, nil)
	if _, err := client.Get(primary.URL); err == nil {
		t.Fatal("Get succeeded; want the attempt's timeout")
	}
	if ev := finals(); len(ev) != 1 || ev[0].Endpoint != ph || ev[0].Scope != ph {
		t.Errorf("final events %+v; want one naming the primary (%s), in its scope", ev, ph)
	}
	primary.conns.expectAllClosed(t, client)
	a.conns.expectAllClosed(t, client)
}
