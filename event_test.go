package retrytransport_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
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
				tt.p.RateLimit.Now = clock.Now
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
