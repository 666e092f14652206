package retrytransport

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/retrytransport/retrytransport/internal/hostpattern"
)

// hostTable finds the policy state for a request's hostname: an exact
// match, then the longest matching wildcard, then the default. Case and
// a trailing dot, on the hostname or the pattern, are ignored: as in DNS,
// "api.example.com." is the same name as "api.example.com".
type hostTable struct {
	def   *compiled
	exact map[string]*compiled
	wild  []wildEntry // longest suffix first
}

type wildEntry struct {
	suffix string // ".example.com" for "*.example.com"
	cp     *compiled
}

// add registers cp under pattern. Patterns are case-insensitive, an IPv6
// literal may be given with or without brackets, and a fully qualified
// name with or without its trailing dot. The options that take patterns
// have checked them, so an error here is a bug. If New cannot use cp's
// policy, its error (cp.err) names pattern from now on.
func (h *hostTable) add(pattern string, cp *compiled) error {
	key := hostpattern.Normalize(pattern)
	if why := hostpattern.Check(key); why != "" {
		return fmt.Errorf("retrytransport: host pattern %q: %s", pattern, why)
	}
	if pe, ok := cp.err.(*policyError); ok {
		pe.pattern = pattern
	}
	if suffix, ok := strings.CutPrefix(key, "*"); ok {
		for i := range h.wild {
			if h.wild[i].suffix == suffix {
				h.wild[i].cp = cp
				return nil
			}
		}
		h.wild = append(h.wild, wildEntry{suffix, cp})
		sort.SliceStable(h.wild, func(i, j int) bool { return len(h.wild[i].suffix) > len(h.wild[j].suffix) })
		return nil
	}
	if h.exact == nil {
		h.exact = make(map[string]*compiled)
	}
	h.exact[key] = cp
	return nil
}

// lookup returns the state for u's hostname, ignoring case and one
// trailing dot: the hostname and the patterns compare in the canonical
// form of hostpattern.Canonical, as policy.Map.Lookup compares them. It
// does not allocate for a hostname that is canonical already (lower-case,
// as url.Parse leaves most URLs), with or without the dot, and reads u
// only when there are patterns.
func (h *hostTable) lookup(u *url.URL) *compiled {
	if len(h.exact) == 0 && len(h.wild) == 0 {
		return h.def
	}
	// A name that still ends in "." (it had "..") matches no pattern, as
	// none ends in ".".
	hostname := hostpattern.Canonical(u.Hostname())
	if cp, ok := h.exact[hostname]; ok {
		return cp
	}
	for _, w := range h.wild {
		if len(hostname) > len(w.suffix) && strings.HasSuffix(hostname, w.suffix) {
			return w.cp
		}
	}
	return h.def
}

// policyError is why New cannot use a policy, which fails every request
// for the hosts of the policy before its first attempt: the field at
// fault, named as policy.Policy.Validate names it, what is wrong with it,
// and whose policy it is.
type policyError struct {
	pattern string // the host pattern of the policy; "" for the default policy
	field   string // the field at fault: "Failover.Endpoints[0]"
	err     error  // what is wrong with the field
}

// Error returns `retrytransport: policy for host pattern "<pattern>":
// <field>: <err>`, or "retrytransport: default policy: <field>: <err>",
// without the "policy: " that starts the errors of package policy, which
// would name a package twice.
func (e *policyError) Error() string {
	whose := "default policy"
	if e.pattern != "" {
		whose = fmt.Sprintf("policy for host pattern %q", e.pattern)
	}
	return "retrytransport: " + whose + ": " + e.field + ": " + strings.TrimPrefix(e.err.Error(), "policy: ")
}

func (e *policyError) Unwrap() error { return e.err }
