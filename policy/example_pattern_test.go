package policy_test

import (
	"fmt"

	"github.com/retrytransport/retrytransport/policy"
)

// Validate says what is wrong with each host pattern, before the patterns
// reach the transport's WithHostPolicy, which panics on an invalid one.
// The patterns are checked in sorted order.
func ExampleMap_Validate_patterns() {
	m := policy.Map{Hosts: map[string]policy.Policy{
		"api.example.com":         {},
		"*.example.com":           {},
		"[::1]":                   {},
		"127.0.0.1:8080":          {},
		"https://api.example.org": {},
		"api..example.net":        {},
		"*.":                      {},
	}}
	fmt.Println(m.Validate())
	// Output:
	// policy: hosts["*."]: nothing after "*."; want a domain
	// policy: hosts["127.0.0.1:8080"]: has a port; patterns match hostnames only, on every port
	// policy: hosts["api..example.net"]: an empty label; want labels separated by one "."
	// policy: hosts["https://api.example.org"]: has a scheme; patterns match hostnames only, for every scheme
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
