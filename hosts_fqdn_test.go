package retrytransport_test

import (
	"net/http"
	"testing"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// A fully qualified name ends in a dot ("api.example.com."), and DNS treats
// it as the same name as the one without. These tests check that host
// policies do too, for the request's hostname and for the pattern.

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
			tr, _ := newTransport(t, s, policy.Policy{MaxAttempts: 2},
				retrytransport.WithHostPolicy(sp.exact, policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
				retrytransport.WithHostPolicy(sp.wild, policy.Policy{MaxAttempts: 3, Backoff: halfJitter}),
			)
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
			tr, _ := newTransport(t, s, policy.Policy{MaxAttempts: 2},
				retrytransport.WithHostPolicy(tt.first, policy.Policy{MaxAttempts: 5, Backoff: halfJitter}),
				retrytransport.WithHostPolicy(tt.second, policy.Policy{MaxAttempts: 4, Backoff: halfJitter}),
			)
			for _, u := range []string{"http://api.example.com/x", "http://api.example.com./x"} {
				if got := attemptsFor(t, tr, s, u); got != 4 {
					t.Errorf("WithHostPolicy(%q), then (%q): RoundTrip(%s): attempts = %d; want 4 (the last policy)", tt.first, tt.second, u, got)
				}
			}
		})
	}
}

// BenchmarkOverheadHostPolicy is BenchmarkOverhead's GET through a
// Transport with an exact and a wildcard host policy, for hostnames with
// and without the trailing dot. Finding the policy must not allocate.
func BenchmarkOverheadHostPolicy(b *testing.B) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	tr := retrytransport.New(stub,
		retrytransport.WithHostPolicy("api.example.com", policy.Standard()),
		retrytransport.WithHostPolicy("*.example.com", policy.Standard()),
	)
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"GET/exact", "http://api.example.com/"},
		{"GET/exactFQDN", "http://api.example.com./"},
		{"GET/wildcardFQDN", "http://a.example.com./"},
		{"GET/default", "http://elsewhere.org/"},
	} {
		req, err := http.NewRequest("GET", tc.url, nil)
		if err != nil {
			b.Fatalf("http.NewRequest(GET, %q): %v", tc.url, err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
