package retrytransport_test

// Host policies and scopes: WithHostPolicy and WithPolicyMap patterns
// (exact, wildcard, IP literals, every port), the trailing dot of a fully
// qualified name, which DNS ignores and so do policies and scopes.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// panicValue returns what f panics with, or nil when it returns.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// invalidPatterns are host patterns with what is wrong with each, as the
// panics of WithHostPolicy and WithPolicyMap say it.
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
// documentation shows do not panic (TestHostPolicyIPLiterals checks that
// a port-less address pattern covers every port of its host).
func TestWithHostPolicyAcceptsValidPatterns(t *testing.T) {
	for _, pattern := range []string{"api.example.com", "*.example.com", "api.example.com.", "API.Example.COM", "127.0.0.1", "::1", "[::1]", "localhost"} {
		if got := panicValue(func() { retrytransport.WithHostPolicy(pattern, policy.None()) }); got != nil {
			t.Errorf("WithHostPolicy(%q) panics with %v; want no panic", pattern, got)
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

func TestHostPolicyIgnoresTrailingDot(t *testing.T) {
	spellings := []struct {
		name  string
		exact string // pattern of the policy with 5 attempts
		wild  string // pattern of the policy with 3 attempts
	}{
		{"Plain", "api.example.com", "*.example.com"},
		{"TrailingDot", "api.example.com.", "*.example.com."},
		{"UpperCaseTrailingDot", "API.Example.COM.", "*.EXAMPLE.com."},
	}
	tests := []struct {
		url  string
		want int // attempts; the default policy makes 2
	}{
		{"http://api.example.com./x", 5},
		{"http://API.Example.COM./x", 5},
		{"http://api.example.com.:8443/x", 5},
		{"http://api.example.com/x", 5},
		{"http://a.example.com./x", 3},
		{"http://A.B.Example.com./x", 3},
		{"http://a.example.com/x", 3},
		{"http://example.com./x", 2},           // the wildcard's domain itself
		{"http://api.example.com../x", 2},      // two dots: not the same name
		{"http://api.example.com.evil./x", 2},  // a prefix is not a match
		{"http://notexample.com./x", 2},        // a suffix, but not a subdomain
		{"http://a.example.com.evil.org/x", 2}, // nor is the domain in the middle
	}
	for _, sp := range spellings {
		t.Run(sp.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503}}}
			tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
				retrytransport.WithHostPolicy(sp.exact, policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
				retrytransport.WithHostPolicy(sp.wild, policy.Policy{MaxAttempts: 3, Backoff: halfJitter}),
			))
			for _, tt := range tests {
				if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
					t.Errorf("WithHostPolicy(%q, %q): RoundTrip(%s): attempts = %d; want %d", sp.exact, sp.wild, tt.url, got, tt.want)
				}
			}
		})
	}
}

func TestHostPatternWithTrailingDotIsTheSamePattern(t *testing.T) {
	// Giving the same pattern twice keeps the last policy, whichever
	// spelling each one uses.
	tests := []struct {
		name          string
		first, second string
	}{
		{"ExactThenFQDN", "api.example.com", "api.example.com."},
		{"FQDNThenExact", "api.example.com.", "API.example.com"},
		{"WildcardThenFQDN", "*.example.com", "*.example.com."},
		{"FQDNThenWildcard", "*.example.com.", "*.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 503}}}
			tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
				retrytransport.WithHostPolicy(tt.first, policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
				retrytransport.WithHostPolicy(tt.second, policy.Policy{MaxAttempts: 4, Backoff: halfJitter}),
			))
			for _, u := range []string{"http://api.example.com/x", "http://api.example.com./x"} {
				if got := attemptsFor(t, tr, s, u); got != 4 {
					t.Errorf("WithHostPolicy(%q), then (%q): RoundTrip(%s): attempts = %d; want 4 (the last policy)", tt.first, tt.second, u, got)
				}
			}
		})
	}
}

// TestScopeIgnoresTrailingDot: a fully qualified name with its trailing
// dot names the same server, so it shares the quota bucket and statistics
// of the name without it, with or without a port.
func TestScopeIgnoresTrailingDot(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr := newRig(t, s, policy.Standard())
	for _, u := range []string{"http://api.example.com/", "http://api.example.com./", "http://api.example.com.:8080/", "http://api.example.com:8080/"} {
		s.mu.Lock()
		s.calls = 0
		s.mu.Unlock()
		if n := attemptsFor(t, tr, s, u); n != 2 {
			t.Fatalf("GET %s: %d attempts; want 2", u, n)
		}
	}
	var got []string
	for _, st := range tr.Snapshot() {
		got = append(got, st.Scope)
	}
	if diff := cmp.Diff([]string{"api.example.com", "api.example.com:8080"}, got); diff != "" {
		t.Errorf("Snapshot() scopes mismatch (-want +got):\n%s", diff)
	}
}

// TestScopeIsCanonicalHost: the default scope is the request URL's
// host:port in lower case, non-ASCII letters included, and without the
// trailing dot, so spellings of one server share one quota bucket and one
// Snapshot entry, and every Event names the scope in that form.
func TestScopeIsCanonicalHost(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr := newRig(t, s, policy.Standard(), recordEvents())
	urls := []string{
		"http://API.Example.test:8443/", "http://api.example.test:8443/", "http://Api.EXAMPLE.test.:8443/",
		"http://bÜcher.example/", "http://bücher.example./", "http://[::1]:8080/", "http://[FE80::1]/",
	}
	for _, u := range urls {
		s.mu.Lock()
		s.calls = 0
		s.mu.Unlock()
		if n := attemptsFor(t, tr, s, u); n != 2 {
			t.Fatalf("GET %s: %d attempts; want 2", u, n)
		}
	}
	want := map[string]uint64{"api.example.test:8443": 6, "bücher.example": 4, "[::1]:8080": 2, "[fe80::1]": 2} // attempts
	got := map[string]uint64{}
	for _, st := range tr.Snapshot() {
		got[st.Scope] = st.Attempts
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Snapshot() attempts by scope mismatch (-want +got):\n%s", diff)
	}
	for _, ev := range tr.heard() {
		if _, ok := want[ev.Scope]; !ok {
			t.Errorf("Event for %s: Scope %q; want one of %q", ev.Request.URL, ev.Scope, slices.Sorted(maps.Keys(want)))
		}
	}
}

// TestHostPolicyIgnoresNonASCIICase: patterns match in any case, also
// when a hostname's only capitals are non-ASCII letters, and a pattern
// written with such capitals matches the hostname in lower case.
func TestHostPolicyIgnoresNonASCIICase(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
		retrytransport.WithHostPolicy("bücher.example", policy.None()),
		retrytransport.WithHostPolicy("*.ÿ.example", policy.Policy{MaxAttempts: 3, Backoff: halfJitter}),
		retrytransport.WithHostPolicy("ÉCOLE.example", policy.Policy{MaxAttempts: 4, Backoff: halfJitter}),
	))
	tests := []struct {
		url  string
		want int // attempts; the default policy makes 2
	}{
		{"http://bücher.example/x", 1},
		{"http://bÜcher.example/x", 1},
		{"http://BÜCHER.EXAMPLE/x", 1},
		{"http://bÜcher.example.:8443/x", 1},
		{"http://a.Ÿ.example/x", 3},
		{"http://a.ÿ.example/x", 3},
		{"http://école.example/x", 4},
		{"http://École.example/x", 4},
		{"http://Ÿ.example/x", 2}, // the wildcard's domain itself
		{"http://bucher.example/x", 2},
	}
	for _, tt := range tests {
		if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d", tt.url, got, tt.want)
		}
	}
}

// TestHostPolicyIsMapLookup: a Transport given a policy.Map picks, for
// every hostname, the policy that Map.Lookup returns for it, whatever its
// case, non-ASCII letters and trailing dot.
func TestHostPolicyIsMapLookup(t *testing.T) {
	m := policy.Map{
		Default: policy.Policy{MaxAttempts: 2},
		Hosts: map[string]policy.Policy{
			"api.example.com":  {MaxAttempts: 3},
			"*.example.com":    {MaxAttempts: 4},
			"bücher.example":   {MaxAttempts: 5},
			"*.Ÿ.example":      {MaxAttempts: 6},
			"key.example":      {MaxAttempts: 7},
			"straße.example.":  {MaxAttempts: 8},
			"istanbul.example": {MaxAttempts: 9},
			"*.ÉCOLE.example":  {MaxAttempts: 10},
			"σίσυφος.example":  {MaxAttempts: 11},
			"127.0.0.1":        {MaxAttempts: 12},
			"[::1]":            {MaxAttempts: 13},
		},
	}
	hosts := []string{
		"api.example.com", "API.EXAMPLE.COM.", "a.Example.com", "example.com",
		"bücher.example", "bÜcher.example", "BÜCHER.example.",
		"ÿ.example", "a.ÿ.example", "a.Ÿ.example", "A.Ÿ.EXAMPLE.",
		"key.example", "\u212Aey.example", // KELVIN SIGN, which lower-cases to 'k'
		"straße.example", "STRAßE.example", "STRASSE.example",
		"İstanbul.example", "istanbul.example", "ISTANBUL.example",
		"a.école.example", "a.École.example",
		"σίσυφος.example", "ΣΊΣΥΦΟΣ.example",
		"127.0.0.1", "[::1]", "elsewhere.org",
	}
	s := &script{steps: []step{{status: 503}}}
	clock := faketime.NewAt(time.Now())
	tr := retrytransport.New(mockBase(s), retrytransport.WithPolicyMap(m), retrytransport.WithClock(clock.Now, clock.Sleep))
	for _, host := range hosts {
		u := "http://" + host + ":8443/x"
		want := m.Lookup(strings.Trim(host, "[]")).MaxAttempts
		if got := attemptsFor(t, tr, s, u); got != want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d, as Map.Lookup(%q) says", u, got, want, host)
		}
	}
}

func TestHostPolicies(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
		retrytransport.WithHostPolicy("api.example.com", policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
		retrytransport.WithHostPolicy("*.example.com", policy.Policy{MaxAttempts: 3, Backoff: halfJitter}),
		retrytransport.WithHostPolicy("*.eu.example.com", policy.Policy{MaxAttempts: 4, Backoff: halfJitter}),
	))
	tests := []struct {
		url  string
		want int
	}{
		{"http://api.example.com/x", 5},
		{"http://API.Example.COM:8443/x", 5},
		{"http://other.example.com/x", 3},
		{"http://a.b.example.com/x", 3},
		{"http://s3.eu.example.com/x", 4},
		{"http://example.com/x", 2},
		{"http://elsewhere.org/x", 2},
	}
	for _, tt := range tests {
		if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d", tt.url, got, tt.want)
		}
	}
}

// TestHostPolicyIPLiterals: an IP literal pattern, without a port, covers
// every port of its address, and no other address.
func TestHostPolicyIPLiterals(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{MaxAttempts: 2}, withOptions(
		retrytransport.WithHostPolicy("[::1]", policy.Policy{MaxAttempts: 4, Backoff: halfJitter}),
		retrytransport.WithHostPolicy("127.0.0.1", policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
	))
	for _, tt := range []struct {
		url  string
		want int
	}{
		{"http://[::1]:8080/", 4},
		{"http://127.0.0.1:9/", 5},
		{"http://127.0.0.1:8080/", 5},
		{"http://127.0.0.1/", 5},
		{"http://[::2]/", 2},
		{"http://127.0.0.2:8080/", 2},
	} {
		if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d", tt.url, got, tt.want)
		}
	}
}

func TestWithPolicyMap(t *testing.T) {
	m, err := policy.LoadMap(strings.NewReader(`{
		"default": {"maxAttempts": 2},
		"hosts": {"api.example.com": {"maxAttempts": 4}, "*.example.org": {"preset": "none"}}
	}`))
	if err != nil {
		t.Fatalf("LoadMap: %v", err)
	}
	s := &script{steps: []step{{status: 503}}}
	clock := faketime.NewAt(time.Now())
	tr := retrytransport.New(mockBase(s), retrytransport.WithPolicyMap(m), retrytransport.WithClock(clock.Now, clock.Sleep))
	for _, tt := range []struct {
		url  string
		want int
	}{{"http://api.example.com/", 4}, {"http://a.example.org/", 1}, {"http://other.example/", 2}} {
		if got := attemptsFor(t, tr, s, tt.url); got != tt.want {
			t.Errorf("RoundTrip(%s): attempts = %d; want %d", tt.url, got, tt.want)
		}
	}
}
