package retrytransport_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
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
	tr, _ := newTransport(t, s, policy.Policy{},
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired }),
		retrytransport.WithObserver(func(e retrytransport.Event) {
			if e.Final {
				final = e
			}
		}))
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
	tr, _ = newTransport(t, s, policy.Policy{},
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired }))
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
		tr, _ := newTransport(t, s, policy.Policy{RetryNonIdempotent: true},
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
			}))
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
