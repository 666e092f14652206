package policy_test

import (
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/policy"
)

// Start from a preset and change what differs: most often MaxAttempts,
// which counts the first attempt too (1 turns retries off). Validate
// checks a policy once, at startup; retrytransport.WithPolicy gives it to
// a transport.
func Example() {
	p := policy.Standard()
	p.MaxAttempts = 5
	if err := p.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", p.MaxAttempts, "longest wait:", p.WithDefaults().MaxDelay)
	// Output: attempts: 5 longest wait: 20s
}

func ExampleStandard() {
	p := policy.Standard().WithDefaults()
	fmt.Println("attempts:", p.MaxAttempts)
	fmt.Println("max delay:", p.MaxDelay)
	fmt.Println("body buffer:", p.MaxBodyBuffer, "drain:", p.MaxDrain)
	fmt.Println("own quota:", p.Quota == nil)
	// Output:
	// attempts: 3
	// max delay: 20s
	// body buffer: 1048576 drain: 65536
	// own quota: true
}

// Validate rejects only the values that the field comments call errors. A
// negative MaxDrain means the default, as its comment says, and passes; a
// negative MaxAttempts or AttemptTimeout is an error and fails.
func ExamplePolicy_Validate() {
	p := policy.Policy{MaxDrain: -4096}
	fmt.Println(p.Validate(), p.WithDefaults().MaxDrain)

	p = policy.Policy{MaxAttempts: -1, AttemptTimeout: -time.Second, TerminationBuffer: 2 * time.Second, MaxTotalTime: time.Second}
	fmt.Println(p.Validate())
	// Output:
	// <nil> 65536
	// policy: MaxAttempts = -1; want >= 1, or 0 for the default (3)
	// policy: AttemptTimeout = -1s; want >= 0 (0: none)
	// policy: TerminationBuffer = 2s is not shorter than MaxTotalTime = 1s; no retry could start
}
