package retrytransport_test

// Hooks into each attempt: WithBeforeRetry (changing, refusing, reading
// the body through GetBody), AttemptFromContext and the attempt header.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The hook refreshes a token before each retry, sees the previous
// attempt's outcome, and never touches the caller's request.
func TestBeforeRetryChangesEachRetry(t *testing.T) {
	var mu sync.Mutex
	var auth, paths []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		auth = append(auth, r.Header.Get("Authorization"))
		paths = append(paths, r.URL.RawQuery)
		status := 503
		if len(auth) == 3 {
			status = 200
		}
		return &http.Response{StatusCode: status, Body: http.NoBody, Request: r}, nil
	})
	var prevs []string
	hook := retrytransport.WithBeforeRetry(func(r *http.Request, prev retrytransport.Event) error {
		prevs = append(prevs, fmt.Sprintf("attempt %d: %d", prev.Attempt, prev.StatusCode))
		r.Header.Set("Authorization", fmt.Sprintf("Bearer token-%d", prev.Attempt+1))
		r.URL.RawQuery = "sig=" + fmt.Sprint(prev.Attempt+1)
		return nil
	})
	tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Backoff: halfJitter}),
		retrytransport.WithClock(nil, faketime.New().Sleep), hook)
	req := newReq(t, "GET", url+"?sig=1", "")
	req.Header.Set("Authorization", "Bearer token-1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{"Bearer token-1", "Bearer token-2", "Bearer token-3"}, auth); diff != "" {
		t.Errorf("Authorization per attempt mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sig=1", "sig=2", "sig=3"}, paths); diff != "" {
		t.Errorf("query per attempt mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"attempt 1: 503", "attempt 2: 503"}, prevs); diff != "" {
		t.Errorf("prev events mismatch (-want +got):\n%s", diff)
	}
	if req.Header.Get("Authorization") != "Bearer token-1" || req.URL.RawQuery != "sig=1" {
		t.Errorf("caller's request now has %q and %q; want it untouched", req.Header.Get("Authorization"), req.URL.RawQuery)
	}
}

// A hook that refuses a retry ends the request: the caller gets the last
// response, intact, and the final event's Stop wraps the hook's error.
func TestBeforeRetryRefuses(t *testing.T) {
	errExpired := errors.New("credentials expired")
	var final retrytransport.Event
	s := &script{steps: []step{{status: 503, body: "busy"}, {status: 200}}}
	tr := newRig(t, s, policy.Policy{}, withOptions(
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired }),
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if e.Final {
				final = e
			}
		})))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if got := readBody(t, resp); resp.StatusCode != 503 || got != "busy" {
		t.Errorf("RoundTrip = %d %q; want the last response, 503 %q", resp.StatusCode, got, "busy")
	}
	if s.count() != 1 {
		t.Errorf("server hits = %d; want 1", s.count())
	}
	if !errors.Is(final.Stop, errExpired) || final.Attempt != 1 {
		t.Errorf("final event = %+v; want attempt 1 with Stop wrapping %v", final, errExpired)
	}

	// After a transport error, the caller gets a *RetryError that says so.
	s = &script{steps: []step{{err: io.ErrUnexpectedEOF}}}
	tr = newRig(t, s, policy.Policy{}, withOptions(
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired })))
	_, err = tr.RoundTrip(newReq(t, "GET", url, ""))
	var re *retrytransport.RetryError
	if !errors.As(err, &re) || !errors.Is(err, errExpired) || !errors.Is(err, io.ErrUnexpectedEOF) || re.Attempts != 1 {
		t.Errorf("RoundTrip error = %v; want a *RetryError after 1 attempt wrapping %v and %v", err, errExpired, io.ErrUnexpectedEOF)
	}
}

// The hook may read the body through GetBody, to sign it, with or without
// the caller's GetBody; the retry still sends the whole body.
func TestBeforeRetryReadsTheBodyThroughGetBody(t *testing.T) {
	const body = `{"item":"x"}`
	for _, tt := range []struct {
		name string
		body func() io.Reader
	}{
		{"GetBody", func() io.Reader { return strings.NewReader(body) }},
		{"Recorded", func() io.Reader { return io.MultiReader(strings.NewReader(body)) }}, // no GetBody
	} {
		s := &script{steps: []step{{status: 503}, {status: 200}}}
		var signed []string
		tr := newRig(t, s, policy.Policy{RetryNonIdempotent: true}, withOptions(
			retrytransport.WithBeforeRetry(func(r *http.Request, _ retrytransport.Event) error {
				if r.GetBody == nil {
					return errors.New("no GetBody")
				}
				b, err := r.GetBody()
				if err != nil {
					return err
				}
				defer b.Close()
				data, err := io.ReadAll(b)
				signed = append(signed, string(data))
				return err
			})))
		req, _ := http.NewRequest("POST", url, tt.body())
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: RoundTrip: %v", tt.name, err)
		}
		resp.Body.Close()
		if diff := cmp.Diff([]string{body, body}, s.received()); diff != "" {
			t.Errorf("%s: bodies received mismatch (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff([]string{body}, signed); diff != "" {
			t.Errorf("%s: bodies the hook read mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

// A retry that the WithBeforeRetry hook refuses is never sent, and takes no
// send token: the hook runs before pacing, since a fixed rate's token cannot
// be given back. The scope's next request goes as if nothing happened.
func TestBeforeRetryRefusalKeepsTheFixedRateToken(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	p := policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 2, FailFast: true}}
	errNoToken := errors.New("no fresh token")
	tr := newRig(t, s, p, withOptions(retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error {
		return errNoToken
	})))
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
	// A: one token for its attempt; 0.5 s backoff refills half a token;
	// the refused retry takes one: 0.5 left instead of 1.5.
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || s.count() != 1 {
		t.Fatalf("first request: %d after %d hits; want the 503 after 1 (the hook refused the retry)", resp.StatusCode, s.count())
	}
	resp, err = tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Errorf("second request, right after: %v; want it sent: only one send of the burst of 2 went out in the last 0.5 s", err)
		return
	}
	resp.Body.Close()
}

// With Policy.AttemptHeader set, the first attempt is a copy of the
// caller's request sharing its body. When the pacing wait before it ends
// exactly at MaxTotalTime, the attempt is not sent and the caller's body is
// closed once, not once for the copy and once for the caller.
func TestAttemptHeaderTimeLimitSpentClosesTheBodyOnce(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{
		AttemptHeader: "X-Attempt",
		MaxTotalTime:  time.Second,
		RateLimit:     &ratelimit.Fixed{Rate: 1, Burst: 1},
	}
	tr := newRig(t, s, p)
	p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	// The next token is 1 s away: the wait ends exactly at MaxTotalTime.
	body := &closeCounter{Reader: strings.NewReader("payload")}
	req := newReq(t, "PUT", url, "")
	req.Body, req.ContentLength = body, 7
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
	_, err = tr.RoundTrip(req)
	if !errors.Is(err, retrytransport.ErrTimeLimit) {
		t.Fatalf("second RoundTrip error = %v; want ErrTimeLimit before the first attempt", err)
	}
	if n := body.closed.Load(); n != 1 {
		t.Errorf("request body closed %d times; want 1", n)
	}
}

// The hook's prev is the Event that announced the retry, as the observer
// saw it: its Waited does not include its own Delay.
func TestBeforeRetrySeesTheAnnouncedEvent(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	var announced, prev retrytransport.Event
	tr := newRig(t, s, policy.Policy{}, withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if !e.Final {
				announced = e
			}
		}),
		retrytransport.WithBeforeRetry(func(_ *http.Request, e retrytransport.Event) error {
			prev = e
			return nil
		})))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	if prev.Waited != announced.Waited || prev.Delay != announced.Delay {
		t.Errorf("hook's prev: Waited %v, Delay %v; the announcing event: Waited %v, Delay %v; want the same event (Waited without Delay)",
			prev.Waited, prev.Delay, announced.Waited, announced.Delay)
	}
}

// Every retry's request tells the base transport which attempt it is and
// how long the request waited; the first attempt's carries nothing and
// reads as attempt 1.
func TestAttemptFromContextReachesTheBase(t *testing.T) {
	var mu sync.Mutex
	var seen []retrytransport.Attempts
	n := 0
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, retrytransport.AttemptFromContext(r.Context()))
		n++
		if n < 3 {
			return &http.Response{StatusCode: 503, Body: http.NoBody, Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	clock := faketime.New()
	tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Backoff: halfJitter}),
		retrytransport.WithClock(clock.Now, clock.Sleep))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	want := []retrytransport.Attempts{{Count: 1}, {Count: 2, Waited: 500 * time.Millisecond}, {Count: 3, Waited: 1500 * time.Millisecond}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("AttemptFromContext per attempt mismatch (-want +got):\n%s", diff)
	}
}

// Policy.AttemptHeader sends each attempt's number to the server, on a copy
// of the header: the caller's request keeps its own.
func TestAttemptHeaderNumbersEveryAttempt(t *testing.T) {
	for _, maxAttempts := range []int{1, 3} {
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.Header.Get("X-Attempt"))
			if len(got) < maxAttempts {
				w.WriteHeader(503)
			}
		}))
		c := e2eClient(t, policy.Policy{MaxAttempts: maxAttempts, AttemptHeader: "X-Attempt", Backoff: halfJitter})
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("X-Mine", "kept")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("MaxAttempts %d: GET: %v", maxAttempts, err)
		}
		resp.Body.Close()
		srv.Close()
		want := []string{"1", "2", "3"}[:maxAttempts]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("MaxAttempts %d: X-Attempt per attempt mismatch (-want +got):\n%s", maxAttempts, diff)
		}
		if len(req.Header) != 1 || req.Header.Get("X-Attempt") != "" {
			t.Errorf("MaxAttempts %d: caller's header = %v; want it untouched", maxAttempts, req.Header)
		}
	}
}
