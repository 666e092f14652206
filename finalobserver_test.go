package retrytransport_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// finalOf is what a test compares of a final Event.
type finalOf struct {
	Attempt int
	Kind    classify.Kind
	Status  int
	Stop    string
	Final   bool
}

func summarize(e retrytransport.Event) finalOf {
	f := finalOf{Attempt: e.Attempt, Kind: e.Outcome.Kind, Status: e.StatusCode, Final: e.Final}
	if e.Stop != nil {
		f.Stop = e.Stop.Error()
	}
	return f
}

// TestFinalObserverSeesEveryRequest: the final observer hears of every
// request once, those ending at their first attempt included, while the
// observers of WithObserver still hear only of retries and their ends.
func TestFinalObserverSeesEveryRequest(t *testing.T) {
	for _, tt := range []struct {
		name      string
		steps     []step
		p         policy.Policy
		final     finalOf
		observed  int // events the WithObserver observer gets
		wantResp  bool
		bodyAfter string
	}{
		{"first attempt succeeds", []step{{status: 200, body: "ok"}}, policy.Standard(),
			finalOf{Attempt: 1, Kind: classify.Success, Status: 200, Final: true}, 0, true, "ok"},
		{"first attempt fails for good", []step{{status: 404, body: "no"}}, policy.Standard(),
			finalOf{Attempt: 1, Kind: classify.Fatal, Status: 404, Stop: retrytransport.ErrNotRetryable.Error(), Final: true}, 0, true, "no"},
		{"recovers at the third attempt", []step{{status: 503}, {status: 503}, {status: 200, body: "ok"}}, policy.Standard(),
			finalOf{Attempt: 3, Kind: classify.Success, Status: 200, Final: true}, 3, true, "ok"},
		{"exhausted", []step{{status: 503, body: "down"}}, policy.Standard(),
			finalOf{Attempt: 3, Kind: classify.Transient, Status: 503, Stop: retrytransport.ErrExhausted.Error(), Final: true}, 3, true, "down"},
		{"MaxAttempts 1: classified for the final observer, body intact", []step{{status: 503, body: "down"}}, policy.Policy{MaxAttempts: 1},
			finalOf{Attempt: 1, Kind: classify.Transient, Status: 503, Stop: retrytransport.ErrExhausted.Error(), Final: true}, 1, true, "down"},
		{"MaxAttempts 1 success", []step{{status: 200, body: "ok"}}, policy.Policy{MaxAttempts: 1},
			finalOf{Attempt: 1, Kind: classify.Success, Status: 200, Final: true}, 0, true, "ok"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var finals, observed []retrytransport.Event
			s := &script{steps: tt.steps}
			tr, _ := newTransport(t, s, tt.p,
				retrytransport.WithObserver(func(e retrytransport.Event) { observed = append(observed, e) }),
				retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) }))
			resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/x", ""))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			if got := readBody(t, resp); got != tt.bodyAfter {
				t.Errorf("body = %q; want %q", got, tt.bodyAfter)
			}
			if len(finals) != 1 {
				t.Fatalf("final observer called %d times; want 1", len(finals))
			}
			if diff := cmp.Diff(tt.final, summarize(finals[0])); diff != "" {
				t.Errorf("final Event (-want +got):\n%s", diff)
			}
			if finals[0].Scope != "api.example.com" || finals[0].Request == nil {
				t.Errorf("final Event scope %q, request %v; want api.example.com and the caller's", finals[0].Scope, finals[0].Request)
			}
			if len(observed) != tt.observed {
				t.Errorf("WithObserver observer got %d events; want %d", len(observed), tt.observed)
			}
			if tt.observed > 0 {
				if diff := cmp.Diff(summarize(finals[0]), summarize(observed[len(observed)-1])); diff != "" {
					t.Errorf("the two observers disagree on the final Event (-final +observer):\n%s", diff)
				}
			}
		})
	}
}

// TestFinalObserverOnTransportErrors: an attempt with no response, and a
// request refused before its first attempt, end with a final Event too.
func TestFinalObserverOnTransportErrors(t *testing.T) {
	var finals []retrytransport.Event
	s := &script{steps: []step{{err: errors.New("connection reset by peer")}}}
	tr, _ := newTransport(t, s, policy.Policy{MaxAttempts: 2},
		retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) }))
	if _, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", "")); err == nil {
		t.Fatal("RoundTrip succeeded; want the reset")
	}
	if len(finals) != 1 || finals[0].Attempt != 2 || finals[0].Err == nil || !errors.Is(finals[0].Stop, retrytransport.ErrExhausted) {
		t.Fatalf("finals = %+v; want one, attempt 2, with the error and ErrExhausted", finals)
	}

	// A fixed rate of one send, that refuses to wait: the second request is
	// refused before its first attempt.
	finals = nil
	s = &script{steps: []step{{status: 200}}}
	paced := policy.Standard()
	paced.RateLimit = &ratelimit.Fixed{Rate: 0.001, FailFast: true}
	tr, _ = newTransport(t, s, paced, retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) }))
	for range 2 {
		if resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", "")); err == nil {
			resp.Body.Close()
		}
	}
	if len(finals) != 2 || finals[1].Attempt != 0 || !errors.Is(finals[1].Stop, ratelimit.ErrRateLimited) {
		t.Fatalf("finals = %+v; want two, the second refused at attempt 0 by the rate limiter", finals)
	}
}

// TestObserversAdd: every WithObserver and WithFinalObserver is called, in
// the order given; none replaces another.
func TestObserversAdd(t *testing.T) {
	var calls []string
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr, _ := newTransport(t, s, policy.Standard(),
		retrytransport.WithObserver(func(retrytransport.Event) { calls = append(calls, "a") }),
		retrytransport.WithFinalObserver(func(retrytransport.Event) { calls = append(calls, "final1") }),
		retrytransport.WithObserver(nil),
		retrytransport.WithObserver(func(retrytransport.Event) { calls = append(calls, "b") }),
		retrytransport.WithFinalObserver(func(retrytransport.Event) { calls = append(calls, "final2") }))
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []string{"a", "b", "a", "b", "final1", "final2"} // the retry, then the final Event
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("observer calls (-want +got):\n%s", diff)
	}
}

// TestFinalObserverHappyPathAllocatesNothing: counting every request costs
// the happy path no allocation.
func TestFinalObserverHappyPathAllocatesNothing(t *testing.T) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	get, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	n := 0
	tr := retrytransport.New(stub, retrytransport.WithFinalObserver(func(e retrytransport.Event) { n += e.Attempt }))
	if allocs := testing.AllocsPerRun(1000, func() { tr.RoundTrip(get) }); allocs != 0 {
		t.Errorf("RoundTrip(GET) with a final observer: %v allocations; want 0", allocs)
	}
	if n == 0 {
		t.Error("the final observer was never called")
	}
}

// TestSnapshotCustomScope: Snapshot tells a scope of the policy's Scope
// function from a host.
func TestSnapshotCustomScope(t *testing.T) {
	s := &script{steps: []step{{status: 200}}}
	tenant := policy.Standard()
	tenant.Scope = func(*http.Request) string { return "tenant-7" }
	tr, _ := newTransport(t, s, policy.Standard(), retrytransport.WithHostPolicy("tenant.example.com", tenant))
	for _, u := range []string{"http://api.example.com/", "http://tenant.example.com/"} {
		resp, err := tr.RoundTrip(newReq(t, "GET", u, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := map[string]bool{}
	for _, st := range tr.Snapshot() {
		got[st.Scope] = st.Custom
	}
	if diff := cmp.Diff(map[string]bool{"api.example.com": false, "tenant-7": true}, got); diff != "" {
		t.Errorf("Custom by scope (-want +got):\n%s", diff)
	}
}

// TestRetryRefusedIsMatchable: a retry the hook refused ends with an error
// that errors.Is matches to ErrRetryRefused and to the hook's own error.
func TestRetryRefusedIsMatchable(t *testing.T) {
	errExpired := errors.New("credentials expired")
	s := &script{steps: []step{{err: errors.New("connection reset by peer")}}}
	tr, _ := newTransport(t, s, policy.Standard(),
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired }))
	_, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
	if !errors.Is(err, retrytransport.ErrRetryRefused) || !errors.Is(err, errExpired) {
		t.Errorf("err = %v; want it to match ErrRetryRefused and the hook's error", err)
	}
}
