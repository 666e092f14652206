package policy

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// LocationMode says which of a request's endpoints its attempts go to when
// a policy has alternate Endpoints: the request URL's own host (the
// primary) and the alternates (the secondaries), in the order the modes of
// Azure Storage's clients name (docs/failover.md).
//
// The zero LocationMode is PrimaryThenSecondary.
type LocationMode int

const (
	// PrimaryThenSecondary sends the first attempt to the primary and each
	// retry to the next endpoint in the order primary, secondaries, that
	// this request has not seen fail yet.
	PrimaryThenSecondary LocationMode = iota
	// PrimaryOnly sends every attempt to the primary: the endpoints stay
	// configured but unused, as with Azure's default.
	PrimaryOnly
	// SecondaryOnly sends every attempt of a request that may fail over to
	// the secondaries, in turn, and never to the primary.
	SecondaryOnly
	// SecondaryThenPrimary is PrimaryThenSecondary with the secondaries
	// first and the primary last.
	SecondaryThenPrimary
)

var locationModeNames = [...]string{"PrimaryThenSecondary", "PrimaryOnly", "SecondaryOnly", "SecondaryThenPrimary"}

// wantLocationMode lists the location modes, for ParseLocationMode's error
// and Load's.
var wantLocationMode = "one of " + strings.Join(locationModeNames[:], ", ")

// String returns the mode's name, as Azure spells it.
func (m LocationMode) String() string {
	if m >= 0 && int(m) < len(locationModeNames) {
		return locationModeNames[m]
	}
	return fmt.Sprintf("LocationMode(%d)", int(m))
}

// ParseLocationMode returns the mode named s, in any case, as String
// spells it. For any other s it returns PrimaryThenSecondary and an error
// that lists the names.
func ParseLocationMode(s string) (LocationMode, error) {
	for i, n := range locationModeNames {
		if strings.EqualFold(s, n) {
			return LocationMode(i), nil
		}
	}
	return 0, fmt.Errorf("policy: unknown location mode %q; want %s", s, wantLocationMode)
}

// An Endpoint is where failover may send an attempt instead of the request
// URL's own host: a host, with its port if it has one, and a scheme when it
// is to change too. ParseEndpoint makes one from an entry of
// Policy.Endpoints; the zero Endpoint names no host and is never returned
// without an error.
type Endpoint struct {
	Scheme string // "http" or "https"; empty keeps the request's
	Host   string // host or host:port, as in url.URL.Host
}

// ParseEndpoint parses an alternate endpoint as Policy.Endpoints holds it:
// "host", "host:port" or "scheme://host[:port]", with scheme http or
// https (in any case; it is returned in lower case), a port 0..65535, at
// most a trailing "/", and no path, query or user information. For any
// other s it returns the zero Endpoint and an error that quotes s.
func ParseEndpoint(s string) (Endpoint, error) {
	raw := s
	var e Endpoint
	if i := strings.Index(s, "://"); i >= 0 {
		e.Scheme, s = strings.ToLower(s[:i]), s[i+3:]
		if e.Scheme != "http" && e.Scheme != "https" {
			return Endpoint{}, fmt.Errorf("policy: endpoint %q: scheme %q; want http or https", raw, e.Scheme)
		}
	}
	s = strings.TrimSuffix(s, "/")
	u, err := url.Parse("http://" + s)
	if err != nil || u.Host != s || u.Hostname() == "" || strings.ContainsAny(s, "/?#@") {
		return Endpoint{}, fmt.Errorf("policy: endpoint %q; want host, host:port or scheme://host:port, with no path", raw)
	}
	if p := u.Port(); p != "" || strings.HasSuffix(s, ":") {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return Endpoint{}, fmt.Errorf("policy: endpoint %q: port %q; want a number 0..65535", raw, p)
		}
	}
	e.Host = s
	return e, nil
}

// URL returns u with e's host, and scheme if e has one: the URL an attempt
// to e is sent to.
func (e Endpoint) URL(u *url.URL) *url.URL {
	v := *u
	v.Host = e.Host
	if e.Scheme != "" {
		v.Scheme = e.Scheme
	}
	return &v
}

// failoverMethods are the methods whose requests may go to an alternate
// endpoint when Policy.FailoverMethods is nil: reads, which a read-only
// secondary can serve.
var failoverMethods = []string{http.MethodGet, http.MethodHead}

// MayFailOver reports whether req may be sent to p's alternate Endpoints:
// its method is in FailoverMethods, or, when that is nil, is GET or HEAD.
func (p *Policy) MayFailOver(req *http.Request) bool {
	ms := p.FailoverMethods
	if ms == nil {
		ms = failoverMethods
	}
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	return slices.Contains(ms, m)
}
