package retrytransport

import (
	"fmt"
	"net/http"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// maxEndpoints bounds Policy.Endpoints, so that a request's failed
// endpoints fit in a word.
const maxEndpoints = 63

// endpoints is a policy's failover setup, resolved: the alternates of
// Policy.Endpoints, and the order LocationMode gives the primary (index 0)
// and them (1..n).
type endpoints struct {
	alt   []policy.Endpoint // alt[i-1] is endpoint i
	order []int             // the endpoints a request that may fail over tries, first first
}

// newEndpoints resolves p's endpoints, or returns nil when p has none to
// use.
func newEndpoints(p *policy.Policy) (*endpoints, error) {
	if len(p.Endpoints) == 0 || p.LocationMode == policy.PrimaryOnly {
		return nil, nil
	}
	if len(p.Endpoints) > maxEndpoints {
		return nil, fmt.Errorf("retrytransport: %d Policy.Endpoints; at most %d are allowed", len(p.Endpoints), maxEndpoints)
	}
	e := &endpoints{alt: make([]policy.Endpoint, len(p.Endpoints))}
	for i, s := range p.Endpoints {
		var err error
		if e.alt[i], err = policy.ParseEndpoint(s); err != nil {
			return nil, fmt.Errorf("retrytransport: %w", err)
		}
	}
	n := len(e.alt)
	switch p.LocationMode {
	case policy.PrimaryThenSecondary:
		e.order = append(e.order, 0)
		for i := 1; i <= n; i++ {
			e.order = append(e.order, i)
		}
	case policy.SecondaryOnly, policy.SecondaryThenPrimary:
		for i := 1; i <= n; i++ {
			e.order = append(e.order, i)
		}
		if p.LocationMode == policy.SecondaryThenPrimary {
			e.order = append(e.order, 0)
		}
	default:
		return nil, fmt.Errorf("retrytransport: Policy.LocationMode = %v; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary", p.LocationMode)
	}
	return e, nil
}

// hasPrimary reports whether the order includes the primary.
func (e *endpoints) hasPrimary() bool {
	for _, i := range e.order {
		if i == 0 {
			return true
		}
	}
	return false
}

// route is where one request's attempts go: its place in the order, and
// which endpoints it has seen fail.
type route struct {
	e           *endpoints
	home        string // the request's own scope
	sentTo      int    // the endpoint the last result came from: the attempt's, or a hedge's
	pos         int    // the current attempt's place in e.order
	failed      uint64 // bit i: endpoint i failed an attempt of this request
	primaryOnly bool   // a secondary answered 404: the rest go to the primary
	toPrimary   bool   // the current attempt got that 404: the next goes to the primary
	wonScope    string // the quota scope of the hedge whose result the last attempt took, if not the attempt's; else ""
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

// notReplicated reports whether an attempt's response says the secondary
// it went to does not have the data yet, so that the primary should be
// asked: a 404 from a secondary (sentTo is not 0), when the primary is
// among the endpoints.
// It then sends the request's remaining attempts to the primary.
func (r *route) notReplicated(resp *http.Response) bool {
	if resp == nil || resp.StatusCode != http.StatusNotFound || r.sentTo == 0 || !r.e.hasPrimary() {
		return false
	}
	r.toPrimary = true
	return true
}

// notReplicatedOutcome is the outcome of a 404 from a secondary that sends
// the next attempt to the primary.
var notReplicatedOutcome = classify.Outcome{Kind: classify.Transient, Reason: "404 from a secondary endpoint: trying the primary"}

// endpointRequest returns a shallow copy of req addressed to endpoint i of
// st's endpoints (0: req itself). The Host header follows the new URL.
func (st *hostState) endpointRequest(req *http.Request, i int) *http.Request {
	if i == 0 {
		return req
	}
	r := *req
	r.URL = st.endpoints.alt[i-1].URL(req.URL)
	r.Host = ""
	return &r
}

// endpointScope returns the scope of an attempt of req sent to endpoint i:
// its own scope (home) for the primary, else the alternate's.
func (st *hostState) endpointScope(req *http.Request, i int, home string) string {
	if i == 0 {
		return home
	}
	if st.p.Scope == nil {
		return canonicalHost(st.endpoints.alt[i-1].Host)
	}
	return st.p.Scope(st.endpointRequest(req, i))
}
