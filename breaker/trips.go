package breaker

import (
	"slices"

	"github.com/retrytransport/retrytransport/classify"
)

// Tripper says which outcomes count as failures of a server in trouble (see
// Circuit.Trips). Kinds and TripFunc implement it.
type Tripper interface {
	// Trips reports whether o counts as a failure. It must be safe for
	// concurrent use.
	Trips(o classify.Outcome) bool
}

// Kinds is a Tripper that counts the outcomes of the kinds it lists:
// Kinds{classify.Timeout} counts the client's own timeouts and nothing
// else. A Circuit asks about Transient and Timeout outcomes only, so other
// kinds in the list change nothing. The nil Kinds counts none.
type Kinds []classify.Kind

// Trips reports whether o's kind is in k.
func (k Kinds) Trips(o classify.Outcome) bool { return slices.Contains(k, o.Kind) }

// TripFunc adapts a function to a Tripper, for a rule by status or reason:
//
//	breaker.TripFunc(func(o classify.Outcome) bool { return o.Reason != "status 501" })
type TripFunc func(o classify.Outcome) bool

// Trips returns f(o).
func (f TripFunc) Trips(o classify.Outcome) bool { return f(o) }
