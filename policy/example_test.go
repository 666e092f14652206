package policy_test

import (
	"fmt"

	"github.com/retrytransport/retrytransport/policy"
)

func ExampleStandard() {
	p := policy.Standard().WithDefaults()
	fmt.Println("attempts:", p.MaxAttempts)
	fmt.Println("max delay:", p.MaxDelay)
	fmt.Println("body buffer:", p.MaxBodyBuffer, "drain:", p.MaxDrain)
	fmt.Println("own quota:", p.Quota == nil && !p.DisableQuota)
	// Output:
	// attempts: 3
	// max delay: 20s
	// body buffer: 1048576 drain: 65536
	// own quota: true
}

func ExamplePolicy_Validate() {
	p := policy.Policy{MaxAttempts: -1, MaxDrain: -4096}
	fmt.Println(p.Validate())
	fmt.Println(policy.Standard().Validate())
	// Output:
	// policy: MaxAttempts = -1; want >= 1, or 0 for the default
	// policy: MaxDrain = -4096; want > 0, or 0 for the default
	// <nil>
}
