package policy

import (
	"fmt"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file is the one place that knows the pointer types of this module
// that a policy's Quota, Budget, Limiter and RateLimit hold, so that a nil
// one of them (configuration code that declared a *quota.Bucket and never
// set it) means what a nil field means, everywhere the fields are read,
// instead of a method call on a nil receiver. Types of other modules and
// of users are not looked into: the fields' comments ask that their
// values be usable.

// nilPointer reports whether x is a nil pointer of a type of this module
// that fits a Quota, Budget, Limiter, RateLimit, Breaker or Concurrency
// field: *quota.Bucket, *quota.Budget, *ratelimit.Adaptive,
// *ratelimit.Fixed, *breaker.Circuit, *concurrency.Adaptive or
// *concurrency.Fixed.
func nilPointer(x any) bool {
	switch v := x.(type) {
	case *breaker.Circuit:
		return v == nil
	case *concurrency.Adaptive:
		return v == nil
	case *concurrency.Fixed:
		return v == nil
	case *quota.Bucket:
		return v == nil
	case *quota.Budget:
		return v == nil
	case *ratelimit.Adaptive:
		return v == nil
	case *ratelimit.Fixed:
		return v == nil
	}
	return false
}

// orNil returns x, or the nil interface when x holds a nil pointer that
// nilPointer knows.
func orNil[T any](x T) T {
	if nilPointer(x) {
		var unset T
		return unset
	}
	return x
}

// withoutNilPointers returns p with each of Quota, Budget, Limiter and
// RateLimit that holds a nil pointer (see nilPointer) set to nil, which
// means the same.
func (p Policy) withoutNilPointers() Policy {
	p.Quota, p.Budget = orNil(p.Quota), orNil(p.Budget)
	p.Limiter, p.RateLimit = orNil(p.Limiter), orNil(p.RateLimit)
	p.Breaker, p.Concurrency = orNil(p.Breaker), orNil(p.Concurrency)
	return p
}

// validateNilPointers reports each of p's Quota, Budget, Limiter and
// RateLimit that holds a nil pointer, which is treated as nil.
func (p Policy) validateNilPointers() []error {
	var errs []error
	for _, f := range []struct {
		name, unset string
		v           any
	}{
		{"Quota", "the transport's own quota", p.Quota},
		{"Budget", "no budget", p.Budget},
		{"Limiter", "no limiter", p.Limiter},
		{"RateLimit", "no fixed rate", p.RateLimit},
		{"Breaker", "no circuit breaker", p.Breaker},
		{"Concurrency", "no concurrency limit", p.Concurrency},
	} {
		if nilPointer(f.v) {
			errs = append(errs, fmt.Errorf("policy: %s = (%T)(nil), a nil pointer, which means nil (%s); want a non-nil %[2]T, or nil", f.name, f.v, f.unset))
		}
	}
	return errs
}
