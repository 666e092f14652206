package retrytransport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
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
	{"ErrBudget", policy.Policy{MaxTotalTime: 100 * time.Millisecond}, []step{{status: 503, header: retryAfter(1)}}, "GET", retrytransport.ErrBudget},
	{"ErrQuotaExceeded", policy.Policy{Quota: &ratelimit.Quota{Capacity: 1}}, []step{{status: 503}}, "GET", ratelimit.ErrQuotaExceeded},
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
			tr, clock := newTransport(t, s, tt.p, retrytransport.WithObserver(func(e retrytransport.Event) { last = e }))
			if tt.p.RateLimit != nil {
				tt.p.RateLimit.(*ratelimit.Fixed).Now = clock.Now
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
	tr, _ := newTransport(t, s, policy.Policy{MaxAttempts: 2}, retrytransport.WithLogger(logger))
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
