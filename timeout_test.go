package retrytransport_test

// Time limits: AttemptTimeout, MaxTotalTime and the caller's deadline,
// what each bounds and ends, and the error each leaves.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// stall blocks until the client goes away or the test ends.
func stall(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second): // a bound on a bug, not a wait
	}
}

func TestAttemptTimeoutRetriesAStalledServer(t *testing.T) {
	f, srv := newFlaky(t, 1, stall)
	var events []retrytransport.Event
	c := e2eClient(t, policy.Policy{AttemptTimeout: 100 * time.Millisecond},
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) }))
	start := time.Now()
	resp, err := do(t, c, "GET", srv.URL, "stalled", nil)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if got := readBody(t, resp); got != "ok" || f.count("stalled") != 2 {
		t.Errorf("GET = %q after %d attempts; want ok after 2", got, f.count("stalled"))
	}
	if len(events) != 2 || events[0].Outcome.Kind.String() != "timeout" || !events[1].Final || events[1].StatusCode != 200 {
		t.Errorf("events = %+v; want a timeout, then the final 200", events)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("GET took %v; want about the 100 ms attempt timeout", elapsed)
	}
}

func TestAttemptTimeoutDoesNotBoundTheBodyRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range 3 {
			time.Sleep(60 * time.Millisecond) // the real server's pace is the point
			io.WriteString(w, "chunk ")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	c := e2eClient(t, policy.Policy{AttemptTimeout: 50 * time.Millisecond})
	resp, err := do(t, c, "GET", srv.URL, "slow-body", nil)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if got := readBody(t, resp); got != strings.Repeat("chunk ", 3) {
		t.Errorf("body = %q; want all three chunks though they took longer than AttemptTimeout", got)
	}
}

func TestMaxTotalTimeStopsBeforeAWaitPastIt(t *testing.T) {
	s := &script{steps: []step{{status: 503, header: retryAfter(2), body: "busy"}}}
	var events []retrytransport.Event
	tr := newRig(t, s, policy.Policy{MaxAttempts: 10, MaxTotalTime: 3 * time.Second}, withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) })))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
		t.Errorf("RoundTrip = %d %q; want the last 503", resp.StatusCode, got)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second}, tr.clock.Sleeps()); diff != "" || s.count() != 2 {
		t.Errorf("attempts = %d, waits (-want +got):\n%s; want 2 attempts", s.count(), diff)
	}
	if last := events[len(events)-1]; !errors.Is(last.Stop, retrytransport.ErrTimeLimit) {
		t.Errorf("last event Stop = %v; want ErrTimeLimit", last.Stop)
	}
}

// TestTimeLimitErrorSaysSo: a request that MaxTotalTime or MaxTotalWait
// stops fails with a *RetryError wrapping ErrTimeLimit and the last error,
// whose message names both limits and which reports a timeout.
func TestTimeLimitErrorSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    policy.Policy
	}{
		{"MaxTotalTime", policy.Policy{MaxTotalTime: 1500 * time.Millisecond}},
		{"MaxTotalWait", policy.Policy{MaxTotalWait: 1500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
			p := tc.p
			p.MaxAttempts, p.Backoff = 10, backoff.Constant{Interval: time.Second}
			tr := newRig(t, s, p)
			_, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || re.Attempts != 2 || !errors.Is(err, retrytransport.ErrTimeLimit) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("RoundTrip error = %v; want a *RetryError after 2 attempts wrapping ErrTimeLimit and the last error", err)
			}
			if want := "retrytransport: gave up after 2 attempts (MaxTotalTime or MaxTotalWait ran out): unexpected EOF"; err.Error() != want {
				t.Errorf("Error() = %q; want %q", err, want)
			}
			if !re.Timeout() {
				t.Errorf("RetryError.Timeout() = false; want true: the policy's time ran out")
			}
		})
	}
}

func TestCallerDeadlineIsNotAnAttemptTimeout(t *testing.T) {
	_, srv := newFlaky(t, 5, stall)
	c := e2eClient(t, policy.Policy{AttemptTimeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET error = %v; want the caller's context.DeadlineExceeded", err)
	}
}

// lateBody is written after the response header, once delay has passed:
// a server that answers at once and takes its time with the details.
func lateBody(status int, delay time.Duration, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(delay): // the real server's pace is the point
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, body)
	}
}

// TestAttemptTimeoutEndsAtTheHeaders: AttemptTimeout covers the wait for
// the response header only. A 403 whose error document comes after the
// timeout is classified on the whole document, unhurried: it is final, sent
// once, and the caller reads all of it. A Classifier rule that reads a
// processed POST's 200 body gets it whole, and so does the caller.
func TestAttemptTimeoutEndsAtTheHeaders(t *testing.T) {
	const doc = `{"code":"AccessDenied","message":"no"}`
	readsBody := classify.Classifier{Rules: []classify.Rule{func(_ *http.Request, resp *http.Response, _ error) (classify.Outcome, bool) {
		if resp == nil || resp.StatusCode != 200 {
			return classify.Outcome{}, false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errorReader{err}))
		if err != nil {
			return classify.Outcome{Kind: classify.Transient, Reason: "body cut"}, true
		}
		return classify.Outcome{Kind: classify.Success}, true
	}}}.Classify
	for _, tt := range []struct {
		name   string
		method string
		status int
		p      policy.Policy
	}{
		{"403AfterAttemptTimeout", "GET", 403, policy.Policy{AttemptTimeout: 50 * time.Millisecond}},
		{"403AfterMaxTotalTime", "GET", 403, policy.Policy{MaxTotalTime: 50 * time.Millisecond}},
		{"RuleReads200OfPost", "POST", 200, policy.Policy{AttemptTimeout: 50 * time.Millisecond, Classify: readsBody}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			var hits atomic.Int32
			late := lateBody(tt.status, 150*time.Millisecond, doc)
			srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				late(w, r)
			}))
			c := e2eClient(t, tt.p)
			resp, err := do(t, c, tt.method, srv.URL, "late", strings.NewReader("payload"))
			if err != nil {
				t.Fatalf("%s: %v; want the %d", tt.method, err, tt.status)
			}
			if got := readBody(t, resp); resp.StatusCode != tt.status || got != doc {
				t.Errorf("%s = %d %q; want %d %q", tt.method, resp.StatusCode, got, tt.status, doc)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("server hit %d times; want 1", n)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	return 0, r.err
}

// lateBase is a base transport whose response comes back only after the
// attempt's context was cancelled, with a body that fails as net/http's do
// once their request's context is done: the timer fires as the headers
// arrive.
type lateBase struct{ closed atomic.Int32 }

func (b *lateBase) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
		Body: &ctxBody{ctx: req.Context(), closed: &b.closed}}, nil
}

type ctxBody struct {
	ctx    context.Context
	closed *atomic.Int32
}

func (b *ctxBody) Read([]byte) (int, error) { return 0, b.ctx.Err() }
func (b *ctxBody) Close() error             { b.closed.Add(1); return nil }

// TestResponseAfterAttemptTimerFiredIsATimeout: whether the headers came
// in time is settled once. A response that comes back after the timer
// fired has a body that fails, so it is a Timeout: closed, retried, and in
// the end an error, never a response whose body cannot be read.
func TestResponseAfterAttemptTimerFiredIsATimeout(t *testing.T) {
	noLeaks(t)
	base := &lateBase{}
	clock := faketime.NewAt(time.Now())
	tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{MaxAttempts: 2, AttemptTimeout: time.Millisecond, Backoff: halfJitter}),
		retrytransport.WithClock(clock.Now, clock.Sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if resp != nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("RoundTrip = %d, body %q, read error %v; want no response: it came after the timeout", resp.StatusCode, b, rerr)
	}
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || re.Attempts != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RoundTrip error = %v; want a *RetryError after 2 attempts wrapping DeadlineExceeded", err)
	}
	if n := base.closed.Load(); n != 2 {
		t.Errorf("late response bodies closed %d times; want 2", n)
	}
}

// TestMaxAttemptsOneKeepsTheTimeBounds: a single attempt is still bounded
// by AttemptTimeout and MaxTotalTime. A server that never answers ends the
// call at the policy's bound, well before the caller's own deadline (which
// is here only to bound a bug), with a *RetryError.
func TestMaxAttemptsOneKeepsTheTimeBounds(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    policy.Policy
		why  error
	}{
		{"AttemptTimeout", policy.Policy{MaxAttempts: 1, AttemptTimeout: 50 * time.Millisecond}, retrytransport.ErrExhausted},
		{"MaxTotalTime", policy.Policy{MaxAttempts: 1, MaxTotalTime: 50 * time.Millisecond}, retrytransport.ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			s, srv := newStaller(t, stallBeforeHeaders)
			c := e2eClient(t, tt.p)
			resp, err := boundedCall(t, c, srv.URL) // fails t if the caller's deadline ended it
			if resp != nil {
				resp.Body.Close()
			}
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, tt.why) {
				t.Errorf("GET error = %v; want a *RetryError after 1 attempt wrapping DeadlineExceeded and %v", err, tt.why)
			}
			if n := s.seen.Load(); n != 1 {
				t.Errorf("server saw %d attempts; want 1", n)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}

// TestSpecialBodiesKeptWithTimeouts: with AttemptTimeout or MaxTotalTime,
// the response body is still what net/http made it: the connection of a
// 101 Switching Protocols, which is an io.ReadWriteCloser that keeps
// working, and http.NoBody for a 204.
func TestSpecialBodiesKeptWithTimeouts(t *testing.T) {
	for _, p := range []policy.Policy{
		{AttemptTimeout: 20 * time.Millisecond},
		{MaxTotalTime: 20 * time.Millisecond},
	} {
		name := "AttemptTimeout"
		if p.MaxTotalTime > 0 {
			name = "MaxTotalTime"
		}
		t.Run(name, func(t *testing.T) {
			noLeaks(t)
			srv := newFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") != "echo" {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
				buf.Flush()
				conn.SetDeadline(time.Now().Add(leakBound))
				io.Copy(conn, buf) // echo until the client closes
			}))
			c := e2eClient(t, p)

			resp, err := do(t, c, "GET", srv.URL, "no-content", nil)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if resp.StatusCode != http.StatusNoContent || resp.Body != http.NoBody {
				t.Errorf("204 response Body = %T; want http.NoBody", resp.Body)
			}
			resp.Body.Close()

			req, _ := http.NewRequest("GET", srv.URL, nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "echo")
			resp, err = c.Do(req)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			rwc, ok := resp.Body.(io.ReadWriteCloser)
			if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
				resp.Body.Close()
				t.Fatalf("upgrade = %d with Body %T; want 101 with an io.ReadWriteCloser", resp.StatusCode, resp.Body)
			}
			defer rwc.Close()
			// The attempt's context was released when the 101 came: the
			// connection must not depend on it.
			if _, err := rwc.Write([]byte("ping")); err != nil {
				t.Fatalf("write on the upgraded connection: %v", err)
			}
			got := make([]byte, 4)
			if _, err := io.ReadFull(rwc, got); err != nil || string(got) != "ping" {
				t.Errorf("echo = %q, %v; want ping", got, err)
			}
		})
	}
}
