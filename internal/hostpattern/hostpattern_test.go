package hostpattern_test

import (
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport/internal/hostpattern"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// check is how package policy checks a pattern: Check of its normalised
// form.
func check(pattern string) string { return hostpattern.Check(hostpattern.Normalize(pattern)) }

// TestCheckSaysWhatIsWrong checks the patterns Check accepts, and that its
// answer for the others says what part of a URL or which character a
// pattern must not have.
func TestCheckSaysWhatIsWrong(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // "" for a valid pattern
	}{
		{"api.example.com", ""},
		{"*.example.com", ""},
		{"localhost", ""},
		{"my_host-1", ""},
		{"bücher.example", ""},
		{"127.0.0.1", ""},
		{"::1", ""},
		{"[::1]", ""},
		{"fe80::1:443", ""}, // an IPv6 address: a pattern has no port
		{"", `empty pattern; want a hostname or "*." and a domain`},
		{"*", `'*' in a pattern; want it only as a leading "*."`},
		{"a.*.example.com", `'*' in a pattern; want it only as a leading "*."`},
		{"*.*.example.com", `'*' in a pattern; want it only as a leading "*."`},
		{"127.0.0.1:8080", "has a port; patterns match hostnames only, on every port"},
		{"api.example.com:443", "has a port; patterns match hostnames only, on every port"},
		{"api.example.com:", "has a port; patterns match hostnames only, on every port"},
		{"[::1]:443", "has a port; patterns match hostnames only, on every port"},
		{"*.example.com:443", "has a port; patterns match hostnames only, on every port"},
		{"https://api.example.com", "has a scheme; patterns match hostnames only, for every scheme"},
		{"api.example.com/v1", `has a path ("/v1"); patterns match hostnames only`},
		{"api.example.com?x=1", `has a query ("?x=1"); patterns match hostnames only`},
		{"api.example.com#x", `has a fragment ("#x"); patterns match hostnames only`},
		{"user@api.example.com", "has user information; patterns match hostnames only"},
		{"bad host", `has ' ', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{"a:b", `has ':', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{"[::1", `has '[', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{"a\x00b", `has '\x00', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{"a\xffb", `has '�', which no hostname has; want letters, digits, '-', '_' and '.'`},
		{".example.com", `a leading "."; want "*.example.com" for the names below example.com`},
		{"a..example.com", `an empty label; want labels separated by one "."`},
		{"*..example.com", `an empty label; want labels separated by one "."`},
		{"*.127.0.0.1", `"*." before an IP address; want "*." only before a domain`},
	}
	for _, tt := range tests {
		if got := check(tt.pattern); got != tt.want {
			t.Errorf("Check(Normalize(%q)) = %q; want %q", tt.pattern, got, tt.want)
		}
	}
}

// TestCheckTrailingDot: one trailing dot is a fully qualified name, and
// allowed; a dot with no name before it is not.
func TestCheckTrailingDot(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // "" for a valid pattern
	}{
		{"api.example.com.", ""},
		{"API.Example.COM.", ""},
		{"*.example.com.", ""},
		{"localhost.", ""},
		{".", `a lone "."; want a hostname or "*." and a domain`},
		{"..", `".." at the end; want at most one trailing "."`},
		{"api.example.com..", `".." at the end; want at most one trailing "."`},
		{"*.example.com..", `".." at the end; want at most one trailing "."`},
		{"*..", `".." at the end; want at most one trailing "."`},
		{"*.", `nothing after "*."; want a domain`},
	}
	for _, tt := range tests {
		if got := check(tt.pattern); got != tt.want {
			t.Errorf("Check(Normalize(%q)) = %q; want %q", tt.pattern, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"API.Example.COM", "api.example.com"},
		{"api.example.com.", "api.example.com"},
		{"*.Example.com.", "*.example.com"},
		{"[::1]", "::1"},
		{"[FE80::1]", "fe80::1"},
		{"[::1", "[::1"},
		{"bÜcher.Example.", "bücher.example"},
		{".", "."},
		{"*.", "*."},
		{"a..", "a.."},
		{"", ""},
	}
	for _, tt := range tests {
		if got := hostpattern.Normalize(tt.pattern); got != tt.want {
			t.Errorf("Normalize(%q) = %q; want %q", tt.pattern, got, tt.want)
		}
	}
}

// TestCanonical checks the one form of hosts: lower case as
// strings.ToLower gives it, non-ASCII letters included, without the
// trailing dot after a name, before the port if there is one.
func TestCanonical(t *testing.T) {
	tests := []struct{ host, want string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM", "api.example.com"},
		{"api.example.com.", "api.example.com"},
		{"API.Example.com.:443", "api.example.com:443"},
		{"api.example.com:8443", "api.example.com:8443"},
		{"api.example.com.:", "api.example.com:"},
		{"bÜcher.example", "bücher.example"},
		{"Ÿ.example.", "ÿ.example"},
		{"BÜCHER.example:443", "bücher.example:443"},
		{"\u212Aey.example", "key.example"}, // KELVIN SIGN
		{"[FE80::1]:443", "[fe80::1]:443"},
		{"[::1]", "[::1]"},
		{"FE80::1", "fe80::1"},
		{"10.0.0.1.:80", "10.0.0.1:80"},
		{"host.123", "host.123"},
		{"a..", "a.."},
		{"a..:443", "a..:443"},
		{"*.", "*."},
		{".", "."},
		{"", ""},
	}
	for _, tt := range tests {
		if got := hostpattern.Canonical(tt.host); got != tt.want {
			t.Errorf("Canonical(%q) = %q; want %q", tt.host, got, tt.want)
		}
	}
}

// TestCanonicalAllocatesOnlyToChange: a host in canonical form, or one
// whose only change is the dot of a hostname without port, costs no
// allocation.
func TestCanonicalAllocatesOnlyToChange(t *testing.T) {
	for _, host := range []string{"api.example.com", "api.example.com:8443", "api.example.com.", "bücher.example:443", "[::1]:8080"} {
		var got string
		if n := testing.AllocsPerRun(100, func() { got = hostpattern.Canonical(host) }); n != 0 || got != strings.TrimSuffix(host, ".") {
			t.Errorf("Canonical(%q) = %q, with %v allocations; want %q, with 0", host, got, n, strings.TrimSuffix(host, "."))
		}
	}
}

func TestBadRune(t *testing.T) {
	tests := []struct {
		s    string
		want rune
		bad  bool
	}{
		{"api-1_x.example.com", 0, false},
		{"bücher", 0, false},
		{"a b", ' ', true},
		{"a/b", '/', true},
		{"a\u00a0b", '\u00a0', true}, // a non-ASCII space
		{"a\xffb", '\uFFFD', true},
		{"a\uFFFDb", '\uFFFD', true},
	}
	for _, tt := range tests {
		if got, bad := hostpattern.BadRune(tt.s); got != tt.want || bad != tt.bad {
			t.Errorf("BadRune(%q) = %q, %t; want %q, %t", tt.s, got, bad, tt.want, tt.bad)
		}
	}
}

func TestURLPart(t *testing.T) {
	for c, want := range map[byte]string{'/': "a path", '?': "a query", '#': "a fragment"} {
		if got := hostpattern.URLPart(c); got != want {
			t.Errorf("URLPart(%q) = %q; want %q", c, got, want)
		}
	}
}
