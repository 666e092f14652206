package retrytransport_test

// Policy.Penalty: the signals that start a penalty (codes, statuses, a
// final attempt, a losing hedge), the scope that pays it, and its period
// under late signals, clocks that step back and values that would overflow.

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
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
)

// retryWaits returns the sleeps of clock that are not hedge delays.
func retryWaits(clock *faketime.Clock) []time.Duration {
	var waits []time.Duration
	for _, d := range clock.Sleeps() {
		if d != hedgeDelay {
			waits = append(waits, d)
		}
	}
	return waits
}

// A response that signals the penalty starts it though it is not retried:
// here a Fatal 400 with the ServerBusy code. The next request's retry to
// the scope pays the penalty.
func TestPenaltyStartedByAResponseThatIsNotRetried(t *testing.T) {
	noLeaks(t)
	var n atomic.Int64
	srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"code":"ServerBusy"}`)
		case 2:
			w.WriteHeader(500)
		default:
			io.WriteString(w, "ok")
		}
	}))
	p := policy.Policy{
		Backoff: backoff.Constant{Interval: time.Second},
		Penalty: &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Hour},
	}
	tr := newRig(t, nil, p)
	client := tr.client(t)
	for _, want := range []int{400, 200} {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		if resp.StatusCode != want {
			t.Fatalf("status %d; want %d", resp.StatusCode, want)
		}
	}
	if got := retryWaits(tr.clock); !equalDurations(got, []time.Duration{11 * time.Second}) {
		t.Errorf("the second request's retry waited %v; want [11s]: 1 s + the 10 s penalty that the first request's ServerBusy (400, not retried) started", got)
	}
	srv.conns.expectAllClosed(t, client)
}

// A hedged copy that loses starts the penalty as well when its response
// signals it: the server said it was busy, whichever copy won.
func TestPenaltyStartedByALosingHedge(t *testing.T) {
	noLeaks(t)
	classified := make(chan struct{})
	// One copy gets 200 once the other's 503 was classified; then the
	// POST, which is not hedged, gets a 500.
	srv, _ := raceLostTo(t, 503, classified, 500)
	p := policy.Policy{
		RetryNonIdempotent: true,
		Backoff:            backoff.Constant{Interval: time.Second},
		Hedge:              &policy.Hedge{Delay: hedgeDelay},
		Classify:           onClassified(503, classified),
		Penalty:            &policy.Penalty{Statuses: []int{503}, Delay: 10 * time.Second, For: time.Hour},
	}
	tr := newRig(t, nil, p)
	client := tr.client(t)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("GET status %d; want the winning copy's 200", resp.StatusCode)
	}
	resp, err = client.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if got := retryWaits(tr.clock); !equalDurations(got, []time.Duration{11 * time.Second}) {
		t.Errorf("the POST's retry waited %v; want [11s]: 1 s + the 10 s penalty that the losing copy's 503 started", got)
	}
	srv.conns.expectAllClosed(t, client)
}

// So does a losing copy that answers after its race was decided and the
// request returned: it is settled in its own goroutine, and the penalty
// its 503 starts holds back the next request's retry.
func TestPenaltyStartedByALosingHedgeThatAnswersLate(t *testing.T) {
	noLeaks(t)
	returned := make(chan struct{})
	loserBody := &closeSignal{Reader: strings.NewReader("busy"), done: make(chan struct{})}
	var gets, posts atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		code := 200
		var body io.ReadCloser = io.NopCloser(strings.NewReader("ok"))
		switch {
		case req.Method == "POST":
			if posts.Add(1) == 1 {
				code = 500
			}
		case gets.Add(1) == 1: // the copy that loses, and answers once the GET returned
			<-returned
			code, body = 503, loserBody
		}
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: body, Request: req}, nil
	})
	p := policy.Policy{
		RetryNonIdempotent: true,
		Backoff:            backoff.Constant{Interval: time.Second},
		Hedge:              &policy.Hedge{Delay: hedgeDelay},
		Penalty:            &policy.Penalty{Statuses: []int{503}, Delay: 10 * time.Second, For: time.Hour},
	}
	tr := newRig(t, base, p)
	if resp := tr.get(t, url); resp.StatusCode != 200 {
		t.Fatalf("GET status %d; want the winning copy's 200", resp.StatusCode)
	}
	close(returned)
	select {
	case <-loserBody.done: // settled, then drained and closed
	case <-time.After(leakBound):
		t.Fatal("the losing copy's 503 was never closed")
	}
	resp, err := tr.RoundTrip(newReq(t, "POST", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := retryWaits(tr.clock); !equalDurations(got, []time.Duration{11 * time.Second}) {
		t.Errorf("the POST's retry waited %v; want [11s]: 1 s + the 10 s penalty that the losing copy's late 503 started", got)
	}
}

func TestPenaltyAppliedAndReset(t *testing.T) {
	json := h("Content-Type", "application/json")
	srv := serve(t, &script{steps: []step{
		{status: 503, header: json, body: `{"code":"ServerBusy","message":"the server is busy"}`},
		{status: 503, header: json},
	}})
	p := policy.Policy{
		MaxAttempts: 5,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 15 * time.Second},
	}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The signal at 0 s penalises the scope until 15 s: the retries after
	// it (at 0 s and 11 s) wait 1 + 10 s; those at 22 s and 23 s, 1 s.
	want := []time.Duration{11 * time.Second, 11 * time.Second, time.Second, time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v", got, want)
	}
}

// The penalty is the scope's: a new request to the penalised scope pays
// it from its first retry, and another scope does not.
func TestPenaltyIsPerScope(t *testing.T) {
	busy := serve(t, &script{steps: []step{{status: 503, body: `<Error><Code>ServerBusy</Code></Error>`}}})
	plain := serve(t, &script{steps: []step{{status: 503}}})
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Minute},
	}
	tr := newRig(t, nil, p, recordEvents())
	for _, u := range []string{busy.URL, plain.URL, busy.URL} {
		resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []time.Duration{11 * time.Second, time.Second, 11 * time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v: the busy scope penalised, the other not", got, want)
	}
}

// A status starts a penalty too, and a penalty's Delay is added to a
// server's Retry-After.
func TestPenaltyByStatus(t *testing.T) {
	srv := serve(t, &script{steps: []step{{status: 503, header: retryAfter(2)}}})
	p := policy.Policy{MaxAttempts: 2, Penalty: &policy.Penalty{Statuses: []int{503}, Delay: 5 * time.Second}}
	tr := newRig(t, nil, p, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := tr.clock.Sleeps(); !equalDurations(got, []time.Duration{7 * time.Second}) {
		t.Errorf("sleeps %v; want [7s]: Retry-After 2 s and the penalty's 5 s", got)
	}
}

// A body that stalls while its code is read for a penalty does not hold
// the request: the read is bounded by ReadTimeout, as classification's is.
func TestPenaltyCodeReadIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(503)
		io.WriteString(w, `{"message":"`)
		w.(http.Flusher).Flush()
		<-release
	}))
	t.Cleanup(srv.Close)
	p := policy.Policy{
		MaxAttempts: 2,
		ReadTimeout: 50 * time.Millisecond,
		Classify: func(*http.Request, *http.Response, error) classify.Outcome {
			return classify.Outcome{Kind: classify.Transient, Reason: "always"}
		},
		Penalty: &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second},
	}
	tr := newRig(t, nil, p, recordEvents())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(leakBound):
		t.Fatal("the request is held by a stalled body")
	}
	if n.Load() != 2 {
		t.Errorf("%d attempts; want 2", n.Load())
	}
}

// With failover, the penalty is that of the scope a retry goes to: "every
// request to that scope pays it on its retries until the period ends"
// (README), and a retry to an endpoint that is not busy does not.
func TestPenaltyFollowsTheScopeARetryGoesTo(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == "primary.test" {
			return step{status: 503, body: `{"code":"ServerBusy"}`}.response(r), nil
		}
		return step{status: 500}.response(r), nil
	})
	p := policy.Policy{
		MaxAttempts: 3,
		Failover:    &policy.Failover{Endpoints: []string{"secondary.test"}},
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Hour},
	}
	tr := newRig(t, base, p, recordEvents())
	tr.get(t, "http://primary.test/")
	// Attempt 1 on the primary: ServerBusy, the primary is penalised for an
	// hour; retry 1 goes to the secondary, not busy, and waits 1 s. Attempt
	// 2 on the secondary: a plain 500; retry 2 goes back to the penalised
	// primary and waits 1 + 10 s.
	want := []time.Duration{time.Second, 11 * time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v: retry 2 goes to the primary, penalised until an hour after its ServerBusy", got, want)
	}
}

// Two signals in one scope, the later one noted first: the earlier one,
// whose code took longer to read, must not move the period's end back.
func TestPenaltyPeriodNotShortenedByALateSignal(t *testing.T) {
	slowR, slowW := io.Pipe()
	reading := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := map[string]int{}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		who := r.Header.Get("X-Who")
		mu.Lock()
		calls[who]++
		n := calls[who]
		mu.Unlock()
		if n > 1 {
			return step{status: 200, body: "ok"}.response(r), nil
		}
		switch who {
		case "A": // its error code arrives late
			resp := step{status: 503}.response(r)
			resp.Body = readNotify{r: slowR, c: slowR, first: func() { once.Do(func() { close(reading) }) }}
			return resp, nil
		case "B":
			return step{status: 503, body: `{"code":"ServerBusy"}`}.response(r), nil
		}
		return step{status: 500}.response(r), nil // C: no signal
	})
	p := policy.Policy{
		MaxAttempts: 2,
		ReadTimeout: time.Minute, // a bound on a bug; the test releases the body
		Backoff:     backoff.Constant{Interval: time.Second},
		// A classifier that does not read the body, so the penalty's read is the first.
		Classify: func(*http.Request, *http.Response, error) classify.Outcome {
			return classify.Outcome{Kind: classify.Transient, Reason: "body unread"}
		},
		Penalty: &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: time.Second, For: 100 * time.Second},
	}
	tr := newRig(t, base, p, recordEvents())
	t0 := tr.clock.Now()
	send := func(who string) {
		req := newReq(t, "GET", "http://busy.test/", "")
		req.Header.Set("X-Who", who)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Errorf("RoundTrip(%s): %v", who, err)
			return
		}
		resp.Body.Close()
	}
	aDone := make(chan struct{})
	go func() { defer close(aDone); send("A") }() // A's signal: t0, read late
	<-reading
	tr.clock.Advance(5 * time.Second)
	send("B") // B's signal: t0+5s, so the period runs to t0+105s
	io.WriteString(slowW, `{"code":"ServerBusy"}`)
	slowW.Close()
	<-aDone
	// At t0+102s the period of B's signal has not ended.
	tr.clock.Advance(t0.Add(102 * time.Second).Sub(tr.clock.Now()))
	before := len(tr.clock.Sleeps())
	send("C")
	got := tr.clock.Sleeps()[before:]
	if !equalDurations(got, []time.Duration{2 * time.Second}) {
		t.Errorf("C's sleeps %v at t0+102s; want [2s] (1 s + the 1 s penalty): the last signal, at t0+5s, penalises the scope until t0+105s", got)
	}
}

// readNotify is a body that calls first on its first Read.
type readNotify struct {
	r     io.Reader
	c     io.Closer
	first func()
}

func (b readNotify) Read(p []byte) (int, error) { b.first(); return b.r.Read(p) }

func (b readNotify) Close() error { return b.c.Close() }

// A clock without a monotonic reading that steps back an hour must not
// make a 10 s penalty last an hour longer: a clock read before the period
// began ends it.
func TestPenaltyClockBackwardsDoesNotProlongThePeriod(t *testing.T) {
	base := &script{answer: func(k int, _ *http.Request) step {
		switch k {
		case 1:
			return step{status: 503, body: `{"code":"ServerBusy"}`}
		case 3:
			return step{status: 503}
		}
		return step{status: 200, body: "ok"}
	}}
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: 10 * time.Second},
	}
	tr := newRig(t, base, p, recordEvents())
	tr.get(t, "http://busy.test/") // signal; retry waits 11 s
	tr.clock.Advance(-time.Hour)
	tr.clock.Advance(time.Minute) // a minute of forward time since
	before := len(tr.clock.Sleeps())
	tr.get(t, "http://busy.test/")
	if got := tr.clock.Sleeps()[before:]; !equalDurations(got, []time.Duration{time.Second}) {
		t.Errorf("sleeps %v a minute after a 10 s penalty began (clock stepped back 1h); want [1s]", got)
	}
}

// A Penalty.For long enough to mean "for good" must not overflow the
// period's end into the past.
func TestPenaltyLongForDoesNotOverflow(t *testing.T) {
	base := &script{answer: func(k int, _ *http.Request) step {
		switch k {
		case 1:
			return step{status: 503} // signals
		case 3:
			return step{status: 500} // no signal
		}
		return step{status: 200, body: "ok"}
	}}
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Statuses: []int{503}, Delay: 10 * time.Second, For: math.MaxInt64},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tr := newRig(t, base, p, recordEvents())
	tr.get(t, "http://busy.test/")
	tr.get(t, "http://busy.test/")
	want := []time.Duration{11 * time.Second, 11 * time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v: Penalty.For = %v has not run out", got, want, time.Duration(math.MaxInt64))
	}
}

// A large Penalty.Delay must not overflow the wait (backoff + penalty) into
// a negative one that passes the deadline check.
func TestPenaltyLongDelayDoesNotOverflow(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) { return step{status: 503}.response(r), nil })
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Statuses: []int{503}, Delay: math.MaxInt64},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var evDelay time.Duration
	clock := faketime.NewAt(time.Now())
	var attempts int
	counting := roundTripFunc(func(r *http.Request) (*http.Response, error) { attempts++; return base(r) })
	tr := retrytransport.New(counting, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep),
		retrytransport.WithObserver(func(ev retrytransport.Event) {
			if !ev.Final {
				evDelay = ev.Delay
			}
		}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://busy.test/", "").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if attempts != 1 || evDelay < 0 {
		t.Errorf("%d attempts, retry Event.Delay %v, sleeps %v; want 1 attempt: a wait of 1s + %v would pass the 1 min deadline",
			attempts, evDelay, clock.Sleeps(), time.Duration(math.MaxInt64))
	}
}

// A ServerBusy that ends a request (its last attempt) starts the penalty
// too: Service Bus's client enters its server-busy mode on any ServerBusy
// error, and the next request's retry waits the 10 s more.
func TestPenaltyStartedByAFinalAttempt(t *testing.T) {
	base := &script{answer: func(k int, _ *http.Request) step {
		switch k {
		case 1:
			return step{status: 503}
		case 2: // request 1's last attempt: ServerBusy
			return step{status: 503, body: `<Error><Code>ServerBusy</Code></Error>`}
		case 3:
			return step{status: 503}
		}
		return step{status: 200, body: "ok"}
	}}
	p := policy.Policy{
		MaxAttempts: 2,
		Backoff:     backoff.Constant{Interval: time.Second},
		Penalty:     &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Minute},
	}
	tr := newRig(t, base, p, recordEvents())
	tr.get(t, "http://busy.test/")
	tr.get(t, "http://busy.test/")
	want := []time.Duration{time.Second, 11 * time.Second}
	if got := tr.clock.Sleeps(); !equalDurations(got, want) {
		t.Errorf("sleeps %v; want %v: request 2 retries within a minute of the scope's ServerBusy", got, want)
	}
}

// With hedging and failover, a penalty signalled by the hedge's response
// (from the secondary) is the secondary's, the scope that said ServerBusy,
// as takeCopy counts the same result's throttles in the hedge's scope.
func TestPenaltyFromAHedgeIsItsEndpoints(t *testing.T) {
	hedgeArrived := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := map[string]int{}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		key := r.Method + " " + r.URL.Host
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		switch {
		case key == "GET primary.test" && n == 1:
			<-hedgeArrived // fails once the hedge is out
			return nil, errors.New("read: connection reset by peer")
		case key == "GET secondary.test" && n == 1: // the hedge
			once.Do(func() { close(hedgeArrived) })
			return step{status: 503, body: `{"code":"ServerBusy"}`}.response(r), nil
		case key == "POST secondary.test" && n == 1:
			return step{status: 500}.response(r), nil
		}
		return step{status: 200, body: "ok"}.response(r), nil
	})
	p := policy.Policy{
		MaxAttempts:        2,
		Failover:           &policy.Failover{Endpoints: []string{"secondary.test"}},
		Hedge:              &policy.Hedge{Delay: time.Millisecond, MaxHedges: 1},
		RetryNonIdempotent: true,
		Backoff:            backoff.Constant{Interval: time.Second},
		Penalty:            &policy.Penalty{Codes: []string{"ServerBusy"}, Delay: 10 * time.Second, For: time.Hour},
	}
	tr := newRig(t, base, p, recordEvents())
	tr.get(t, "http://primary.test/")
	before := tr.clock.Sleeps()
	// A request to the secondary itself (not hedged, no failover: POST).
	resp, err := tr.RoundTrip(newReq(t, "POST", "http://secondary.test/", "x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var retryWait []time.Duration
	for _, d := range tr.clock.Sleeps()[len(before):] {
		if d != time.Millisecond { // leave out hedge delays
			retryWait = append(retryWait, d)
		}
	}
	if !equalDurations(retryWait, []time.Duration{11 * time.Second}) {
		t.Errorf("POST to secondary.test retried after %v (all sleeps %v); want [11s]: secondary.test answered ServerBusy within the hour", retryWait, tr.clock.Sleeps())
	}
}
