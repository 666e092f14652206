package policy

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Penalty adds a fixed delay to every retry that goes to a scope for a
// while after one of its attempts got a response that signals an
// overloaded server, whether or not that response is retried: an error
// code (as classify.Code finds it) or a status. Service Bus's clients
// do this after a ServerBusy error: 10 s more on each computed delay, for
// 10 s (docs/azure.md). The delay is added to the backoff or the server's
// delay, on top of MaxDelay; each new signal starts the period again.
//
// A Policy's Penalty is a pointer, and nil means none; a non-nil Penalty
// needs a positive Delay and a signal, a code or a status. Validate rejects
// one without either, which never applies and which New treats as nil, a
// negative For, which New treats as zero, a status outside 100..599, which
// no response has, and an empty code.
type Penalty struct {
	// Codes are the error codes that start the penalty, matched exactly.
	Codes []string
	// Statuses are the response statuses that start it.
	Statuses []int
	// Delay is added to the wait before each retry of the scope while the
	// penalty lasts. It must be positive.
	Delay time.Duration
	// For is how long the penalty lasts after the last signal. Zero means
	// as long as Delay.
	For time.Duration
}

// normalised returns a copy of p, its lists copied too, with a negative For
// as zero, as the transport treats it. It returns nil for a nil p, and for
// one that can never apply: no positive Delay, or no Codes and no
// Statuses.
func (p *Penalty) normalised() *Penalty {
	if p == nil || p.Delay <= 0 || len(p.Codes) == 0 && len(p.Statuses) == 0 {
		return nil
	}
	return &Penalty{
		Codes:    slices.Clone(p.Codes),
		Statuses: slices.Clone(p.Statuses),
		Delay:    p.Delay,
		For:      max(p.For, 0),
	}
}

// validate reports p's settings that are out of range.
func (p *Penalty) validate() []error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.Delay <= 0 {
		errs = append(errs, fmt.Errorf("policy: Penalty.Delay = %v; want > 0, or a nil Penalty for none: without a Delay it never applies", p.Delay))
	}
	if p.For < 0 {
		errs = append(errs, fmt.Errorf("policy: Penalty.For = %v; want >= 0 (0: as long as Delay)", p.For))
	}
	if len(p.Codes) == 0 && len(p.Statuses) == 0 {
		errs = append(errs, errors.New("policy: Penalty.Codes and Penalty.Statuses are empty; want a code or a status that starts the penalty, or a nil Penalty for none: without one it never applies"))
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
	return errs
}
