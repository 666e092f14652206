package policy_test

import (
	"fmt"
	"net/url"

	"github.com/retrytransport/retrytransport/policy"
)

// ParseEndpoint reads a failover endpoint as Failover.Endpoints holds it, and
// Endpoint.URL gives the URL an attempt to it is sent to: the request's
// path and query are kept, the host (and the scheme, if given) replaced.
func ExampleParseEndpoint() {
	u, _ := url.Parse("https://api.example.com/v1/orders?id=7")
	for _, s := range []string{
		"api-west.example.com",
		"HTTP://10.0.0.2:8080/",
		"[fe80::1]:443",
		"fe80::1:443",
		"api.example.com/v1",
	} {
		e, err := policy.ParseEndpoint(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%q %q -> %s\n", e.Scheme, e.Host, e.URL(u))
	}
	fmt.Println(u) // URL does not change u
	// Output:
	// "" "api-west.example.com" -> https://api-west.example.com/v1/orders?id=7
	// "http" "10.0.0.2:8080" -> http://10.0.0.2:8080/v1/orders?id=7
	// "" "[fe80::1]:443" -> https://[fe80::1]:443/v1/orders?id=7
	// policy: endpoint "fe80::1:443": an IPv6 address without brackets; write "[fe80::1:443]", or "[fe80::1]:443" for port 443
	// policy: endpoint "api.example.com/v1": a path ("/v1"); want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user
	// https://api.example.com/v1/orders?id=7
}
