package policy_test

import (
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport/policy"
)

// A fully qualified name ends in a dot ("api.example.com."), and DNS treats
// it as the same name as the one without. These tests check that a Map
// does too, for the hostname it looks up and for its patterns.

func TestMapLookupIgnoresTrailingDot(t *testing.T) {
	maps := []struct {
		name string
		m    policy.Map
	}{
		{"Plain", policy.Map{
			Default: policy.Policy{MaxAttempts: 2},
			Hosts: map[string]policy.Policy{
				"api.example.com": {MaxAttempts: 5},
				"*.example.com":   {MaxAttempts: 3},
			},
		}},
		{"TrailingDot", policy.Map{
			Default: policy.Policy{MaxAttempts: 2},
			Hosts: map[string]policy.Policy{
				"api.example.com.": {MaxAttempts: 5},
				"*.example.com.":   {MaxAttempts: 3},
			},
		}},
		{"UpperCaseTrailingDot", policy.Map{
			Default: policy.Policy{MaxAttempts: 2},
			Hosts: map[string]policy.Policy{
				"API.Example.COM.": {MaxAttempts: 5},
				"*.EXAMPLE.com.":   {MaxAttempts: 3},
			},
		}},
	}
	tests := []struct {
		host     string
		attempts int // MaxAttempts of the policy Lookup should pick
	}{
		{"api.example.com.", 5},
		{"API.Example.COM.", 5},
		{"api.example.com", 5},
		{"a.example.com.", 3},
		{"A.B.Example.com.", 3},
		{"a.example.com", 3},
		{"example.com.", 2},           // the wildcard's domain itself
		{"api.example.com..", 2},      // two dots: not the same name
		{"api.example.com.evil.", 2},  // a prefix is not a match
		{"notexample.com.", 2},        // a suffix, but not a subdomain
		{"a.example.com.evil.org", 2}, // nor is the domain in the middle
		{".", 2},
	}
	for _, mm := range maps {
		t.Run(mm.name, func(t *testing.T) {
			if err := mm.m.Validate(); err != nil {
				t.Fatalf("Map.Validate() = %v; want nil", err)
			}
			for _, tt := range tests {
				if got := mm.m.Lookup(tt.host).MaxAttempts; got != tt.attempts {
					t.Errorf("Lookup(%q).MaxAttempts = %d; want %d", tt.host, got, tt.attempts)
				}
			}
		})
	}
}

func TestLoadMapTrailingDotErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"LoneDot", `{"hosts": {".": {}}}`, `policy: hosts["."]: a lone "."; want a hostname or "*." and a domain`},
		{"TwoDots", `{"hosts": {"a.com..": {}}}`, `policy: hosts["a.com.."]: ".." at the end; want at most one trailing "."`},
		{"SameWithTrailingDot", `{"hosts": {"a.com": {}, "a.com.": {}}}`, `policy: hosts["a.com."]: the same pattern as hosts["a.com"]; want each pattern once`},
		{"SameWildcardWithTrailingDot", `{"hosts": {"*.A.com.": {}, "*.a.com": {}}}`, `policy: hosts["*.a.com"]: the same pattern as hosts["*.A.com."]; want each pattern once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.LoadMap(strings.NewReader(tt.doc))
			if err == nil || err.Error() != tt.want {
				t.Errorf("LoadMap(%s) error = %v; want %s", tt.doc, err, tt.want)
			}
		})
	}
}

func TestMapValidateTrailingDotIsTheSamePattern(t *testing.T) {
	m := policy.Map{Hosts: map[string]policy.Policy{"a.com": {}, "a.com.": {}}}
	want := `policy: hosts["a.com."]: the same pattern as hosts["a.com"]; want each pattern once`
	if err := m.Validate(); err == nil || err.Error() != want {
		t.Errorf("Map{Hosts: a.com, a.com.}.Validate() = %v; want %s", err, want)
	}
}

// errorString returns err's text, or "" for a nil error.
func errorString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// orNil returns s, or "nil" for "".
func orNil(s string) string {
	if s == "" {
		return "nil"
	}
	return s
}
