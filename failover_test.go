package retrytransport_test

// Failover: reads that go to the secondary endpoints and writes that stay
// on the primary, location modes, a secondary's 404, endpoints that failed,
// endpoint schemes, and invalid endpoints.

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// endpointServer is a 127.0.0.1 server that answers every request with
// status and counts the requests, with the Host header each came with.
type endpointServer struct {
	*httptest.Server
	n      atomic.Int64
	mu     sync.Mutex
	hosts  []string
	bodies []string
}

func newEndpointServer(t *testing.T, status int) *endpointServer {
	t.Helper()
	s := &endpointServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.n.Add(1)
		s.mu.Lock()
		s.hosts = append(s.hosts, r.Host)
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, s.URL)
	}))
	t.Cleanup(s.Close)
	return s
}

// host returns the server's host:port.
func (s *endpointServer) host() string { return strings.TrimPrefix(s.URL, "http://") }

// endpointsOf returns the Endpoint of each event.
func endpointsOf(evs []retrytransport.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Endpoint)
	}
	return out
}

func TestFailoverSendsReadsToTheSecondary(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 200)
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}}}, backoffUnlessSet(everySecond), recordEvents())

	req := newReq(t, "GET", primary.URL+"/blob?x=1", "")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, resp); got != secondary.URL {
		t.Errorf("body = %q, want the secondary's %q", got, secondary.URL)
	}
	if resp.Request != req {
		t.Error("resp.Request is not the caller's request")
	}
	if req.URL.Host != primary.host() || req.Host != primary.host() {
		t.Errorf("caller's request changed: URL.Host %q, Host %q", req.URL.Host, req.Host)
	}
	if p, s := primary.n.Load(), secondary.n.Load(); p != 1 || s != 1 {
		t.Errorf("primary got %d attempts, secondary %d; want 1 and 1", p, s)
	}
	if secondary.hosts[0] != secondary.host() {
		t.Errorf("secondary got Host %q, want its own %q", secondary.hosts[0], secondary.host())
	}
	want := []string{primary.host(), secondary.host()}
	if got := endpointsOf(tr.heard()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("event endpoints = %q, want %q (the retry's, then the final)", got, want)
	}
	if ev := tr.heard()[1]; !ev.Final || ev.Scope != secondary.host() {
		t.Errorf("final event = %+v; want Final, with the secondary's scope", ev)
	}
}

func TestFailoverKeepsWritesOnThePrimary(t *testing.T) {
	for _, mode := range []policy.LocationMode{policy.PrimaryThenSecondary, policy.SecondaryOnly, policy.SecondaryThenPrimary} {
		t.Run(mode.String(), func(t *testing.T) {
			primary := newEndpointServer(t, 503)
			secondary := newEndpointServer(t, 200)
			tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}, Mode: mode}}, backoffUnlessSet(everySecond))
			for _, method := range []string{"PUT", "DELETE", "POST"} {
				req := newReq(t, method, primary.URL, "payload")
				req.Header.Set("Idempotency-Key", "k1")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 503 {
					t.Errorf("%s: status %d, want the primary's 503", method, resp.StatusCode)
				}
			}
			if n := secondary.n.Load(); n != 0 {
				t.Errorf("the secondary got %d writes, want none", n)
			}
			if n := primary.n.Load(); n != 9 {
				t.Errorf("the primary got %d attempts, want 3 writes x 3 attempts", n)
			}
		})
	}
}

func TestFailoverMethodsLetWritesFailOver(t *testing.T) {
	primary := newEndpointServer(t, 503)
	mirror := newEndpointServer(t, 200)
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{mirror.host()}, Methods: []string{"PUT"}}}, backoffUnlessSet(everySecond))
	resp, err := tr.RoundTrip(newReq(t, "PUT", primary.URL, "payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || mirror.bodies[0] != "payload" {
		t.Errorf("status %d, mirror got %q; want 200 and the whole body", resp.StatusCode, mirror.bodies)
	}
	resp, err = tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("GET: status %d; want 503, as Failover.Methods lists only PUT", resp.StatusCode)
	}
}

func TestLocationModes(t *testing.T) {
	for _, tc := range []struct {
		mode policy.LocationMode
		want string // P: primary, S: secondary, in attempt order
	}{
		{policy.PrimaryOnly, "PPP"},
		{policy.PrimaryThenSecondary, "PSP"},
		{policy.SecondaryOnly, "SSS"},
		{policy.SecondaryThenPrimary, "SPS"},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			primary := newEndpointServer(t, 503)
			secondary := newEndpointServer(t, 500)
			tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}, Mode: tc.mode}}, backoffUnlessSet(everySecond), recordEvents())
			resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := ""
			for _, ev := range tr.heard() {
				if ev.Final {
					continue
				}
				got += map[string]string{"": "P", primary.host(): "P", secondary.host(): "S"}[ev.Endpoint]
			}
			if last := tr.heard()[len(tr.heard())-1]; last.Stop == nil {
				t.Fatalf("last event %+v; want a stop", last)
			}
			// The last attempt's event is the final one; add it.
			got += map[string]string{"": "P", primary.host(): "P", secondary.host(): "S"}[tr.heard()[len(tr.heard())-1].Endpoint]
			if got != tc.want {
				t.Errorf("attempts went to %s, want %s", got, tc.want)
			}
			if want := int64(strings.Count(tc.want, "S")); secondary.n.Load() != want {
				t.Errorf("secondary got %d attempts, want %d", secondary.n.Load(), want)
			}
		})
	}
}

func TestNotFoundOnSecondaryGoesToPrimary(t *testing.T) {
	t.Run("SecondaryThenPrimary", func(t *testing.T) {
		primary := newEndpointServer(t, 200)
		secondary := newEndpointServer(t, 404)
		tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}, Mode: policy.SecondaryThenPrimary}}, backoffUnlessSet(everySecond))
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || primary.n.Load() != 1 || secondary.n.Load() != 1 {
			t.Errorf("status %d, primary %d, secondary %d attempts; want 200 from the primary after one 404", resp.StatusCode, primary.n.Load(), secondary.n.Load())
		}
	})
	t.Run("StaysOnPrimary", func(t *testing.T) {
		// Primary 503, secondary 404: the rest go to the primary, not back
		// to the secondary.
		primary := newEndpointServer(t, 503)
		secondary := newEndpointServer(t, 404)
		tr := newRig(t, nil, policy.Policy{MaxAttempts: 4, Failover: &policy.Failover{Endpoints: []string{secondary.host()}}}, backoffUnlessSet(everySecond))
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if primary.n.Load() != 3 || secondary.n.Load() != 1 {
			t.Errorf("primary %d, secondary %d attempts; want 3 and 1", primary.n.Load(), secondary.n.Load())
		}
	})
	t.Run("FromPrimaryIsFinal", func(t *testing.T) {
		primary := newEndpointServer(t, 404)
		secondary := newEndpointServer(t, 200)
		tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}}}, backoffUnlessSet(everySecond))
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 || secondary.n.Load() != 0 {
			t.Errorf("status %d, secondary %d attempts; want the primary's 404 and no failover", resp.StatusCode, secondary.n.Load())
		}
	})
	t.Run("SecondaryOnlyIsFinal", func(t *testing.T) {
		primary := newEndpointServer(t, 200)
		secondary := newEndpointServer(t, 404)
		tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}, Mode: policy.SecondaryOnly}}, backoffUnlessSet(everySecond))
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 || primary.n.Load() != 0 || secondary.n.Load() != 1 {
			t.Errorf("status %d, primary %d, secondary %d; want one 404 from the secondary", resp.StatusCode, primary.n.Load(), secondary.n.Load())
		}
	})
}

func TestFailoverSkipsEndpointsThatFailed(t *testing.T) {
	p := newEndpointServer(t, 503)
	a := newEndpointServer(t, 502)
	b := newEndpointServer(t, 500)
	c := newEndpointServer(t, 200)
	name := map[string]string{p.host(): "P", a.host(): "A", b.host(): "B", c.host(): "C"}
	path := func(evs []retrytransport.Event) string {
		s := ""
		for _, ev := range evs {
			if !ev.Final || ev.Stop != nil && ev.Attempt > len(s) {
				s += name[ev.Endpoint]
			}
		}
		return s
	}
	t.Run("ReachesTheHealthyOne", func(t *testing.T) {
		tr := newRig(t, nil, policy.Policy{MaxAttempts: 5, Failover: &policy.Failover{Endpoints: []string{a.host(), b.host(), c.host()}}}, backoffUnlessSet(everySecond), recordEvents())
		resp, err := tr.RoundTrip(newReq(t, "GET", p.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status %d, want 200", resp.StatusCode)
		}
		if got := path(tr.heard()); got != "PAB" {
			t.Errorf("failed attempts went to %s, want PAB", got)
		}
	})
	t.Run("CyclesWhenAllFailed", func(t *testing.T) {
		tr := newRig(t, nil, policy.Policy{MaxAttempts: 5, Failover: &policy.Failover{Endpoints: []string{a.host(), b.host()}}}, backoffUnlessSet(everySecond), recordEvents())
		resp, err := tr.RoundTrip(newReq(t, "GET", p.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := path(tr.heard()); got != "PABPA" {
			t.Errorf("attempts went to %s, want PABPA", got)
		}
	})
}

func TestFailoverRewritesScheme(t *testing.T) {
	secondary := newEndpointServer(t, 200)
	// The primary is https on a port nobody listens on: the dial fails.
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.URL}}}, backoffUnlessSet(everySecond))
	resp, err := tr.RoundTrip(newReq(t, "GET", "https://127.0.0.1:1/x", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || secondary.n.Load() != 1 {
		t.Errorf("status %d, secondary %d attempts; want the secondary's 200 over http", resp.StatusCode, secondary.n.Load())
	}
}

// A read that fails over pays its retry at the secondary and gets it back
// there when the retry succeeds: every read of a long outage of the
// primary still succeeds at its second attempt, three times as many as
// the secondary's bucket could pay for without the refunds.
func TestDeadPrimaryDoesNotDrainTheSecondary(t *testing.T) {
	primary := newEndpointServer(t, 503)
	secondary := newEndpointServer(t, 200)
	tr := newRig(t, nil, policy.Policy{Failover: &policy.Failover{Endpoints: []string{secondary.host()}}}, backoffUnlessSet(everySecond))
	const reads = 300 // 5 tokens each: three times a 500-token bucket
	for i := range reads {
		resp, err := tr.RoundTrip(newReq(t, "GET", primary.URL, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("read %d: status %d, want 200", i, resp.StatusCode)
		}
	}
	if p, s := primary.n.Load(), secondary.n.Load(); p != reads || s != reads {
		t.Errorf("primary %d, secondary %d attempts; want %d each", p, s, reads)
	}
	for _, sc := range tr.Snapshot() {
		if sc.Scope == secondary.host() && sc.Quota != quota.DefaultCapacity {
			t.Errorf("secondary's quota = %v, want it full (%d): each retry's cost is refunded by its success", sc.Quota, quota.DefaultCapacity)
		}
	}
}

// TestFailoverScopeFunctionSeesEachEndpoint: a policy's Scope function
// that keys by the request's Host, as docs/adaptive.md shows, gives each
// endpoint a scope of its own: it sees the Host each attempt is sent with.
func TestFailoverScopeFunctionSeesEachEndpoint(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	p := policy.Policy{
		Failover: &policy.Failover{Endpoints: []string{"a.example:8443", "https://b.example"}},
		Scope:    func(r *http.Request) string { return r.Host + "/" + r.Header.Get("X-Amz-Target") },
	}
	tr := newRig(t, s, p, recordEvents())
	req := newReq(t, "GET", "http://primary.example/orders", "")
	req.Header.Set("X-Amz-Target", "Orders.Get")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var got []string
	for _, ev := range tr.heard() {
		got = append(got, ev.Scope)
	}
	want := []string{"primary.example/Orders.Get", "a.example:8443/Orders.Get", "b.example/Orders.Get"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event scopes mismatch (-want +got):\n%s", diff)
	}
	if n := len(tr.Snapshot()); n != 3 {
		t.Errorf("Snapshot() has %d scopes; want 3, one per endpoint", n)
	}
}

// TestFailoverEndpointScopeIsCanonical: an alternate endpoint's scope is
// its host:port in the canonical form of every scope, lower-cased and
// without the trailing dot, whatever the case it was written in; the
// Event's Endpoint says where the attempt went, as written.
func TestFailoverEndpointScopeIsCanonical(t *testing.T) {
	s := &script{steps: []step{{status: 503}}}
	tr := newRig(t, s, policy.Policy{Failover: &policy.Failover{Endpoints: []string{"A.Example:8443", "https://BÜCHER.example./"}}}, recordEvents())
	resp, err := tr.RoundTrip(newReq(t, "GET", "http://Primary.Example/", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	type place struct{ Scope, Endpoint string }
	var got []place
	for _, ev := range tr.heard() {
		got = append(got, place{ev.Scope, ev.Endpoint})
	}
	want := []place{{"primary.example", "Primary.Example"}, {"a.example:8443", "A.Example:8443"}, {"bücher.example", "BÜCHER.example."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event scopes and endpoints mismatch (-want +got):\n%s", diff)
	}
}

// TestUnusablePolicyErrorNamesFieldAndPattern: the error of a policy New
// cannot use names the field as Policy.Validate does, and whose policy it
// is: the host pattern as given, or the default policy.
func TestUnusablePolicyErrorNamesFieldAndPattern(t *testing.T) {
	badEndpoint := policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ok.example", "ftp://x/path"}}}
	validateSays := strings.TrimPrefix(badEndpoint.Validate().Error(), "policy: ")
	tooMany := policy.Policy{Failover: &policy.Failover{Endpoints: slices.Repeat([]string{"b.example"}, 64)}}
	badMode := policy.Policy{Failover: &policy.Failover{Endpoints: []string{"b.example"}, Mode: 7}}
	tests := []struct {
		name string
		opt  retrytransport.Option
		url  string
		want string
	}{
		{"HostPolicyEndpoint", retrytransport.WithHostPolicy("API.example.com.", badEndpoint), "http://api.example.com/",
			`retrytransport: policy for host pattern "API.example.com.": ` + validateSays},
		{"PolicyMapEndpoint", retrytransport.WithPolicyMap(policy.Map{Hosts: map[string]policy.Policy{"*.example.org": badEndpoint}}), "http://a.example.org/",
			`retrytransport: policy for host pattern "*.example.org": ` + validateSays},
		{"DefaultPolicyEndpoint", retrytransport.WithPolicy(badEndpoint), "http://elsewhere.example/",
			"retrytransport: default policy: " + validateSays},
		{"HostPolicyMode", retrytransport.WithHostPolicy("api.example.com", badMode), "http://api.example.com/",
			`retrytransport: policy for host pattern "api.example.com": Failover.Mode: LocationMode(7); want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary`},
		{"HostPolicyTooManyEndpoints", retrytransport.WithHostPolicy("api.example.com", tooMany), "http://api.example.com/",
			`retrytransport: policy for host pattern "api.example.com": Failover.Endpoints: has 64 entries; want at most MaxEndpoints (63)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []step{{status: 200}}}
			tr := newRig(t, s, policy.Standard(), withOptions(tt.opt))
			_, err := tr.RoundTrip(newReq(t, "GET", tt.url, ""))
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || !errors.Is(err, retrytransport.ErrInvalidPolicy) || re.Err.Error() != tt.want {
				t.Errorf("RoundTrip(GET %s) error = %v; want a *RetryError for ErrInvalidPolicy whose Err reads %s", tt.url, err, tt.want)
			}
			if n := s.count(); n != 0 {
				t.Errorf("RoundTrip(GET %s) made %d attempts; want none", tt.url, n)
			}
		})
	}
}

// An endpoint New cannot use fails the requests of the hosts whose policy
// names it, before any attempt, and no other host's.
func TestInvalidEndpointIsAConfigurationError(t *testing.T) {
	srv := newEndpointServer(t, 200)
	base := &countingBase{base: http.DefaultTransport}
	tr := retrytransport.New(base, retrytransport.WithHostPolicy("api.example.com", policy.Policy{Failover: &policy.Failover{Endpoints: []string{"ftp://x"}}}))
	_, err := tr.RoundTrip(newReq(t, "GET", "http://api.example.com/", ""))
	if err == nil || !strings.Contains(err.Error(), "ftp") {
		t.Errorf("RoundTrip(api.example.com) = %v; want the endpoint's error", err)
	}
	if n := base.calls.Load(); n != 0 {
		t.Errorf("base transport called %d times; want none", n)
	}
	resp, err := tr.RoundTrip(newReq(t, "GET", srv.URL, ""))
	if err != nil {
		t.Fatalf("RoundTrip(%s) = %v; want the other host's policy unaffected", srv.URL, err)
	}
	resp.Body.Close()
}

// An endpoint that names no scheme takes the scheme of the caller's
// request, wherever the attempt it goes beside was sent: the hedge of an
// https request goes over TLS to such an endpoint, also when the attempt
// went to one that names http.
func TestEndpointWithoutSchemeTakesTheRequestsScheme(t *testing.T) {
	noLeaks(t)
	held := newGate(func(int, *http.Request) bool { return true })
	plain := newFaultServer(t, held)
	secure := startFaultServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "over TLS")
	}), (*httptest.Server).StartTLS)
	p := policy.Policy{
		MaxAttempts: 1,
		Failover:    &policy.Failover{Endpoints: []string{plain.URL, strings.TrimPrefix(secure.URL, "https://")}, Mode: policy.SecondaryOnly}, // the attempt goes to plain (http), its hedge to secure
		Hedge:       &policy.Hedge{Delay: hedgeDelay},
	}
	clock := faketime.NewAt(time.Now())
	base := secure.Client().Transport.(*http.Transport).Clone() // trusts the test certificate
	tr := retrytransport.New(base, retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep))
	client := &http.Client{Transport: tr}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get("https://primary.test/x")
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != 200 || body != "over TLS" {
		t.Errorf("status %d, body %q; want 200 from the TLS endpoint, which the hedge reaches over https", resp.StatusCode, body)
	}
	plain.conns.expectAllClosed(t, client)
	secure.conns.expectAllClosed(t, client)
	held.cancelledSoon(t, held.n.Load())
}
