package retrytransport

import "github.com/retrytransport/retrytransport/internal/hostpattern"

// canonicalHost returns a URL's Host (host, or host:port) as a scope key:
// in the canonical form of hostpattern.Canonical, the one host patterns
// are matched in, lower-cased and without the trailing dot of a fully
// qualified name. So "API.Example.com.:443" and "api.example.com:443"
// share their quota and limiter buckets, counters and Snapshot entry, as
// they name the same server. It allocates only for a host that is not
// canonical already; url.Parse leaves most hosts lower-case.
func canonicalHost(host string) string { return hostpattern.Canonical(host) }
