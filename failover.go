package retrytransport

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// endpoints is a policy's Failover, resolved: the alternates of its
// Endpoints, the order its Mode gives the primary (index 0) and them
// (1..n), and the methods that may leave the primary.
type endpoints struct {
	alt     []policy.Endpoint // alt[i-1] is endpoint i
	order   []int             // the endpoints a request that may fail over tries, first first
	primary bool              // order includes the primary
	methods []string          // Failover.Methods; nil means GET and HEAD
}

// newEndpoints resolves f, or returns nil when it has no endpoints to use.
func newEndpoints(f *policy.Failover) (*endpoints, error) {
	if f == nil || len(f.Endpoints) == 0 || f.Mode == policy.PrimaryOnly {
		return nil, nil
	}
	// policy.MaxEndpoints keeps a request's failed endpoints, the primary
	// included, in the one word of route.failed.
	if n := len(f.Endpoints); n > policy.MaxEndpoints {
		return nil, &policyError{field: "Failover.Endpoints", err: fmt.Errorf("has %d entries; want at most MaxEndpoints (%d)", n, policy.MaxEndpoints)}
	}
	e := &endpoints{alt: make([]policy.Endpoint, len(f.Endpoints)), methods: f.Methods}
	for i, s := range f.Endpoints {
		var err error
		if e.alt[i], err = policy.ParseEndpoint(s); err != nil {
			return nil, &policyError{field: fmt.Sprintf("Failover.Endpoints[%d]", i), err: err}
		}
	}
	secondaries := make([]int, len(e.alt))
	for i := range secondaries {
		secondaries[i] = i + 1
	}
	switch f.Mode {
	case policy.PrimaryThenSecondary:
		e.order = append([]int{0}, secondaries...)
	case policy.SecondaryOnly:
		e.order = secondaries
	case policy.SecondaryThenPrimary:
		e.order = append(secondaries, 0)
	default:
		return nil, &policyError{field: "Failover.Mode", err: fmt.Errorf("%v; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary", f.Mode)}
	}
	e.primary = f.Mode != policy.SecondaryOnly
	return e, nil
}

// mayFailOver reports whether req may leave the primary: its method is in
// Failover.Methods, or, when that is nil, is GET or HEAD, which a read-only
// secondary can serve. An empty method is GET.
func (e *endpoints) mayFailOver(req *http.Request) bool {
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	if e.methods == nil {
		return m == http.MethodGet || m == http.MethodHead
	}
	return slices.Contains(e.methods, m)
}

// route is where one request's attempts go: its place in the order, and
// which endpoints it has seen fail.
type route struct {
	e           *endpoints
	pos         int    // the current attempt's place in e.order
	failed      uint64 // bit i: endpoint i failed an attempt of this request
	primaryOnly bool   // a secondary answered 404: the rest go to the primary
	toPrimary   bool   // an attempt got that 404: the next goes to the primary
}

// current returns the endpoint of the current attempt: 0 for the primary.
func (r *route) current() int {
	if r.primaryOnly {
		return 0
	}
	return r.e.order[r.pos]
}

// next moves the route to the endpoint of the next attempt, after the
// current one failed: the next in order that has not failed yet, or, when
// all have, simply the next in order.
func (r *route) next() {
	r.failed |= 1 << r.current()
	if r.toPrimary {
		r.primaryOnly = true
	}
	if r.primaryOnly {
		return
	}
	n := len(r.e.order)
	for k := 1; k <= n; k++ {
		p := (r.pos + k) % n
		if r.failed&(1<<r.e.order[p]) == 0 {
			r.pos = p
			return
		}
	}
	r.pos = (r.pos + 1) % n
}

// notReplicated reports whether the response of an attempt sent to
// endpoint says that the secondary does not have the data yet, so that
// the primary should be asked: a 404 from a secondary (endpoint is not
// 0), when the primary is among the endpoints. The attempt's settle then
// sends the request's remaining attempts to the primary (toPrimary).
func (r *route) notReplicated(resp *http.Response, endpoint int) bool {
	return resp != nil && resp.StatusCode == http.StatusNotFound && endpoint != 0 && r.e.primary
}

// notReplicatedOutcome is the outcome of a 404 from a secondary that sends
// the next attempt to the primary.
var notReplicatedOutcome = classify.Outcome{Kind: classify.Transient, Reason: "404 from a secondary endpoint: trying the primary"}

// readdress points r, a copy of an attempt of orig, the caller's request,
// at endpoint i: r's URL with the endpoint's host and scheme, or orig's
// for the primary (i 0). An alternate that names no scheme takes orig's,
// never r's: r may be a copy of an attempt sent to another alternate,
// whose scheme is that alternate's. The Host header follows: orig's for
// the primary, the URL's for an alternate. r's URL is replaced, never
// changed in place, as it may be shared.
func (cp *compiled) readdress(r, orig *http.Request, i int) {
	if i == 0 {
		u := *r.URL
		u.Scheme, u.Host = orig.URL.Scheme, orig.URL.Host
		r.URL, r.Host = &u, orig.Host
		return
	}
	e := cp.endpoints.alt[i-1]
	u := e.URL(r.URL)
	if e.Scheme == "" {
		u.Scheme = orig.URL.Scheme
	}
	r.URL, r.Host = u, ""
}

// host returns the host (host:port) of endpoint i of req: its URL's own
// for the primary (i 0), else the alternate's.
func (cp *compiled) host(req *http.Request, i int) string {
	if i == 0 {
		return req.URL.Host
	}
	return cp.endpoints.alt[i-1].Host
}

// endpointScope returns the scope of an attempt of req sent to endpoint i:
// its own scope (home) for the primary, else the alternate's: its host in
// canonical form, or what the policy's Scope function says of a copy of
// req sent there. That copy's Host is the alternate's, the Host header the
// attempt goes with, so that a function that keys by Host, as
// docs/adaptive.md shows, gives each endpoint its own scope.
func (cp *compiled) endpointScope(req *http.Request, i int, home string) string {
	if i == 0 {
		return home
	}
	if cp.p.Scope == nil {
		return canonicalHost(cp.endpoints.alt[i-1].Host)
	}
	r := *req
	cp.readdress(&r, req, i)
	r.Host = r.URL.Host
	return cp.p.Scope(&r)
}
