package retrytransport_test

// Hedging: which requests are hedged, the race of an attempt's copies
// (who wins, what the losers leave behind: cancelled, drained, never
// holding the winner back), how many hedges, attempt timeouts, and copies
// that are requests of their own.

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

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
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

// onClassified is a Policy.Classify that classifies as classify.Default
// does and closes ch once it has classified a response with status.
func onClassified(status int, ch chan struct{}) classify.Func {
	var once sync.Once
	return func(req *http.Request, resp *http.Response, err error) classify.Outcome {
		out := classify.Default(req, resp, err)
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

// attemptAndHedge returns a fault server for a race of an attempt and its
// hedge: its first request, the attempt, is answered by attempt once the
// second, the hedge, has arrived; the hedge is answered by hedge once
// classified is closed (the attempt's answer was classified), or at once if
// classified is nil. A copy whose request ends first is not answered, nor
// is a third request or later.
func attemptAndHedge(t *testing.T, classified chan struct{}, attempt, hedge http.HandlerFunc) *faultServer {
	t.Helper()
	hedgeIn := make(chan struct{})
	var n atomic.Int64
	return newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			if !waitOr(hedgeIn, r) {
				return
			}
			attempt(w, r)
		case 2:
			close(hedgeIn)
			if classified != nil && !waitOr(classified, r) {
				return
			}
			hedge(w, r)
		}
	}))
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

func TestHedgeWinsOverASlowAttempt(t *testing.T) {
	noLeaks(t)
	g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
	srv := newFaultServer(t, g)
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)

	resp, body := getBody(t, client, srv.URL+"/slow")
	if body != "answer 2" {
		t.Errorf("body %q, want the hedge's answer", body)
	}
	if resp.Request.URL.Path != "/slow" || resp.Request.Context() == nil {
		t.Errorf("resp.Request = %v; want the caller's", resp.Request.URL)
	}
	s := tr.scopeStats(srv.host())
	if s.Attempts != 2 || s.Hedges != 1 || s.Retries != 0 {
		t.Errorf("stats %+v; want 2 attempts, 1 hedge, no retry", s)
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Hedges != 1 || ev[0].Attempt != 1 || ev[0].Stop != nil {
		t.Errorf("final events %+v; want one, of attempt 1 with 1 hedge", ev)
	}
	srv.conns.expectAllClosed(t, client)
	g.cancelledSoon(t, 1)
}

func TestHedgeOnlySafeRequests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req       func(url string) *http.Request
		hedge     bool
		ignoreSDK bool // Policy.IgnoreSDKAttempts
	}{
		{"POST", func(u string) *http.Request { r, _ := http.NewRequest("POST", u, strings.NewReader("x")); return r }, false, false},
		{"PATCH", func(u string) *http.Request { r, _ := http.NewRequest("PATCH", u, nil); return r }, false, false},
		{"PUTWithoutGetBody", func(u string) *http.Request {
			r, _ := http.NewRequest("PUT", u, io.NopCloser(strings.NewReader("x")))
			return r
		}, false, false},
		{"PUT", func(u string) *http.Request { r, _ := http.NewRequest("PUT", u, strings.NewReader("x")); return r }, true, false},
		// A key makes a POST safe to send again, not twice at once: the
		// server answers a copy whose key is in flight with 409.
		{"POSTWithIdempotencyKey", func(u string) *http.Request {
			r, _ := http.NewRequest("POST", u, strings.NewReader("x"))
			r.Header.Set("Idempotency-Key", "k")
			return r
		}, false, false},
		{"DELETE", func(u string) *http.Request { r, _ := http.NewRequest("DELETE", u, nil); return r }, true, false},
		// An SDK that retries the request itself: a hedge would multiply
		// its attempts, as retries would (docs/sdk.md).
		{"GETFromTheAWSSDK", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("amz-sdk-request", "attempt=1; max=3")
			return r
		}, false, false},
		{"GETRetriedByAGoogleClient", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("x-goog-api-client", "gl-go/1.24 gccl-attempt-count/2")
			return r
		}, false, false},
		{"GETFromTheAWSSDKWithItsRetriesOff", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("amz-sdk-request", "attempt=1; max=1")
			return r
		}, true, false},
		// A policy that ignores the SDK's marks hedges as for any GET.
		{"GETFromTheAWSSDKWithItsMarksIgnored", func(u string) *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			r.Header.Set("amz-sdk-request", "attempt=1; max=3")
			return r
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			g := newGate(func(n int, _ *http.Request) bool { return n == 1 })
			srv := newFaultServer(t, g)
			// RetryNonIdempotent does not make a POST safe to hedge.
			tr := newRig(t, nil, policy.Policy{RetryNonIdempotent: true, IgnoreSDKAttempts: tc.ignoreSDK, Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond))
			client := tr.client(t)
			release := sync.OnceFunc(func() { close(g.release) })
			defer release() // also when no hedge came: the held attempt ends
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
				release()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !tc.hedge {
				for _, d := range tr.clock.Sleeps() {
					if d == hedgeDelay {
						t.Error("a hedge delay was slept for a request that may not be hedged")
					}
				}
			}
			if s := tr.scopeStats(srv.host()); (s.Hedges == 1) != tc.hedge {
				t.Errorf("%d hedges; want hedged %v", s.Hedges, tc.hedge)
			}
			release()
		})
	}
}

func TestHedgeCallerCancels(t *testing.T) {
	noLeaks(t)
	g := newGate(func(int, *http.Request) bool { return true })
	srv := newFaultServer(t, g)
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay, MaxHedges: 2}}, backoffUnlessSet(everySecond))
	client := tr.client(t)
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
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay, MaxHedges: 2}}, backoffUnlessSet(everySecond))
	client := tr.client(t)
	_, body := getBody(t, client, srv.URL)
	if body != "answer 3" {
		t.Errorf("body %q, want the second hedge's", body)
	}
	srv.conns.expectAllClosed(t, client)
	if s := tr.scopeStats(srv.host()); s.Hedges != 2 || g.n.Load() != 3 {
		t.Errorf("%d hedges, %d requests; want 2 and 3", s.Hedges, g.n.Load())
	}
}

// A MaxHedges that bypasses Validate is held to policy.HedgeLimit: the
// request is sent, not a race sized by the field.
func TestHedgeCountBeyondTheLimitIsBounded(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	srv := serve(t, s)
	p := policy.Policy{Hedge: &policy.Hedge{Delay: time.Hour, MaxHedges: math.MaxInt}}
	never := func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() } // no hedge is due
	tr := newRig(t, nil, p, sleepingWith(never), backoffUnlessSet(everySecond))
	client := tr.client(t)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.count() != 1 {
		t.Errorf("status %d after %d requests; want 200 after 1", resp.StatusCode, s.count())
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
	tr := newRig(t, nil, policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay}}, backoffUnlessSet(everySecond), recordFinals())
	client := tr.client(t)
	resp, _ := getBody(t, client, srv.URL)
	if resp.StatusCode != 200 || retrytransport.ResponseAttempts(resp).Count != 2 {
		t.Errorf("status %d after %d attempts; want 200 at the second", resp.StatusCode, retrytransport.ResponseAttempts(resp).Count)
	}
	if ev := tr.finalEvents(); len(ev) != 1 || ev[0].Attempt != 2 || ev[0].Hedges < 1 {
		t.Errorf("final events %+v; want attempt 2 with the first attempt's hedge counted", ev)
	}
	srv.conns.expectAllClosed(t, client)
}

// A failed copy that waits for the others ("kept") is cancelled before
// its body is drained, so a failed response whose body stalls does not
// hold the winner back for ReadTimeout, past MaxTotalTime.
func TestHedgeStalledLoserDoesNotDelayTheWinner(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	srv := attemptAndHedge(t, classified,
		func(w http.ResponseWriter, r *http.Request) { // a 500 whose body stalls after 10 of its 1000 bytes
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(500)
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		},
		func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }) // 200 once the attempt's 500 was classified
	p := policy.Policy{
		Hedge:        &policy.Hedge{Delay: hedgeDelay},
		MaxTotalTime: 300 * time.Millisecond,
		ReadTimeout:  3 * time.Second,
		Classify:     onClassified(500, classified),
	}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond))
	client := tr.client(t)
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

// When the last copy to answer fails with a transport error, the attempt's
// result is the response another copy got: with no attempts left, the
// caller gets it ("the last response, when there is one", README).
func TestHedgeResponseBeatsAnError(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	srv := attemptAndHedge(t, classified,
		func(w http.ResponseWriter, _ *http.Request) { // 500, once the hedge is out
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(500)
		},
		resetConn) // the hedge's connection reset after the 500 was classified
	p := policy.Policy{MaxAttempts: 1, Hedge: &policy.Hedge{Delay: hedgeDelay}, Classify: onClassified(500, classified)}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond))
	client := tr.client(t)
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

// The attempt timer of a hedged attempt keeps a response that arrived in
// time: the attempt's own 500 came back, its hedge was still running when
// the timer fired, and the caller gets the 500, as from a lone attempt.
func TestHedgeTimeoutKeepsAResponseThatArrivedInTime(t *testing.T) {
	noLeaks(t)
	srv := attemptAndHedge(t, nil,
		func(w http.ResponseWriter, _ *http.Request) { // 500 as soon as its hedge is sent
			w.WriteHeader(500)
			io.WriteString(w, "attempt's answer")
		},
		func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }) // the hedge never answers
	p := policy.Policy{MaxAttempts: 1, AttemptTimeout: 200 * time.Millisecond, Hedge: &policy.Hedge{Delay: hedgeDelay}}
	tr := newRig(t, nil, p, backoffUnlessSet(everySecond))
	client := tr.client(t)
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
	tr := newRig(t, base, policy.Policy{Hedge: &policy.Hedge{Delay: hedgeDelay}}, onClock(clock), sleepingWith(sleep))

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

// A Hedge with neither a Delay nor a Quantile, which Validate rejects,
// hedges nothing, and the request goes as if the policy had none: its
// first attempt sends the caller's own body, where a request that may be
// hedged would send a fresh one from GetBody (see ownBody).
func TestHedgeThatCannotHedgeIsOff(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tr := newRig(t, s, policy.Policy{Hedge: &policy.Hedge{MaxHedges: 2}})
	req := newReq(t, "PUT", url, "the caller's body")
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("from GetBody")), nil }
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip(PUT): %v", err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{"the caller's body"}, s.received()); diff != "" {
		t.Errorf("bodies received mismatch (-want +got):\n%s", diff)
	}
	if st := tr.scopeStats("api.example.com"); st.Hedges != 0 {
		t.Errorf("Snapshot Hedges = %d; want 0", st.Hedges)
	}
}
