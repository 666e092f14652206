package policy

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// Penalty adds a fixed delay to every retry that goes to a scope for a
// while after one of its attempts got a response that signals an
// overloaded server, whether or not that response is retried: an error
// code (as classify.Code finds it) or a status. Service Bus's clients
// do this after a ServerBusy error: 10 s more on each computed delay, for
// 10 s (docs/azure.md). The delay is added to the backoff or the server's
// delay, on top of MaxDelay; each new signal starts the period again.
//
// The zero Penalty never applies: it needs a Delay and a signal. Validate
// rejects a Delay without Codes or Statuses, which never applies, a
// negative Delay or For, which New treats as zero, a status outside
// 100..599, which no response has, and an empty code.
type Penalty struct {
	// Codes are the error codes that start the penalty, matched exactly.
	Codes []string
	// Statuses are the response statuses that start it.
	Statuses []int
	// Delay is added to the wait before each retry of the scope while the
	// penalty lasts.
	Delay time.Duration
	// For is how long the penalty lasts after the last signal. Zero means
	// as long as Delay.
	For time.Duration
}

// Enabled reports whether p can apply: it has a Delay and a signal.
func (p Penalty) Enabled() bool { return p.Delay > 0 && (len(p.Codes) > 0 || len(p.Statuses) > 0) }

// Period returns how long p lasts after a signal: For, or Delay when For
// is zero.
func (p Penalty) Period() time.Duration {
	if p.For > 0 {
		return p.For
	}
	return p.Delay
}

// Signals reports whether resp, an attempt's response, retried or not,
// starts p: p is Enabled and resp's status is one of Statuses, or its
// error code one of Codes. A nil resp signals nothing. It reads the body
// only when p has Codes, at most classify.MaxPeek bytes of it, and leaves
// the body readable from its start.
func (p Penalty) Signals(resp *http.Response) bool {
	if resp == nil || !p.Enabled() {
		return false
	}
	if slices.Contains(p.Statuses, resp.StatusCode) {
		return true
	}
	return len(p.Codes) > 0 && slices.Contains(p.Codes, classify.Code(resp))
}

// validate reports p's settings that are out of range.
func (p Penalty) validate() []error {
	var errs []error
	if p.Delay < 0 {
		errs = append(errs, fmt.Errorf("policy: Penalty.Delay = %v; want >= 0 (0: no penalty)", p.Delay))
	}
	if p.For < 0 {
		errs = append(errs, fmt.Errorf("policy: Penalty.For = %v; want >= 0 (0: as long as Delay)", p.For))
	}
	for i, s := range p.Statuses {
		if s < 100 || s > 599 {
			errs = append(errs, fmt.Errorf("policy: Penalty.Statuses[%d] = %d; want a status 100..599", i, s))
		}
	}
	for i, c := range p.Codes {
		if c == "" {
			errs = append(errs, fmt.Errorf("policy: Penalty.Codes[%d] is empty; want an error code", i))
		}
	}
	if p.Delay > 0 && len(p.Codes) == 0 && len(p.Statuses) == 0 {
		errs = append(errs, fmt.Errorf("policy: Penalty.Delay = %v but no Codes or Statuses start it", p.Delay))
	}
	return errs
}
