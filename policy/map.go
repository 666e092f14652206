package policy

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/retrytransport/retrytransport/internal/hostpattern"
)

// Map holds a policy per host pattern and a default for the other hosts,
// as a configuration file gives them (see [LoadMap]). A request's policy
// is that of the pattern equal to its hostname, else that of the longest
// matching "*." pattern, else Default; [Map.Lookup] applies this rule.
//
// A Map is plain data. Its zero value gives every host the zero Policy,
// which is [Standard]'s behaviour. Hosts is a map, so copies of a Map share
// it: do not change it while others use the Map.
type Map struct {
	// Default is the policy of every host that no pattern matches.
	Default Policy

	// Hosts maps host patterns to their policies. A pattern is a hostname
	// ("api.example.com"), an IP address (an IPv6 one with or without
	// brackets), or "*." and a domain ("*.example.com"), which matches
	// every name below the domain but not the domain itself. Patterns
	// match in any case, and carry no scheme, port or path: "10.0.0.1"
	// covers every port of that host. A trailing dot is ignored
	// ("api.example.com." is the pattern "api.example.com"), as DNS
	// ignores it. [Map.Validate] says what is wrong with a pattern.
	Hosts map[string]Policy
}

// LoadMap reads a Map from the JSON document in r:
//
//	{"default": {"preset": "standard"},
//	 "hosts": {"api.example.com": {"maxAttempts": 5},
//	           "*.example.com": {"preset": "none"}}}
//
// Both members are optional; each policy is an object in the schema of
// [Load], with its own preset if any, and the transports given the Map
// share any quota or limiter it creates, each host its own. LoadMap checks
// the result with [Map.Validate]. Errors are those of Load, with paths
// that start at the Map, such as `hosts["api.example.com"].maxAttempts`.
func LoadMap(r io.Reader) (Map, error) {
	raw, err := readDocument(r)
	if err != nil {
		return Map{}, err
	}
	return decodeMap(raw)
}

// LoadMapFile reads a Map from the file name, as [LoadMap] reads one from
// a reader, with the file's name in every error, as [LoadFile] puts it:
//
//	policy: hosts.json:4:5: invalid JSON: invalid character '"' after object key:value pair
//	policy: hosts.json: hosts["api.example.com"].maxAttempt: unknown field; did you mean "maxAttempts"?
func LoadMapFile(name string) (Map, error) { return loadFile(name, decodeMap) }

// UnmarshalJSON sets *m to the Map that [LoadMap] reads from data. It
// leaves *m unchanged on error, and for a JSON null.
func (m *Map) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		return nil
	}
	raw, err := parseDocument(data)
	if err != nil {
		return err
	}
	n, err := decodeMap(raw)
	if err != nil {
		return err
	}
	*m = n
	return nil
}

// decodeMap decodes and validates a Map document.
func decodeMap(raw json.RawMessage) (Map, error) {
	d := &decoder{}
	var m Map
	d.object("", raw, "an object with default and hosts",
		field{"default", func(v value) { m.Default = v.d.policy(v.path, v.raw) }},
		field{"hosts", func(v value) {
			ms, _ := v.d.membersAt(v.path, v.raw, "an object of host patterns and their policies", hostPath)
			m.Hosts = make(map[string]Policy, len(ms))
			seen := make(map[string]string) // normalised pattern -> pattern
			for _, h := range ms {
				path := hostPath(h.name)
				norm := hostpattern.Normalize(h.name)
				if want := hostpattern.Check(norm); want != "" {
					v.d.fail(path, "", want)
				} else if first, ok := seen[norm]; ok {
					v.d.fail(path, "", "the same pattern as "+hostPath(first)+"; want each pattern once")
				}
				seen[norm] = h.name
				if !isNull(h.raw) {
					m.Hosts[h.name] = v.d.policy(path, h.raw)
				}
			}
		}})
	if err := d.err(); err != nil {
		return Map{}, err
	}
	if err := m.Validate(); err != nil {
		return Map{}, err
	}
	return m, nil
}

// MarshalJSON writes m in the form that [LoadMap] reads, the hosts in
// sorted order, each policy as [Policy.MarshalJSON] writes it; it returns
// the errors of those calls, with paths that start at the Map.
func (m Map) MarshalJSON() ([]byte, error) {
	e := &encoder{}
	o := e.object("")
	o.member("default", e.policy("default", m.Default))
	if len(m.Hosts) > 0 {
		hosts := e.object("hosts")
		for _, pattern := range slices.Sorted(maps.Keys(m.Hosts)) {
			hosts.member(pattern, e.policy(hostPath(pattern), m.Hosts[pattern]))
		}
		o.member("hosts", hosts.bytes())
	}
	if err := errors.Join(e.errs...); err != nil {
		return nil, err
	}
	return o.bytes(), nil
}

// Validate reports the patterns of m that are malformed or repeated (two
// that differ only in case, brackets or a trailing dot) as *[FieldError]s,
// and the errors of every policy's [Policy.Validate], each prefixed with
// "default" or its pattern, all joined with errors.Join.
func (m Map) Validate() error {
	var errs []error
	if err := m.Default.Validate(); err != nil {
		errs = append(errs, within("default", err))
	}
	seen := make(map[string]string)
	for _, pattern := range slices.Sorted(maps.Keys(m.Hosts)) {
		norm := hostpattern.Normalize(pattern)
		if want := hostpattern.Check(norm); want != "" {
			errs = append(errs, &FieldError{Field: hostPath(pattern), Want: want})
		} else if first, ok := seen[norm]; ok {
			errs = append(errs, &FieldError{Field: hostPath(pattern), Want: "the same pattern as " + hostPath(first) + "; want each pattern once"})
		}
		seen[norm] = pattern
		if err := m.Hosts[pattern].Validate(); err != nil {
			errs = append(errs, within(hostPath(pattern), err))
		}
	}
	return errors.Join(errs...)
}

// Lookup returns the policy for hostname, a request's host without its
// port, as url.URL.Hostname gives it: the policy of the pattern equal to
// hostname, else that of the longest "*." pattern whose domain hostname is
// below, else Default. Case does not matter, for non-ASCII letters too
// (strings.ToLower's: "bÜcher.example" gets the policy of
// "bücher.example"), and a trailing dot on hostname or a pattern is
// ignored, as DNS ignores it: "api.example.com." gets the policy of
// "api.example.com", and "a.example.com." that of "*.example.com". A
// Transport given the Map picks the same policy for every hostname. Lookup
// scans Hosts on every call; a transport builds an index instead.
func (m Map) Lookup(hostname string) Policy {
	hostname = hostpattern.Normalize(hostname)
	best, bestLen := "", 0
	for _, pattern := range slices.Sorted(maps.Keys(m.Hosts)) {
		norm := hostpattern.Normalize(pattern)
		if norm == hostname {
			return m.Hosts[pattern]
		}
		suffix, wild := strings.CutPrefix(norm, "*")
		if wild && len(suffix) > bestLen && len(hostname) > len(suffix) && strings.HasSuffix(hostname, suffix) {
			best, bestLen = pattern, len(suffix)
		}
	}
	if bestLen > 0 {
		return m.Hosts[best]
	}
	return m.Default
}

// hostPath returns the path of pattern's policy in a Map document.
func hostPath(pattern string) string { return "hosts[" + strconv.Quote(pattern) + "]" }

// within prefixes the errors of err, which Policy.Validate returned for the
// policy at path, with that path.
func within(path string, err error) error {
	if path == "" || err == nil {
		return err
	}
	return eachError(err, func(e error) error { return &pathError{path, e} })
}

// eachError returns err with f applied to each error that errors.Join
// joined into it, at any depth, joined again; or f(err) when err is no
// join.
func eachError(err error, f func(error) error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, eachError(e, f))
		}
		return errors.Join(errs...)
	}
	return f(err)
}

// pathError is an error of the policy at path in a larger document, or of
// the document in the file path (see inFile).
type pathError struct {
	path string
	err  error
}

// Error returns "policy: <path>: <err>". Every error of this package starts
// with "policy: ", which is taken off err so that it is not said twice.
func (e *pathError) Error() string {
	return "policy: " + e.path + ": " + strings.TrimPrefix(e.err.Error(), "policy: ")
}

func (e *pathError) Unwrap() error { return e.err }
