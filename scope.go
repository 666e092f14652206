package retrytransport

// canonicalHost returns a URL's Host (host, or host:port) as a scope key,
// without the trailing dot of a fully qualified name, so that
// "api.example.com.:443" and "api.example.com:443" share their quota and
// limiter buckets, as they name the same server. It looks at a few bytes at
// the end only, and allocates only for a name with the dot. Case is left as
// it is: url.Parse gives lower-case hosts for nearly every URL, and a scan
// for upper case would cost every request more than a rare second bucket
// costs the one that needs it.
func canonicalHost(host string) string {
	end := len(host)
	for i := end - 1; i >= 0 && i >= end-6; i-- { // a port is at most five digits
		if c := host[i]; c == ':' {
			end = i
			break
		} else if c < '0' || c > '9' {
			break
		}
	}
	if end > 0 && host[end-1] == '.' {
		return host[:end-1] + host[end:]
	}
	return host
}
