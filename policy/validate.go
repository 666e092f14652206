package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/quota"
)

// fixedDelays returns the sum of the waits p's backoff will certainly make
// before all of its retries, for the strategies whose delays are fixed (no
// jitter): backoff.Constant and backoff.Incremental over MaxAttempts, and an
// SNS backoff.Schedule's lower bound (its Total without jitter, up to
// MaxAttempts-1 retries).
func fixedDelays(p Policy) (time.Duration, bool) {
	p = p.WithDefaults()
	retries := p.MaxAttempts - 1
	switch b := p.Backoff.(type) {
	case backoff.Constant, backoff.Incremental, backoff.Schedule:
		var sum time.Duration
		for n := 1; n <= retries && n <= 10_000; n++ {
			d := min(b.Delay(n), p.MaxDelay)
			if s, ok := b.(backoff.Schedule); ok && s.Jitter > 0 {
				d = 0 // jitter may shorten it; only the unjittered parts are certain
			}
			sum += d
			if sum > 1<<62 {
				break
			}
		}
		return sum, true
	}
	return 0, false
}

// Validate reports every setting of p that is out of range, each error
// naming the field, the value and what is allowed. It rejects only the
// values that a field's comment calls an error: a value the comment gives
// a meaning, as "zero or negative means the default", passes. A policy
// that fails Validate still works (its values are used as the field
// comments say, mostly through [Policy.WithDefaults]); Validate is for
// catching mistakes at startup.
func (p Policy) Validate() error {
	// MaxDelay, MaxBodyBuffer, MaxDrain and ReadTimeout are not checked:
	// their comments give every value a meaning, a negative one the
	// default.
	var errs []error
	if p.MaxAttempts < 0 {
		// Other libraries read -1 as "no limit"; here it would be 3.
		errs = append(errs, fmt.Errorf("policy: MaxAttempts = %d; want >= 1, or 0 for the default (%d)", p.MaxAttempts, DefaultMaxAttempts))
	}
	errs = append(errs, p.ServerDelay.validate()...)
	if p.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("policy: AttemptTimeout = %v; want >= 0 (0: none)", p.AttemptTimeout))
	}
	if p.MaxTotalTime < 0 {
		errs = append(errs, fmt.Errorf("policy: MaxTotalTime = %v; want >= 0 (0: none)", p.MaxTotalTime))
	}
	if p.MaxTotalTime > 0 && p.AttemptTimeout > p.MaxTotalTime {
		errs = append(errs, fmt.Errorf("policy: AttemptTimeout = %v is longer than MaxTotalTime = %v; want AttemptTimeout <= MaxTotalTime", p.AttemptTimeout, p.MaxTotalTime))
	}
	if p.MaxTotalTime > 0 {
		if fixed, ok := fixedDelays(p); ok && fixed > p.MaxTotalTime {
			errs = append(errs, fmt.Errorf("policy: the fixed delays of Backoff add up to %v over %d attempts, more than MaxTotalTime = %v", fixed, p.WithDefaults().MaxAttempts, p.MaxTotalTime))
		}
	}
	if h := p.AttemptHeader; h != "" && !validHeaderName(h) {
		errs = append(errs, fmt.Errorf("policy: AttemptHeader = %q; want a header name (letters, digits and !#$%%&'*+-.^_`|~)", h))
	}
	errs = append(errs, p.Failover.validate()...)
	errs = append(errs, p.Hedge.validate()...)
	errs = append(errs, p.Penalty.validate()...)
	if p.MaxTotalWait < 0 {
		errs = append(errs, fmt.Errorf("policy: MaxTotalWait = %v; want >= 0 (0: none)", p.MaxTotalWait))
	}
	if p.TerminationBuffer < 0 {
		errs = append(errs, fmt.Errorf("policy: TerminationBuffer = %v; want >= 0 (0: none)", p.TerminationBuffer))
	}
	if p.MaxTotalTime > 0 && p.TerminationBuffer >= p.MaxTotalTime {
		errs = append(errs, fmt.Errorf("policy: TerminationBuffer = %v is not shorter than MaxTotalTime = %v; no retry could start", p.TerminationBuffer, p.MaxTotalTime))
	}
	// A *breaker.Circuit, *concurrency.Adaptive or *concurrency.Fixed
	// gives every value of its fields a meaning (a negative count or
	// duration means what zero means, a Max below Min is Min, a Tolerance
	// of 1 or less is the default), so Breaker and Concurrency are checked
	// only for nil pointers.
	errs = append(errs, p.validateNilPointers()...)
	errs = append(errs, validateQuota(orNil(p.Quota))...)
	return errors.Join(errs...)
}

// validateQuota reports a quota that does not belong in Policy.Quota, and
// the settings of a *quota.Bucket that are out of range. rq is not a nil
// pointer (see orNil). A Quota's
// other fields, and every field of a Budget or a limiter, have a meaning
// for every value (see package ratelimit): a negative or NaN
// RefillPerSecond is no refill. Wait alone needs a rate.
func validateQuota(rq quota.Quota) []error {
	if _, counts := rq.(quota.RequestCounter); counts {
		// Quota is paid in the scope each retry is sent to; a quota that
		// counts requests counts them in the request's own scope, where
		// Budget is paid.
		return []error{fmt.Errorf("policy: Quota is a %T, which counts requests; want it in Budget, which is paid in the request's own scope", rq)}
	}
	if q, ok := rq.(*quota.Bucket); ok {
		if q.Wait && !(q.RefillPerSecond > 0) {
			return []error{fmt.Errorf("policy: Quota.Wait is set but Quota.RefillPerSecond = %v; waiting mode needs a refill rate > 0", q.RefillPerSecond)}
		}
	}
	return nil
}

// validHeaderName reports whether s is a field name as RFC 9110 defines
// it: a non-empty token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
