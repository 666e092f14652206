package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/retrytransport/retrytransport/internal/hostpattern"
)

// LocationMode says which of a request's endpoints its attempts go to when
// a policy has a Failover: the request URL's own host (the primary) and
// the Failover's Endpoints (the secondaries), in the order the modes of
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
// that names the mode s was probably meant to be, when one is close (as
// " PrimaryOnly" and "primary-only" are to PrimaryOnly), or else lists the
// names.
func ParseLocationMode(s string) (LocationMode, error) {
	for i, n := range locationModeNames {
		if strings.EqualFold(s, n) {
			return LocationMode(i), nil
		}
	}
	if c := closest(s, locationModeNames[:]); c != "" {
		return 0, fmt.Errorf("policy: unknown location mode %q; %s", s, didYouMean(c))
	}
	return 0, fmt.Errorf("policy: unknown location mode %q; want %s", s, wantLocationMode)
}

// MaxEndpoints is the most alternate endpoints a Failover may have: a
// request keeps the endpoints that failed its attempts, the primary's
// among them, in the bits of a 64-bit word. Validate and Load refuse more.
const MaxEndpoints = 63

// An Endpoint is where failover may send an attempt instead of the request
// URL's own host: a host, with its port if it has one, and a scheme when it
// is to change too. ParseEndpoint makes one from an entry of
// Failover.Endpoints; the zero Endpoint names no host and is never returned
// without an error.
type Endpoint struct {
	Scheme string // "http" or "https"; empty keeps the request's
	Host   string // host or host:port, as in url.URL.Host
}

// ParseEndpoint parses an alternate endpoint as Failover.Endpoints holds it:
// "host", "host:port", "scheme://host" or "scheme://host:port", with at
// most a trailing "/".
//
//   - The scheme is http or https, in any case; it is returned in lower
//     case.
//   - The host is a name of letters, digits, '-', '_' and non-ASCII
//     letters, in dot-separated labels with at most a trailing dot, or an
//     IP address. An IPv6 address is always in brackets ("[::1]",
//     "[fe80::1]:443"), since "fe80::1:443" could be an address alone or
//     one with a port; a zone ("%eth0") is not allowed.
//   - The port is a decimal number 1..65535.
//   - There is no path, query, fragment or user information.
//
// The host and port are kept as written. For any other s it returns the
// zero Endpoint and an error that quotes s and says what is wrong.
func ParseEndpoint(s string) (Endpoint, error) {
	e, f := parseEndpoint(s)
	if f.what != "" {
		return Endpoint{}, fmt.Errorf("policy: endpoint %q: %s; %s", s, f.what, f.remedy())
	}
	return e, nil
}

// A flaw is what is wrong with an endpoint, and how to write it instead.
type flaw struct {
	what string // "" for no flaw
	fix  string // "" for the want of the JSON schema's endpoints
}

// remedy returns the fix, or the endpoints' want.
func (f flaw) remedy() string {
	if f.fix != "" {
		return f.fix
	}
	return "want " + wantEndpoint
}

// parseEndpoint is ParseEndpoint, which returns what is wrong with s as a
// flaw, the zero flaw when nothing is.
func parseEndpoint(s string) (Endpoint, flaw) {
	var e Endpoint
	rest := s
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		e.Scheme, rest = strings.ToLower(scheme), after
		if e.Scheme != "http" && e.Scheme != "https" {
			return Endpoint{}, flaw{what: fmt.Sprintf("scheme %q is not http or https", scheme)}
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return Endpoint{}, flaw{what: fmt.Sprintf("%s (%q)", hostpattern.URLPart(rest[i]), rest[i:])}
	}
	if strings.Contains(rest, "@") {
		return Endpoint{}, flaw{what: "user information"}
	}
	host, port, hasPort := rest, "", false
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return Endpoint{}, flaw{what: `"[" without "]"`}
		}
		host = rest[:end+1]
		switch after := rest[end+1:]; {
		case after == "":
		case after[0] == ':':
			port, hasPort = after[1:], true
		default:
			return Endpoint{}, flaw{fmt.Sprintf(`%q after "]"`, after), `want nothing or ":" and a port`}
		}
		a, err := netip.ParseAddr(host[1:end])
		switch {
		case err != nil || !a.Is6():
			return Endpoint{}, flaw{what: fmt.Sprintf("%q is not an IPv6 address in brackets", host)}
		case a.Zone() != "":
			return Endpoint{}, flaw{what: fmt.Sprintf("%q has an IPv6 zone", host)}
		}
	} else {
		switch strings.Count(rest, ":") {
		case 0:
		case 1:
			host, port, _ = strings.Cut(rest, ":")
			hasPort = true
		default:
			return Endpoint{}, colons(rest)
		}
		if f := checkHostname(host); f.what != "" {
			return Endpoint{}, f
		}
	}
	if hasPort {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return Endpoint{}, flaw{what: fmt.Sprintf("port %q is not a number 1..65535", port)}
		}
	}
	e.Host = rest
	return e, flaw{}
}

// colons says what is wrong with hostport, which has two or more colons
// and no brackets: an IPv6 address, maybe followed by a port, that needs
// brackets, or a second port.
func colons(hostport string) flaw {
	if a, err := netip.ParseAddr(hostport); err == nil && a.Is6() && a.Zone() == "" {
		fix := fmt.Sprintf("write %q", "["+hostport+"]")
		i := strings.LastIndex(hostport, ":")
		if h, port := hostport[:i], hostport[i+1:]; port != "" && strings.Trim(port, "0123456789") == "" {
			if a, err := netip.ParseAddr(h); err == nil && a.Is6() {
				fix += fmt.Sprintf(", or %q for port %s", "["+h+"]:"+port, port)
			}
		}
		return flaw{"an IPv6 address without brackets", fix}
	}
	return flaw{"more than one ':' outside brackets", `want one, before the port, and an IPv6 address in brackets ("[::1]:443")`}
}

// checkHostname says what is wrong with host, a name or an IPv4 address
// without port, or returns the zero flaw.
func checkHostname(host string) flaw {
	if host == "" {
		return flaw{what: "empty host"}
	}
	if c, ok := hostpattern.BadRune(host); ok {
		return flaw{fmt.Sprintf("%q in host %q", c, host), "want a host of " + hostpattern.WantRunes}
	}
	if strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return flaw{what: fmt.Sprintf("empty label in host %q", host)}
	}
	return flaw{}
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

// Failover sends retries to alternate hosts of the same API, as Azure
// Storage's clients send them to a read-only secondary (docs/failover.md).
// The request URL's own host is the primary; Mode orders the Endpoints
// around it, and a retry goes to the next endpoint in that order that the
// request has not seen fail yet. Each attempt's URL is rewritten, never
// the caller's request, and each endpoint is its own scope for the quota
// and the limiters. A 404 from a secondary, whose copy of the data may
// lag, sends the request's next attempts to the primary. Reads from a
// secondary may be stale.
//
// A Policy's Failover is a pointer, and nil means none. Validate rejects
// a non-nil Failover without Endpoints, which fails nothing over and which
// New treats as nil; more than MaxEndpoints Endpoints, an endpoint
// ParseEndpoint rejects, and a Mode that is not one of the four, which
// make New fail every request of the policy before its first attempt
// (unless the Mode is PrimaryOnly, which leaves the Endpoints unused); and
// a method that is not a token.
type Failover struct {
	// Endpoints are the alternate hosts, each written as "host",
	// "host:port" or "scheme://host:port" (see ParseEndpoint). A Failover
	// needs at least one, and may have at most MaxEndpoints.
	Endpoints []string

	// Mode orders the primary and the Endpoints for each request. The zero
	// Mode is PrimaryThenSecondary.
	Mode LocationMode

	// Methods are the request methods that may leave the primary; the
	// others are sent to it alone. Nil means GET and HEAD, which a
	// read-only secondary can serve; a writable mirror may take more.
	Methods []string
}

// normalised returns a copy of f, its lists copied too, so that the
// policy WithDefaults returns shares nothing with the caller's. It returns
// nil for a nil f and for one without Endpoints, which fails nothing over.
// A Mode that is not a mode is kept.
func (f *Failover) normalised() *Failover {
	if f == nil || len(f.Endpoints) == 0 {
		return nil
	}
	return &Failover{Endpoints: slices.Clone(f.Endpoints), Mode: f.Mode, Methods: slices.Clone(f.Methods)}
}

// validate reports f's settings that are out of range.
func (f *Failover) validate() []error {
	if f == nil {
		return nil
	}
	var errs []error
	switch m := f.Mode; {
	case len(f.Endpoints) > 0:
	case m == SecondaryOnly || m == SecondaryThenPrimary:
		errs = append(errs, fmt.Errorf("policy: Failover.Endpoints is empty but Failover.Mode = %v; want at least one secondary", m))
	default:
		errs = append(errs, errors.New("policy: Failover.Endpoints is empty; want at least one alternate host, or a nil Failover for none"))
	}
	if n := len(f.Endpoints); n > MaxEndpoints {
		errs = append(errs, fmt.Errorf("policy: Failover.Endpoints has %d entries; want at most MaxEndpoints (%d)", n, MaxEndpoints))
	}
	for i, e := range f.Endpoints {
		if _, err := ParseEndpoint(e); err != nil {
			errs = append(errs, within(fmt.Sprintf("Failover.Endpoints[%d]", i), err))
		}
	}
	if m := f.Mode; m < PrimaryThenSecondary || m > SecondaryThenPrimary {
		errs = append(errs, fmt.Errorf("policy: Failover.Mode = %d; want one of PrimaryThenSecondary, PrimaryOnly, SecondaryOnly, SecondaryThenPrimary", int(m)))
	}
	for i, m := range f.Methods {
		if !validHeaderName(m) {
			errs = append(errs, fmt.Errorf("policy: Failover.Methods[%d] = %q; want a method name such as GET", i, m))
		}
	}
	return errs
}
