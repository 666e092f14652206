// Package hostpattern checks and normalises the host patterns of per-host
// policies, for package policy's Map and the transport's WithHostPolicy,
// and gives hosts the one canonical form (Canonical) in which patterns,
// the hostnames looked up and the transport's scope keys compare.
//
// A pattern is a hostname ("api.example.com"), an IP address (an IPv6 one
// with or without brackets), or "*." and a domain ("*.example.com"); case
// does not matter, and one trailing dot is allowed and ignored
// ("api.example.com." is "api.example.com"). A pattern matches hostnames
// only, so it has no scheme, port, path or user information. A hostname is
// made of letters, digits, '-', '_' and non-ASCII letters, in labels
// separated by single dots; a leading dot, a lone "." and a pattern that
// ends in ".." are invalid.
package hostpattern

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize returns pattern without the brackets of an IPv6 literal, in
// the canonical form of Canonical: in lower case and without the
// trailing dot of a fully qualified name. It keeps the dot when no name
// comes before it (".", "*.", "a.."), so that Check can reject those
// patterns.
func Normalize(pattern string) string {
	if strings.HasPrefix(pattern, "[") && strings.HasSuffix(pattern, "]") {
		pattern = pattern[1 : len(pattern)-1]
	}
	return Canonical(pattern)
}

// Canonical returns host, a hostname or a URL's host:port, in the one form
// in which patterns, policy lookups and scope keys compare hosts: in lower
// case, as strings.ToLower gives it ("bÜcher.example" is
// "bücher.example"), and without the trailing dot of a fully qualified
// name, before the port if there is one ("API.Example.com.:443" is
// "api.example.com:443"). The dot is taken off only after a name: ".",
// "*." and "a.." keep it, so that Check rejects such patterns and no
// pattern matches such a hostname. The brackets of an IPv6 literal stay.
//
// Canonical returns host itself, without allocating, when host is
// canonical already, and a part of it when only the dot of a hostname
// without port goes. Finding that out takes a scan of host's bytes for
// upper-case ASCII letters and non-ASCII ones.
func Canonical(host string) string {
	name, port := host, ""
	for i := len(host) - 1; i >= 0 && i >= len(host)-6; i-- { // a port is at most five digits
		if c := host[i]; c == ':' {
			name, port = host[:i], host[i:]
			break
		} else if c < '0' || c > '9' {
			break
		}
	}
	n := len(name)
	dot := n >= 2 && name[n-1] == '.' && name[n-2] != '.' && name[n-2] != '*'
	if dot {
		name = name[:n-1]
	}
	folded := name
	if mayFold(name) {
		folded = strings.ToLower(name) // name itself when no rune changes
	}
	switch {
	case port == "":
		return folded
	case !dot && folded == name:
		return host
	}
	return folded + port
}

// mayFold reports whether s has an upper-case ASCII letter or a non-ASCII
// byte, without which strings.ToLower returns s as it is. Every request
// asks it of its host, so it looks at eight bytes at a time (see
// foldable8), byte by byte only below eight.
func mayFold(s string) bool {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c-'A' < 26 || c >= utf8.RuneSelf {
				return true
			}
		}
		return false
	}
	for i := 0; i+8 <= len(s); i += 8 {
		if foldable8(s[i : i+8]) {
			return true
		}
	}
	return foldable8(s[len(s)-8:]) // the tail, overlapping the last block read
}

// foldable8 reports whether the eight bytes of s hold an upper-case ASCII
// letter or a non-ASCII byte. It reads them as one word: a byte at 0x80 or
// above sets its top bit; for the others, adding 0x80-'A' sets the top bit
// of those at 'A' or above and adding 0x80-'Z'-1 that of those above 'Z',
// and no sum carries into the next byte.
func foldable8(s string) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	_ = s[7] // one bounds check for the eight reads, which compile to one load
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	if w&tops != 0 {
		return true
	}
	atLeastA := w + (0x80-'A')*ones
	aboveZ := w + (0x80-'Z'-1)*ones
	return atLeastA&^aboveZ&tops != 0
}

// Check returns why a normalised pattern is not a hostname, an
// IP address or "*.domain", or "" if it is one. A normalised pattern ends
// in "." only when no name comes before its last dot (see
// Normalize).
func Check(pattern string) string {
	rest, wild := strings.CutPrefix(pattern, "*.")
	switch {
	case pattern == "":
		return `empty pattern; want a hostname or "*." and a domain`
	case strings.Contains(rest, "*"):
		return `'*' in a pattern; want it only as a leading "*."`
	case rest == "":
		return `nothing after "*."; want a domain`
	case pattern == ".":
		return `a lone "."; want a hostname or "*." and a domain`
	case strings.HasSuffix(pattern, ".."):
		return `".." at the end; want at most one trailing "."`
	}
	if _, err := netip.ParseAddr(rest); err == nil {
		if wild {
			return `"*." before an IP address; want "*." only before a domain`
		}
		return ""
	}
	if strings.Contains(rest, "://") {
		return "has a scheme; patterns match hostnames only, for every scheme"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return fmt.Sprintf("has %s (%q); patterns match hostnames only", URLPart(rest[i]), rest[i:])
	}
	if strings.Contains(rest, "@") {
		return "has user information; patterns match hostnames only"
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 && isHostPort(rest[:i], rest[i+1:]) {
		return "has a port; patterns match hostnames only, on every port"
	}
	if c, ok := BadRune(rest); ok {
		return fmt.Sprintf("has %q, which no hostname has; want %s", c, WantRunes)
	}
	switch {
	case strings.HasPrefix(pattern, "."):
		return fmt.Sprintf("a leading \".\"; want %q for the names below %s", "*"+pattern, pattern[1:])
	case strings.Contains(rest, ".."), strings.HasPrefix(rest, "."):
		return `an empty label; want labels separated by one "."`
	}
	return ""
}

// isHostPort reports whether host and port, the parts of a pattern around
// its last ':', look like a host and a port: port is decimal or empty, and
// host has no ':' but in brackets.
func isHostPort(host, port string) bool {
	bracketed := strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")
	return strings.Trim(port, "0123456789") == "" && (bracketed || !strings.Contains(host, ":"))
}

// WantRunes says what BadRune allows.
const WantRunes = "letters, digits, '-', '_' and '.'"

// BadRune returns the first rune of s that no hostname has, and
// true; or false when s has none. A hostname has ASCII letters and digits,
// '-', '_', '.' and non-ASCII letters (a name before IDNA encoding), not
// spaces, controls or punctuation. An invalid UTF-8 sequence, and
// utf8.RuneError itself, which strings.ToLower makes of one, are
// utf8.RuneError.
func BadRune(s string) (rune, bool) {
	for _, c := range s {
		switch {
		case c == utf8.RuneError:
			return c, true
		case c >= utf8.RuneSelf && unicode.IsPrint(c) && !unicode.IsSpace(c),
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return c, true
		}
	}
	return 0, false
}

// URLPart names the part of a URL that c, one of '/', '?' and '#', starts.
func URLPart(c byte) string {
	switch c {
	case '?':
		return "a query"
	case '#':
		return "a fragment"
	}
	return "a path"
}
