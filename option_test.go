package retrytransport_test

import (
	"fmt"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// panicValue returns what f panics with, or nil when it returns.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// invalidPatterns are host patterns with what is wrong with each, as
// policy.CheckPattern says it.
var invalidPatterns = []struct{ pattern, why string }{
	{"127.0.0.1:8080", "has a port; patterns match hostnames only, on every port"},
	{"api.example.com:443", "has a port; patterns match hostnames only, on every port"},
	{"[::1]:443", "has a port; patterns match hostnames only, on every port"},
	{"http://api.example.com", "has a scheme; patterns match hostnames only, for every scheme"},
	{"api.example.com/v1", `has a path ("/v1"); patterns match hostnames only`},
	{"", `empty pattern; want a hostname or "*." and a domain`},
	{"*", `'*' in a pattern; want it only as a leading "*."`},
	{"api.*.com", `'*' in a pattern; want it only as a leading "*."`},
	{"*.", `nothing after "*."; want a domain`},
	{".", `a lone "."; want a hostname or "*." and a domain`},
	{"..", `".." at the end; want at most one trailing "."`},
	{"api.example.com..", `".." at the end; want at most one trailing "."`},
	{"*.example.com..", `".." at the end; want at most one trailing "."`},
	{"*..", `".." at the end; want at most one trailing "."`},
	{".example.com", `a leading "."; want "*.example.com" for the names below example.com`},
	{"bad host", `has ' ', which no hostname has; want letters, digits, '-', '_' and '.'`},
}

// TestWithHostPolicyPanicsOnInvalidPattern checks that WithHostPolicy
// itself, before New, panics on an invalid pattern, with a message that
// names the option, the pattern and what is wrong.
func TestWithHostPolicyPanicsOnInvalidPattern(t *testing.T) {
	for _, tt := range invalidPatterns {
		got := panicValue(func() { retrytransport.WithHostPolicy(tt.pattern, policy.None()) })
		want := fmt.Sprintf("retrytransport: WithHostPolicy: host pattern %q: %s", tt.pattern, tt.why)
		if got == nil || fmt.Sprint(got) != want {
			t.Errorf("WithHostPolicy(%q) panics with %v; want %s", tt.pattern, got, want)
		}
	}
}

// TestWithHostPolicyAcceptsValidPatterns checks that the patterns the
// documentation shows do not panic, and that a port-less address pattern
// covers every port of its host.
func TestWithHostPolicyAcceptsValidPatterns(t *testing.T) {
	for _, pattern := range []string{"api.example.com", "*.example.com", "api.example.com.", "API.Example.COM", "127.0.0.1", "::1", "[::1]", "localhost"} {
		if got := panicValue(func() { retrytransport.WithHostPolicy(pattern, policy.None()) }); got != nil {
			t.Errorf("WithHostPolicy(%q) panics with %v; want no panic", pattern, got)
		}
	}
	s := &script{steps: []step{{status: 503}}}
	tr, _ := newTransport(t, s, policy.Policy{MaxAttempts: 2},
		retrytransport.WithHostPolicy("127.0.0.1", policy.Policy{MaxAttempts: 4, Backoff: halfJitter}))
	for _, tt := range []struct {
		url  string
		want int
	}{{"http://127.0.0.1:8080/", 4}, {"http://127.0.0.1/", 4}, {"http://127.0.0.2:8080/", 2}} {
		if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d", tt.url, got, tt.want)
		}
	}
}

// TestWithPolicyMapPanicsOnInvalidPattern checks that WithPolicyMap panics,
// when called, on a Map with an invalid pattern or with two spellings of
// one pattern, naming the patterns in sorted order.
func TestWithPolicyMapPanicsOnInvalidPattern(t *testing.T) {
	for _, tt := range invalidPatterns {
		m := policy.Map{Hosts: map[string]policy.Policy{tt.pattern: policy.None(), "api.example.org": {}}}
		got := panicValue(func() { retrytransport.WithPolicyMap(m) })
		want := fmt.Sprintf("retrytransport: WithPolicyMap: host pattern %q: %s", tt.pattern, tt.why)
		if got == nil || fmt.Sprint(got) != want {
			t.Errorf("WithPolicyMap(Hosts %q) panics with %v; want %s", tt.pattern, got, want)
		}
	}
	for _, pair := range [][2]string{{"API.example.com", "api.example.com"}, {"::1", "[::1]"}, {"a.example.com", "a.example.com."}} {
		m := policy.Map{Hosts: map[string]policy.Policy{pair[0]: {}, pair[1]: policy.None()}}
		got := panicValue(func() { retrytransport.WithPolicyMap(m) })
		want := fmt.Sprintf("retrytransport: WithPolicyMap: host patterns %q and %q are the same pattern; want each once", pair[0], pair[1])
		if got == nil || fmt.Sprint(got) != want {
			t.Errorf("WithPolicyMap(Hosts %q) panics with %v; want %s", pair, got, want)
		}
	}
}
