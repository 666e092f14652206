package policy_test

import (
	"fmt"

	"github.com/retrytransport/retrytransport/policy"
)

// CheckPattern says what is wrong with a host pattern before it reaches
// WithHostPolicy, which panics on an invalid one.
func ExampleCheckPattern() {
	for _, p := range []string{
		"api.example.com",
		"*.example.com",
		"API.Example.com.",
		"[::1]",
		"127.0.0.1:8080",
		"https://api.example.com",
		"api..example.com",
		"*.",
	} {
		if err := policy.CheckPattern(p); err != nil {
			fmt.Printf("%-26q %v\n", p, err)
		} else {
			fmt.Printf("%-26q ok\n", p)
		}
	}
	// Output:
	// "api.example.com"          ok
	// "*.example.com"            ok
	// "API.Example.com."         ok
	// "[::1]"                    ok
	// "127.0.0.1:8080"           policy: host pattern "127.0.0.1:8080": has a port; patterns match hostnames only, on every port
	// "https://api.example.com"  policy: host pattern "https://api.example.com": has a scheme; patterns match hostnames only, for every scheme
	// "api..example.com"         policy: host pattern "api..example.com": an empty label; want labels separated by one "."
	// "*."                       policy: host pattern "*.": nothing after "*."; want a domain
}

// Validate reports two patterns that name the same hosts: they differ only
// in case and a trailing dot.
func ExampleMap_Validate() {
	m := policy.Map{Hosts: map[string]policy.Policy{
		"api.example.com":  {MaxAttempts: 5},
		"API.example.com.": {MaxAttempts: 2},
		"*.example.com":    {},
	}}
	fmt.Println(m.Validate())
	// Output:
	// policy: hosts["api.example.com"]: the same pattern as hosts["API.example.com."]; want each pattern once
}
