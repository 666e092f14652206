package retrytransport_test

// Events: what observers, the final observer and the logger are told, and
// the reason a request stopped, once per request.

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// stopScenarios make the transport stop retrying for each reason an Event
// can give: a policy, the script of the base's answers, and the Stop that
// must end the request, with the name the Event.Stop comment must list.
var stopScenarios = []struct {
	name   string
	p      policy.Policy
	steps  []step
	method string
	want   error
}{
	{"ErrExhausted", policy.Policy{MaxAttempts: 2}, []step{{status: 503}}, "GET", retrytransport.ErrExhausted},
	{"ErrNotRetryable", policy.Policy{}, []step{{status: 503}}, "POST", retrytransport.ErrNotRetryable},
	{"ErrServerDelay", policy.Policy{MaxDelay: time.Second}, []step{{status: 503, header: retryAfter(60)}}, "GET", retrytransport.ErrServerDelay},
	{"ErrTimeLimit", policy.Policy{MaxTotalTime: 100 * time.Millisecond}, []step{{status: 503, header: retryAfter(1)}}, "GET", retrytransport.ErrTimeLimit},
	{"ErrExceeded", policy.Policy{Quota: &quota.Bucket{Capacity: 1}}, []step{{status: 503}}, "GET", quota.ErrExceeded},
	{"ErrRateLimited", policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}}, []step{{status: 503}}, "GET", ratelimit.ErrRateLimited},
}

// TestEventStopReasons: each reason for not retrying reaches the observer
// in the last Event's Stop, and the Event.Stop comment names it, so that a
// reader of the docs knows every value to expect.
func TestEventStopReasons(t *testing.T) {
	doc := eventStopDoc(t)
	for _, tt := range stopScenarios {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: tt.steps}
			var last retrytransport.Event
			tr := newRig(t, s, tt.p, withOptions(retrytransport.WithObserver(func(e retrytransport.Event) { last = e })))
			if tt.p.RateLimit != nil {
				tt.p.RateLimit.(*ratelimit.Fixed).Now = tr.clock.Now
			}
			resp, err := tr.RoundTrip(newReq(t, tt.method, url, "payload"))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !errors.Is(last.Stop, tt.want) {
				t.Errorf("last Event.Stop = %v; want %v", last.Stop, tt.want)
			}
			if !strings.Contains(doc, tt.name) {
				t.Errorf("the Event.Stop comment does not name %s", tt.name)
			}
		})
	}
}

// eventStopDoc returns the doc comment of the Stop field of Event, as
// event.go has it.
func eventStopDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatalf("parsing event.go: %v", err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Event" {
			for _, fld := range ts.Type.(*ast.StructType).Fields.List {
				if len(fld.Names) == 1 && fld.Names[0].Name == "Stop" {
					doc = fld.Doc.Text()
				}
			}
			return false
		}
		return true
	})
	if doc == "" {
		t.Fatalf("event.go: no doc comment on Event.Stop")
	}
	return doc
}

// At slog's default level (Info), the logger shows how requests that needed
// retries ended, not each retry; the URL has no query or user information,
// and durations read as text in JSON.
func TestLoggerAtInfoShowsOutcomes(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	s := &script{steps: []step{{status: 503}, {status: 200}, {status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(retrytransport.WithLogger(logger)))
	for range 2 {
		resp, err := tr.RoundTrip(newReq(t, "GET", "https://user:secret@api.example.com/v1/things?key=secret#frag", ""))
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		resp.Body.Close()
	}
	var lines []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decoding log: %v", err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("log has %d lines; want 2 (recovered, gave up): %v", len(lines), lines)
	}
	for i, want := range []struct {
		msg, waited string
		attempts    float64
		status      float64
	}{
		{"retrytransport: recovered", "500ms", 2, 200},
		{"retrytransport: gave up", "500ms", 2, 503},
	} {
		m := lines[i]
		if m["msg"] != want.msg || m["level"] != "INFO" || m["attempts"] != want.attempts || m["status"] != want.status {
			t.Errorf("line %d = %v; want %s at INFO, attempts %v, status %v", i, m, want.msg, want.attempts, want.status)
		}
		if m["url"] != "https://api.example.com/v1/things" {
			t.Errorf("line %d url = %v; want it without user information, query or fragment", i, m["url"])
		}
		if _, ok := m["waited"].(string); !ok {
			t.Errorf("line %d waited = %#v; want a duration as text", i, m["waited"])
		}
	}
	if strings.Contains(buf.String(), "secret") {
		t.Errorf("log %q holds the URL's secrets", buf.String())
	}
}

func TestObserverSeesEachRetry(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 429, header: retryAfter(2)}, {status: 200}}}
	var events []retrytransport.Event
	tr := newRig(t, s, policy.Standard(), withOptions(
		retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) })))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	type summary struct {
		Attempt, Status int
		Kind            string
		Delay           time.Duration
		Server          bool
		Quota           float64
		Waited          time.Duration
		Final           bool
	}
	var got []summary
	for _, e := range events {
		got = append(got, summary{e.Attempt, e.StatusCode, e.Outcome.Kind.String(), e.Delay, e.ServerDelay, e.Quota, e.Waited, e.Final})
	}
	want := []summary{
		{1, 503, "transient", 500 * time.Millisecond, false, 495, 0, false},
		{2, 429, "throttle", 2 * time.Second, true, 485, 500 * time.Millisecond, false},
		// The retry that succeeded gets its quota cost (10) back.
		{3, 200, "success", 0, false, 495, 2500 * time.Millisecond, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// The final event: one per request that needed a retry, or whose retryable
// outcome was not retried, or that was refused before its first attempt;
// none for a request that ended at its first attempt.
func TestFinalEvent(t *testing.T) {
	type final struct {
		Attempt, Status int
		Kind            string
		Waited          time.Duration
		Stop            string
	}
	stopText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	tests := []struct {
		name  string
		steps []step
		p     policy.Policy
		want  []final
	}{
		{"FirstAttemptSucceeds", []step{{status: 200}}, policy.Policy{}, nil},
		{"FirstAttemptFatal", []step{{status: 404}}, policy.Policy{}, nil},
		{"RecoversAfterRetries", []step{{status: 503}, {status: 500}, {status: 200}}, policy.Policy{},
			[]final{{3, 200, "success", 1500 * time.Millisecond, ""}}},
		{"FatalAfterRetry", []step{{status: 503}, {status: 404}}, policy.Policy{},
			[]final{{2, 404, "fatal", 500 * time.Millisecond, retrytransport.ErrNotRetryable.Error()}}},
		{"Exhausted", []step{{status: 503}}, policy.Policy{},
			[]final{{3, 503, "transient", 1500 * time.Millisecond, retrytransport.ErrExhausted.Error()}}},
		{"NotRetriedAtAll", []step{{status: 503}}, policy.Policy{MaxAttempts: 1, AttemptTimeout: time.Minute},
			[]final{{1, 503, "transient", 0, retrytransport.ErrExhausted.Error()}}},
		// MaxAttempts 1 and nothing else to do: the response is not even
		// classified, so there is nothing to report.
		{"RetriesOff", []step{{status: 503}}, policy.Policy{MaxAttempts: 1}, nil},
		{"QuotaRefused", []step{{status: 503}}, policy.Policy{Quota: &quota.Bucket{Capacity: 7}},
			[]final{{2, 503, "transient", 500 * time.Millisecond, quota.ErrExceeded.Error()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []final
			finals := 0
			obs := retrytransport.WithObserver(func(e retrytransport.Event) {
				if e.Final {
					finals++
					got = append(got, final{e.Attempt, e.StatusCode, e.Outcome.Kind.String(), e.Waited, stopText(e.Stop)})
				}
			})
			tr := newRig(t, &script{steps: tt.steps}, tt.p, withOptions(obs))
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("final events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A request refused before its first attempt (here: the rate limiter will
// not wait) ends with a final event for attempt 0.
func TestFinalEventOfARequestRefusedBeforeItsFirstAttempt(t *testing.T) {
	var events []retrytransport.Event
	s := &script{steps: []step{{status: 200}}}
	p := policy.Policy{RateLimit: &ratelimit.Fixed{Rate: 1, Burst: 1, FailFast: true}}
	tr := newRig(t, s, p, withOptions(retrytransport.WithObserver(func(e retrytransport.Event) { events = append(events, e) })))
	resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
	if err != nil {
		t.Fatalf("first RoundTrip: %v", err)
	}
	resp.Body.Close()
	if _, err := tr.RoundTrip(newReq(t, "GET", url, "")); !errors.Is(err, ratelimit.ErrRateLimited) {
		t.Fatalf("second RoundTrip error = %v; want ratelimit.ErrRateLimited", err)
	}
	if len(events) != 1 || !events[0].Final || events[0].Attempt != 0 || !errors.Is(events[0].Stop, ratelimit.ErrRateLimited) {
		t.Errorf("events = %+v; want one final event for attempt 0 stopped by ErrRateLimited", events)
	}
}

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
			tr := newRig(t, s, tt.p, withOptions(
				retrytransport.WithObserver(func(e retrytransport.Event) { observed = append(observed, e) }),
				retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) })))
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
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
		retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) })))
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
	tr = newRig(t, s, paced, withOptions(
		retrytransport.WithFinalObserver(func(e retrytransport.Event) { finals = append(finals, e) })))
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
	tr := newRig(t, s, policy.Standard(), withOptions(
		retrytransport.WithObserver(func(retrytransport.Event) { calls = append(calls, "a") }),
		retrytransport.WithFinalObserver(func(retrytransport.Event) { calls = append(calls, "final1") }),
		retrytransport.WithObserver(nil),
		retrytransport.WithObserver(func(retrytransport.Event) { calls = append(calls, "b") }),
		retrytransport.WithFinalObserver(func(retrytransport.Event) { calls = append(calls, "final2") })))
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

// TestRetryRefusedIsMatchable: a retry the hook refused ends with an error
// that errors.Is matches to ErrRetryRefused and to the hook's own error.
func TestRetryRefusedIsMatchable(t *testing.T) {
	errExpired := errors.New("credentials expired")
	s := &script{steps: []step{{err: errors.New("connection reset by peer")}}}
	tr := newRig(t, s, policy.Standard(), withOptions(
		retrytransport.WithBeforeRetry(func(*http.Request, retrytransport.Event) error { return errExpired })))
	_, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
	if !errors.Is(err, retrytransport.ErrRetryRefused) || !errors.Is(err, errExpired) {
		t.Errorf("err = %v; want it to match ErrRetryRefused and the hook's error", err)
	}
}
