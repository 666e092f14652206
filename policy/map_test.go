package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
)

const mapDocument = `{
 "default": {"preset": "standard"},
 "hosts": {
  "api.example.com": {"maxAttempts": 5},
  "*.example.com": {"preset": "none"},
  "*.eu.example.com": {"maxAttempts": 4, "backoff": {"type": "constant", "interval": "1s"}},
  "[::1]": {"maxAttempts": 2},
  "Storage.Example.NET": {"preset": "azure-storage-exponential"}
 }
}`

func TestLoadMap(t *testing.T) {
	got, err := policy.LoadMap(strings.NewReader(mapDocument))
	if err != nil {
		t.Fatalf("LoadMap(mapDocument) error = %v; want nil", err)
	}
	want := policy.Map{
		Default: policy.Standard(),
		Hosts: map[string]policy.Policy{
			"api.example.com":     {MaxAttempts: 5},
			"*.example.com":       policy.None(),
			"*.eu.example.com":    {MaxAttempts: 4, Backoff: backoff.Constant{Interval: time.Second}},
			"[::1]":               {MaxAttempts: 2},
			"Storage.Example.NET": policy.AzureStorageExponential(),
		},
	}
	if diff := cmp.Diff(want, got, policyOpts); diff != "" {
		t.Errorf("LoadMap(mapDocument) mismatch (-want +got):\n%s", diff)
	}
}

func TestMapLookup(t *testing.T) {
	m, err := policy.LoadMap(strings.NewReader(mapDocument))
	if err != nil {
		t.Fatalf("LoadMap(mapDocument) error = %v", err)
	}
	tests := []struct {
		host     string
		attempts int // MaxAttempts of the policy Lookup should pick
	}{
		{"api.example.com", 5},          // exact beats wildcard
		{"API.Example.COM", 5},          // any case
		{"www.example.com", 1},          // wildcard
		{"a.b.example.com", 1},          // any depth
		{"x.eu.example.com", 4},         // longest wildcard
		{"eu.example.com", 1},           // "*.eu.example.com" needs a name below it
		{"example.com", 3},              // the domain itself: the default
		{"::1", 2},                      // bracketed pattern, bare hostname
		{"storage.example.net", 4},      // pattern written in upper case
		{"other.org", 3},                // default
		{"notexample.com", 3},           // a suffix, but not a subdomain
		{"", 3},                         // nothing matches
		{"*.example.com", 1},            // taken literally: below example.com
		{"[::1]", 2},                    // brackets on the hostname too
		{"x.storage.example.net", 3},    // an exact pattern does not match below it
		{"api.example.com.evil.org", 3}, // nor does a prefix
	}
	for _, tt := range tests {
		if got := m.Lookup(tt.host).MaxAttempts; got != tt.attempts {
			t.Errorf("Lookup(%q).MaxAttempts = %d; want %d", tt.host, got, tt.attempts)
		}
	}
	if got := (policy.Map{}).Lookup("any.host").MaxAttempts; got != 0 {
		t.Errorf("Map{}.Lookup(any.host).MaxAttempts = %d; want 0 (the zero Policy)", got)
	}
}

func TestLoadMapErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"EmptyPattern", `{"hosts": {"": {}}}`, `policy: hosts[""]: empty pattern; want a hostname or "*." and a domain`},
		{"InnerStar", `{"hosts": {"a.*.com": {}}}`, `policy: hosts["a.*.com"]: '*' in a pattern; want it only as a leading "*."`},
		{"BareStar", `{"hosts": {"*": {}}}`, `policy: hosts["*"]: '*' in a pattern; want it only as a leading "*."`},
		{"NothingAfterStar", `{"hosts": {"*.": {}}}`, `policy: hosts["*."]: nothing after "*."; want a domain`},
		{"Scheme", `{"hosts": {"https://api.example.com": {}}}`, `policy: hosts["https://api.example.com"]: has a scheme; patterns match hostnames only, for every scheme`},
		{"Port", `{"hosts": {"api.example.com:443": {}}}`, `policy: hosts["api.example.com:443"]: has a port; patterns match hostnames only, on every port`},
		{"AddressPort", `{"hosts": {"127.0.0.1:8080": {}}}`, `policy: hosts["127.0.0.1:8080"]: has a port; patterns match hostnames only, on every port`},
		{"IPv6Port", `{"hosts": {"[::1]:443": {}}}`, `policy: hosts["[::1]:443"]: has a port; patterns match hostnames only, on every port`},
		{"LeadingDot", `{"hosts": {".example.com": {}}}`, `policy: hosts[".example.com"]: a leading "."; want "*.example.com" for the names below example.com`},
		{"SameInAnotherCase", `{"hosts": {"api.example.com": {}, "API.example.com": {}}}`, `policy: hosts["API.example.com"]: the same pattern as hosts["api.example.com"]; want each pattern once`},
		{"SameWithBrackets", `{"hosts": {"::1": {}, "[::1]": {}}}`, `policy: hosts["[::1]"]: the same pattern as hosts["::1"]; want each pattern once`},
		{"Repeated", `{"hosts": {"a.com": {}, "a.com": {}}}`, `policy: hosts["a.com"]: repeated field; want it once`},
		{"HostPolicy", `{"hosts": {"api.example.com": {"maxAttempts": -1}}}`, `policy: hosts["api.example.com"].maxAttempts = -1; want an integer >= 1, or 0 for the default`},
		{"HostValidate", `{"hosts": {"a.com": {"attemptTimeout": "3s", "maxTotalTime": "2s"}}}`, `policy: hosts["a.com"]: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`},
		{"HostMovedMember", `{"hosts": {"a.com": {"endpoints": ["b.com"]}}}`, `policy: hosts["a.com"].endpoints: moved; write "failover": {"endpoints": [...]}`},
		{"DefaultMovedMember", `{"default": {"disableQuota": true}}`, `policy: default.disableQuota: moved; write "quota": "none"`},
		{"HostQuotaBudget", `{"hosts": {"a.com": {"quota": {"type": "budget"}}}}`, `policy: hosts["a.com"].quota.type = "budget"; want a quota object without "type"; a budget counts requests and goes in "budget": {...}`},
		{"DefaultPolicy", `{"default": {"backoff": {"type": "x"}}}`, `policy: default.backoff.type = "x"; want one of fullJitter, equalJitter, decorrelated, scaledJitter, exponential, incremental, constant, schedule, capped, jittered`},
		{"DefaultValidate", `{"default": {"attemptTimeout": "3s", "maxTotalTime": "2s"}}`, `policy: default: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`},
		{"UnknownField", `{"defaults": {}}`, `policy: defaults: unknown field; did you mean "default"?`},
		{"UnknownFieldNothingClose", `{"routes": {}}`, `policy: routes: unknown field; want one of default, hosts`},
		{"Syntax", "{\"hosts\": {\n  \"a.com\": {\"maxAttempts\": 3}\n  \"b.com\": {}}}", `policy: line 3, column 3: invalid JSON: invalid character '"' after object key:value pair`},
		{"HostsNotObject", `{"hosts": []}`, `policy: hosts = []; want an object of host patterns and their policies`},
		{"Trailing", `{}{}`, `policy: line 1, column 3: unexpected data after the JSON document`},
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

// TestMapValidateSaysWhatIsWrongWithAPattern checks that the error of each
// pattern names it and says what part of a URL or which character it must
// not have, or which dots are wrong.
func TestMapValidateSaysWhatIsWrongWithAPattern(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // after `policy: hosts["<pattern>"]: `; "" for a valid pattern
	}{
		{"api.example.com", ""},
		{"*.example.com", ""},
		{"[::1]", ""},
		{"API.Example.COM.", ""},
		{"127.0.0.1:8080", "has a port; patterns match hostnames only, on every port"},
		{"https://api.example.com", "has a scheme; patterns match hostnames only, for every scheme"},
		{"api.example.com/v1", `has a path ("/v1"); patterns match hostnames only`},
		{"bad host", `has ' ', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{".example.com", `a leading "."; want "*.example.com" for the names below example.com`},
		{"a..example.com", `an empty label; want labels separated by one "."`},
		{"*.127.0.0.1", `"*." before an IP address; want "*." only before a domain`},
		{"api.example.com..", `".." at the end; want at most one trailing "."`},
		{"*.", `nothing after "*."; want a domain`},
	}
	for _, tt := range tests {
		want := ""
		if tt.want != "" {
			want = fmt.Sprintf("policy: hosts[%q]: %s", tt.pattern, tt.want)
		}
		err := policy.Map{Hosts: map[string]policy.Policy{tt.pattern: {}}}.Validate()
		if got := errorString(err); got != want {
			t.Errorf("Map{Hosts: %q}.Validate() = %s; want %s", tt.pattern, orNil(got), orNil(want))
		}
		var fe *policy.FieldError
		if tt.want != "" && (!errors.As(err, &fe) || fe.Field != fmt.Sprintf("hosts[%q]", tt.pattern)) {
			t.Errorf("Map{Hosts: %q}.Validate() = %#v; want a *policy.FieldError for hosts[%q]", tt.pattern, err, tt.pattern)
		}
	}
}

func TestMapValidate(t *testing.T) {
	m := policy.Map{
		Default: policy.Policy{AttemptTimeout: -1},
		Hosts:   map[string]policy.Policy{"ok.com": {}, "bad host": {}, "OK.com": {MaxTotalWait: -2}},
	}
	// Patterns in sorted order, upper case first.
	want := "policy: default: AttemptTimeout = -1ns; want >= 0 (0: none)\n" +
		`policy: hosts["OK.com"]: MaxTotalWait = -2ns; want >= 0 (0: none)` + "\n" +
		`policy: hosts["bad host"]: has ' ', which no hostname has; want letters, digits, '-', '_' and '.'` + "\n" +
		`policy: hosts["ok.com"]: the same pattern as hosts["OK.com"]; want each pattern once`
	if err := m.Validate(); err == nil || err.Error() != want {
		t.Errorf("Map.Validate() = %v; want\n%s", err, want)
	}
	if err := (policy.Map{}).Validate(); err != nil {
		t.Errorf("Map{}.Validate() = %v; want nil", err)
	}
}

func TestMapRoundTrip(t *testing.T) {
	m, err := policy.LoadMap(strings.NewReader(mapDocument))
	if err != nil {
		t.Fatalf("LoadMap(mapDocument) error = %v", err)
	}
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatalf("Map.MarshalJSON() error = %v", err)
	}
	got, err := policy.LoadMap(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("LoadMap(%s) error = %v", b, err)
	}
	if diff := cmp.Diff(m, got, policyOpts); diff != "" {
		t.Errorf("LoadMap(MarshalJSON(m)) mismatch (-want +got):\n%s", diff)
	}
	b, err = policy.Map{Hosts: map[string]policy.Policy{"b.com": policy.None(), "a.com": {}}}.MarshalJSON()
	if want := `{"default":{},"hosts":{"a.com":{},"b.com":{"maxAttempts":1}}}`; err != nil || string(b) != want {
		t.Errorf("Map.MarshalJSON() = %s, %v; want %s, nil", b, err, want)
	}
	_, err = policy.Map{Hosts: map[string]policy.Policy{"a.com": policy.Policy{}.WithDefaults()}}.MarshalJSON()
	if want := `policy: cannot write hosts["a.com"].classify as JSON: it is a func`; err == nil || err.Error() != want {
		t.Errorf("Map.MarshalJSON(with Classify) error = %v; want %s", err, want)
	}
}

func TestMapUnmarshalJSON(t *testing.T) {
	var cfg struct {
		Retries policy.Map `json:"retries"`
	}
	if err := json.Unmarshal([]byte(`{"retries": {"hosts": {"*.a.com": {"preset": "none"}}}}`), &cfg); err != nil {
		t.Fatalf("json.Unmarshal error = %v; want nil", err)
	}
	if got := cfg.Retries.Lookup("x.a.com").MaxAttempts; got != 1 {
		t.Errorf("Lookup(x.a.com).MaxAttempts = %d; want 1", got)
	}
}
