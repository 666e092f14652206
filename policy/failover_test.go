package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

func TestParseEndpointAcceptsHostPortAndScheme(t *testing.T) {
	tests := []struct {
		in   string
		want policy.Endpoint
	}{
		{"h", policy.Endpoint{Host: "h"}},
		{"h:443", policy.Endpoint{Host: "h:443"}},
		{"https://h:8443", policy.Endpoint{Scheme: "https", Host: "h:8443"}},
		{"HTTPS://h", policy.Endpoint{Scheme: "https", Host: "h"}},
		{"http://h", policy.Endpoint{Scheme: "http", Host: "h"}},
		{"[::1]:80", policy.Endpoint{Host: "[::1]:80"}},
		{"[::1]", policy.Endpoint{Host: "[::1]"}},
		{"https://[fe80::1]:443", policy.Endpoint{Scheme: "https", Host: "[fe80::1]:443"}},
		{"10.0.0.1:8080", policy.Endpoint{Host: "10.0.0.1:8080"}},
		{"h:1", policy.Endpoint{Host: "h:1"}},
		{"h:65535", policy.Endpoint{Host: "h:65535"}},
		{"eu.example.com/", policy.Endpoint{Host: "eu.example.com"}},
		{"https://eu.example.com:8443/", policy.Endpoint{Scheme: "https", Host: "eu.example.com:8443"}},
		{"eu.example.com.", policy.Endpoint{Host: "eu.example.com."}},
		{"my_host-1.example.com", policy.Endpoint{Host: "my_host-1.example.com"}},
	}
	for _, tt := range tests {
		got, err := policy.ParseEndpoint(tt.in)
		if err != nil {
			t.Errorf("ParseEndpoint(%q) error = %v; want nil", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseEndpoint(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseEndpointRejectsOtherForms(t *testing.T) {
	for _, in := range []string{
		"ftp://h", "h/path", "https://h/path", "h:99999", "h:65536", "h:", "h:-1", "user@h",
		"https://user:pw@h", "", "https://", "h?q=1", "h#frag", " h", "h h",
		"h:0", "h:+80", "h:0x50", ":443", "https://:443", "/", "://h", "http:/h", "https:h",
		"10.0.0.1:8080:9090", "h:80:90", "::1", "fe80::1", "fe80::1:443", "[::1", "::1]",
		"[]", "[]:443", "[h]", "[10.0.0.1]", "[::1]x", "[::1]:", "[::1]:0", "[::1]:65536",
		"[fe80::1%25eth0]", "https://h/?q", "h\\x", "h%20", "*.example.com", ".h", "a..b",
		"h\t", "h\x00",
	} {
		got, err := policy.ParseEndpoint(in)
		if err == nil {
			t.Errorf("ParseEndpoint(%q) = %+v, nil; want an error", in, got)
			continue
		}
		if prefix := fmt.Sprintf("policy: endpoint %q", in); !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("ParseEndpoint(%q) error = %q; want one starting %q", in, err, prefix)
		}
		if got != (policy.Endpoint{}) {
			t.Errorf("ParseEndpoint(%q) = %+v with an error; want the zero Endpoint", in, got)
		}
		p := policy.Policy{Failover: &policy.Failover{Endpoints: []string{in}}}
		if verr := p.Validate(); verr == nil || !strings.Contains(verr.Error(), err.Error()[len("policy: "):]) {
			t.Errorf("Validate(Failover.Endpoints %q) = %v; want it to contain %q", p.Failover.Endpoints, verr, err)
		}
		doc, _ := json.Marshal(map[string]map[string][]string{"failover": {"endpoints": {in}}})
		if _, lerr := policy.Load(bytes.NewReader(doc)); lerr == nil || !strings.Contains(lerr.Error(), "failover.endpoints[0]") {
			t.Errorf("Load(%s) error = %v; want one about failover.endpoints[0]", doc, lerr)
		}
	}
}

// TestParseEndpointErrorSaysWhy checks that the error of an endpoint that
// could be read more than one way says what is wrong and how to write it.
func TestParseEndpointErrorSaysWhy(t *testing.T) {
	tests := []struct{ in, want string }{
		{"fe80::1:443", `an IPv6 address without brackets; write "[fe80::1:443]", or "[fe80::1]:443" for port 443`},
		{"::1", `an IPv6 address without brackets; write "[::1]"`},
		{"10.0.0.1:8080:9090", `more than one ':' outside brackets`},
		{"h:0", `port "0" is not a number 1..65535`},
		{"h:", `port "" is not a number 1..65535`},
		{":443", "empty host"},
		{"https://", "empty host"},
		{"ftp://h", `scheme "ftp" is not http or https`},
		{"https://h/x", `a path ("/x")`},
		{"h?q=1", `a query ("?q=1")`},
		{"h#f", `a fragment ("#f")`},
		{"u:p@h", "user information"},
		{"[h]:80", `"[h]" is not an IPv6 address in brackets`},
		{"[::1]x", `"x" after "]"; want nothing or ":" and a port`},
		{"h h", `' ' in host "h h"`},
		{"a..b", `empty label in host "a..b"`},
	}
	for _, tt := range tests {
		_, err := policy.ParseEndpoint(tt.in)
		want := fmt.Sprintf("policy: endpoint %q: %s", tt.in, tt.want)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseEndpoint(%q) error = %v; want one starting %s", tt.in, err, want)
		}
	}
}

func TestEndpointURLReplacesHostAndScheme(t *testing.T) {
	u, _ := url.Parse("http://primary.example.com/a/b?c=d")
	tests := []struct {
		e    policy.Endpoint
		want string
	}{
		{policy.Endpoint{Host: "b.example.com:8080"}, "http://b.example.com:8080/a/b?c=d"},
		{policy.Endpoint{Scheme: "https", Host: "c.example.com"}, "https://c.example.com/a/b?c=d"},
	}
	for _, tt := range tests {
		if got := tt.e.URL(u).String(); got != tt.want {
			t.Errorf("%+v.URL(%v) = %s; want %s", tt.e, u, got, tt.want)
		}
	}
	if u.String() != "http://primary.example.com/a/b?c=d" {
		t.Errorf("Endpoint.URL changed its argument to %v; want it unchanged", u)
	}
}

func TestLocationModeString(t *testing.T) {
	tests := []struct {
		m    policy.LocationMode
		want string
	}{
		{policy.PrimaryThenSecondary, "PrimaryThenSecondary"},
		{policy.PrimaryOnly, "PrimaryOnly"},
		{policy.SecondaryOnly, "SecondaryOnly"},
		{policy.SecondaryThenPrimary, "SecondaryThenPrimary"},
		{4, "LocationMode(4)"},
		{-1, "LocationMode(-1)"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("LocationMode(%d).String() = %q; want %q", int(tt.m), got, tt.want)
		}
	}
	var zero policy.LocationMode
	if zero != policy.PrimaryThenSecondary {
		t.Errorf("zero LocationMode = %v; want PrimaryThenSecondary", zero)
	}
}

func TestParseLocationModeInAnyCase(t *testing.T) {
	for _, m := range []policy.LocationMode{policy.PrimaryThenSecondary, policy.PrimaryOnly, policy.SecondaryOnly, policy.SecondaryThenPrimary} {
		for _, s := range []string{m.String(), strings.ToLower(m.String()), strings.ToUpper(m.String())} {
			if got, err := policy.ParseLocationMode(s); err != nil || got != m {
				t.Errorf("ParseLocationMode(%q) = %v, %v; want %v, nil", s, got, err, m)
			}
		}
	}
}

func TestParseLocationModeRejectsUnknownNames(t *testing.T) {
	for _, s := range []string{"", "nearest", "Primary", "LocationMode(1)", "1"} {
		got, err := policy.ParseLocationMode(s)
		want := `policy: unknown location mode "` + s + `"; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`
		if err == nil || err.Error() != want || got != policy.PrimaryThenSecondary {
			t.Errorf("ParseLocationMode(%q) = %v, %v; want PrimaryThenSecondary, %s", s, got, err, want)
		}
	}
}

func TestParseLocationModeSuggestsTheName(t *testing.T) {
	for s, name := range map[string]string{" PrimaryOnly": "PrimaryOnly", "primary-only": "PrimaryOnly", "SecondaryThenPrimray": "SecondaryThenPrimary"} {
		got, err := policy.ParseLocationMode(s)
		want := `policy: unknown location mode "` + s + `"; did you mean "` + name + `"?`
		if err == nil || err.Error() != want || got != policy.PrimaryThenSecondary {
			t.Errorf("ParseLocationMode(%q) = %v, %v; want PrimaryThenSecondary, %s", s, got, err, want)
		}
	}
}

func TestValidateAcceptsFailoverAndHedge(t *testing.T) {
	for _, p := range []policy.Policy{
		{Failover: &policy.Failover{Endpoints: []string{"b", "b:443", "https://c:8443", "[::1]:80"}, Mode: policy.SecondaryThenPrimary, Methods: []string{"GET", "PUT"}}},
		{Failover: &policy.Failover{Endpoints: []string{"b"}, Mode: policy.PrimaryOnly}},
		{Failover: &policy.Failover{Endpoints: []string{"b"}, Mode: policy.SecondaryOnly, Methods: []string{}}},
		{Hedge: &policy.Hedge{Delay: time.Second, Quantile: 0.999, MinDelay: time.Millisecond, MaxHedges: policy.HedgeLimit}},
		{Hedge: &policy.Hedge{Delay: time.Second}},
		{Hedge: &policy.Hedge{Quantile: 0.5}},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v; want nil", p, err)
		}
	}
}

// failover and hedged return a policy with only f, or h, set.
func failover(f *policy.Failover) policy.Policy { return policy.Policy{Failover: f} }
func hedged(h *policy.Hedge) policy.Policy      { return policy.Policy{Hedge: h} }

// hedgesNothing is Validate's error for a Hedge with neither a Delay nor
// a Quantile.
const hedgesNothing = "policy: Hedge has neither a Delay > 0 nor a Quantile > 0, so it would hedge nothing; want one of them, or a nil Hedge for no hedging"

func TestValidateRejectsFailoverAndHedge(t *testing.T) {
	b := []string{"b.example.com"}
	tests := []struct {
		name string
		p    policy.Policy
		want string // the whole message of the only error
	}{
		{"ModeUnnamed", failover(&policy.Failover{Endpoints: b, Mode: 4}), "policy: Failover.Mode = 4; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary"},
		{"ModeNegative", failover(&policy.Failover{Endpoints: b, Mode: -1}), "policy: Failover.Mode = -1; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary"},
		{"WithoutEndpoints", failover(&policy.Failover{}), "policy: Failover.Endpoints is empty; want at least one alternate host, or a nil Failover for none"},
		{"EmptyEndpoints", failover(&policy.Failover{Endpoints: []string{}, Methods: []string{"GET"}}), "policy: Failover.Endpoints is empty; want at least one alternate host, or a nil Failover for none"},
		{"PrimaryOnlyWithoutEndpoints", failover(&policy.Failover{Mode: policy.PrimaryOnly}), "policy: Failover.Endpoints is empty; want at least one alternate host, or a nil Failover for none"},
		{"SecondaryOnlyWithoutEndpoints", failover(&policy.Failover{Mode: policy.SecondaryOnly}), "policy: Failover.Endpoints is empty but Failover.Mode = SecondaryOnly; want at least one secondary"},
		{"SecondaryThenPrimaryWithoutEndpoints", failover(&policy.Failover{Mode: policy.SecondaryThenPrimary, Endpoints: []string{}}), "policy: Failover.Endpoints is empty but Failover.Mode = SecondaryThenPrimary; want at least one secondary"},
		{"TooManyEndpoints", failover(&policy.Failover{Endpoints: hostsOf(64)}), "policy: Failover.Endpoints has 64 entries; want at most MaxEndpoints (63)"},
		{"MethodWithSpace", failover(&policy.Failover{Endpoints: b, Methods: []string{"GET", "GET /"}}), `policy: Failover.Methods[1] = "GET /"; want a method name such as GET`},
		{"EmptyMethod", failover(&policy.Failover{Endpoints: b, Methods: []string{""}}), `policy: Failover.Methods[0] = ""; want a method name such as GET`},
		{"HedgeNegativeDelay", hedged(&policy.Hedge{Delay: -time.Millisecond, Quantile: 0.5}), "policy: Hedge.Delay = -1ms; want >= 0 (0: Quantile alone)"},
		{"HedgeQuantileOne", hedged(&policy.Hedge{Quantile: 1}), "policy: Hedge.Quantile = 1; want 0 <= q < 1 (0: Delay alone)"},
		{"HedgeQuantileNegative", hedged(&policy.Hedge{Delay: time.Second, Quantile: -0.1}), "policy: Hedge.Quantile = -0.1; want 0 <= q < 1 (0: Delay alone)"},
		{"HedgeQuantileNaN", hedged(&policy.Hedge{Delay: time.Second, Quantile: math.NaN()}), "policy: Hedge.Quantile = NaN; want 0 <= q < 1 (0: Delay alone)"},
		{"HedgeNegativeMinDelay", hedged(&policy.Hedge{Quantile: 0.9, MinDelay: -time.Second}), "policy: Hedge.MinDelay = -1s; want >= 0"},
		{"HedgeNegativeMax", hedged(&policy.Hedge{Delay: time.Second, MaxHedges: -1}), "policy: Hedge.MaxHedges = -1; want 1..4, or 0 for 1"},
		{"HedgeMaxAboveLimit", hedged(&policy.Hedge{Delay: time.Second, MaxHedges: policy.HedgeLimit + 1}), "policy: Hedge.MaxHedges = 5; want 1..4, or 0 for 1"},
		{"HedgeMaxInt", hedged(&policy.Hedge{Delay: time.Second, MaxHedges: math.MaxInt}), fmt.Sprintf("policy: Hedge.MaxHedges = %d; want 1..4, or 0 for 1", math.MaxInt)},
		{"HedgeNothing", hedged(&policy.Hedge{}), hedgesNothing},
		{"HedgeNothingButMinDelayAndMax", hedged(&policy.Hedge{MinDelay: time.Second, MaxHedges: 2}), hedgesNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate(%+v) = %v; want %s", tt.p, err, tt.want)
			}
		})
	}
}

// TestValidateNamesTheBadEndpoint checks that each endpoint ParseEndpoint
// rejects gives an error naming its index and saying what is wrong.
func TestValidateNamesTheBadEndpoint(t *testing.T) {
	endpoints := []string{"b.example.com", "ftp://c.example.com", "d.example.com/path"}
	p := policy.Policy{Failover: &policy.Failover{Endpoints: endpoints}}
	errs := unwrapAll(p.Validate())
	if len(errs) != 2 {
		t.Fatalf("Validate(Failover.Endpoints %q) = %v; want 2 errors", endpoints, errs)
	}
	for i, tt := range []struct{ index, endpoint, reason string }{
		{"[1]", "ftp://c.example.com", "is not http or https"},
		{"[2]", "d.example.com/path", "a path"},
	} {
		msg := errs[i].Error()
		if !strings.HasPrefix(msg, "policy: Failover.Endpoints"+tt.index+": ") || !strings.Contains(msg, tt.endpoint) || !strings.Contains(msg, tt.reason) || strings.Contains(msg, "%!") {
			t.Errorf("Validate(Failover.Endpoints %q) error %d = %q; want one starting \"policy: Failover.Endpoints%s: \" that names %q and says %q", endpoints, i, msg, tt.index, tt.endpoint, tt.reason)
		}
	}
}

// hostsOf returns n distinct alternate endpoints.
func hostsOf(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("alt%d.example", i)
	}
	return hosts
}

// sendsFirstAttempt reports whether a transport with p sends a GET's first
// attempt, or fails the request before it, with the error.
func sendsFirstAttempt(t *testing.T, p policy.Policy) (bool, error) {
	t.Helper()
	sent := false
	base := roundTripper(func(req *http.Request) (*http.Response, error) {
		sent = true
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	req, err := http.NewRequest("GET", "http://primary.example/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := retrytransport.New(base, retrytransport.WithPolicy(p)).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return sent, err
}

// roundTripper is a base RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestFailoverTheTransportCannotUseIsRefused lists every Failover that New
// cannot use, each of which fails every request of its policy before the
// first attempt, and checks that Validate refuses it, and Load too when
// the schema can write it. The last row, at the bound, is used.
func TestFailoverTheTransportCannotUseIsRefused(t *testing.T) {
	b := []string{"b.example"}
	tests := []struct {
		name      string
		f         policy.Failover
		field     string // the field Validate's error names; "" for a Failover the transport uses
		inJSON    bool   // the schema can write f, for Load
		jsonField string // the member Load's error names; "" for a Failover the transport uses
	}{
		{"TooManyEndpoints", policy.Failover{Endpoints: hostsOf(policy.MaxEndpoints + 1)}, "Failover.Endpoints", true, "failover.endpoints"},
		{"TooManySecondaryOnly", policy.Failover{Endpoints: hostsOf(policy.MaxEndpoints + 1), Mode: policy.SecondaryOnly}, "Failover.Endpoints", true, "failover.endpoints"},
		{"TooManySecondaryThenPrimary", policy.Failover{Endpoints: hostsOf(100), Mode: policy.SecondaryThenPrimary}, "Failover.Endpoints", true, "failover.endpoints"},
		{"BadEndpoint", policy.Failover{Endpoints: []string{"b.example", "c.example/path"}}, "Failover.Endpoints[1]", true, "failover.endpoints[1]"},
		{"BadEndpointSecondaryOnly", policy.Failover{Endpoints: []string{"ftp://b.example"}, Mode: policy.SecondaryOnly}, "Failover.Endpoints[0]", true, "failover.endpoints[0]"},
		{"BadEndpointSecondaryThenPrimary", policy.Failover{Endpoints: []string{"b.example:0"}, Mode: policy.SecondaryThenPrimary}, "Failover.Endpoints[0]", true, "failover.endpoints[0]"},
		{"ModeAbove", policy.Failover{Endpoints: b, Mode: policy.SecondaryThenPrimary + 1}, "Failover.Mode", false, ""},
		{"ModeNegative", policy.Failover{Endpoints: b, Mode: -1}, "Failover.Mode", false, ""},
		{"MaxEndpoints", policy.Failover{Endpoints: hostsOf(policy.MaxEndpoints)}, "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Policy{Failover: &tt.f}
			sent, rtErr := sendsFirstAttempt(t, p)
			if sent != (tt.field == "") {
				t.Errorf("RoundTrip through New(%s) sent the first attempt: %t (error %v); want %t", tt.name, sent, rtErr, tt.field == "")
			}
			err := p.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate(%s) = %v; want nil", tt.name, err)
			case tt.field != "" && (err == nil || !strings.Contains(err.Error(), "policy: "+tt.field)):
				t.Errorf("Validate(%s) = %v; want an error naming %s", tt.name, err, tt.field)
			}
			if !tt.inJSON {
				return
			}
			doc, _ := json.Marshal(map[string]any{"failover": map[string]any{"endpoints": tt.f.Endpoints, "mode": tt.f.Mode.String()}})
			_, err = policy.Load(bytes.NewReader(doc))
			switch {
			case tt.jsonField == "" && err != nil:
				t.Errorf("Load(%s) = %v; want nil", tt.name, err)
			case tt.jsonField != "" && (err == nil || !strings.Contains(err.Error(), "policy: "+tt.jsonField+" ")):
				t.Errorf("Load(%s) = %v; want an error naming %s", tt.name, err, tt.jsonField)
			}
		})
	}
}

// FuzzParseEndpoint checks that an endpoint ParseEndpoint accepts is one
// URL host that reads back the same: a host, at most one port 1..65535,
// and an IPv6 address only in brackets.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"h", "h:443", "https://h:8443/", "[::1]", "[fe80::1]:443", "fe80::1:443", "10.0.0.1:8080:9090", "h:0", "u@h", "bücher.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := policy.ParseEndpoint(s)
		if err != nil {
			return
		}
		u, perr := url.Parse("http://" + e.Host)
		if perr != nil || u.Host != e.Host || u.Hostname() == "" || u.Path != "" {
			t.Fatalf("ParseEndpoint(%q) = %+v; url.Parse(http://%s) = %v, %v; want the same host back", s, e, e.Host, u, perr)
		}
		if h := u.Hostname(); strings.Contains(h, ":") != strings.HasPrefix(e.Host, "[") {
			t.Fatalf("ParseEndpoint(%q) = %+v; want brackets exactly around an IPv6 address", s, e)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
				t.Fatalf("ParseEndpoint(%q) = %+v; port %q not in 1..65535", s, e, p)
			}
		}
		if strings.HasSuffix(u.Host, ":") {
			t.Fatalf("ParseEndpoint(%q) = %+v; want no empty port", s, e)
		}
		if e.Scheme != "" && e.Scheme != "http" && e.Scheme != "https" {
			t.Fatalf("ParseEndpoint(%q) = %+v; want scheme http or https", s, e)
		}
	})
}
