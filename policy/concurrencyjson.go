package policy

import (
	"fmt"
	"math"
	"strings"

	"github.com/retrytransport/retrytransport/concurrency"
)

// This file maps the concurrency limits of package concurrency to the
// concurrency member of the JSON schema (see Load) and back. Each decode
// makes a new value, so that no two loads share one; the After hook has
// no member.

// concurrencyTypes are the values of a concurrency object's "type", as
// Load's documentation lists them; value.concurrency matches them in any
// case.
var concurrencyTypes = []string{"adaptive", "fixed"}

// wantConcurrencyType lists the concurrency types.
const wantConcurrencyType = "adaptive or fixed"

// Descriptions of the values of a concurrency object's numbers.
const (
	wantTolerance = "a number > 1, or 0 for the default"
	wantBackoff   = "a number 0 <= n < 1 (0: the default)"
	wantFixedMax  = "an integer >= 0 (0: no limit)"
)

// concurrency decodes a concurrency object: one whose "type" is adaptive
// into a new Adaptive, or fixed into a new Fixed. It returns nil, and
// reports why, when it has no type or one of neither name.
func (v value) concurrency() concurrency.Limiter {
	o, ok := v.typed("a concurrency object whose type is "+wantConcurrencyType, wantConcurrencyType)
	if !ok {
		return nil
	}
	switch strings.ToLower(o.typ) {
	case "adaptive":
		a := new(concurrency.Adaptive)
		o.fields(field{"initial", setCount(&a.Initial)},
			field{"min", setCount(&a.Min)},
			field{"max", setCount(&a.Max)},
			field{"tolerance", func(v value) { a.Tolerance = v.float(tolerance, wantTolerance) }},
			field{"backoff", func(v value) { a.Backoff = v.float(below1, wantBackoff) }},
			field{"maxWait", setDuration(&a.MaxWait)},
			field{"maxScopes", setCount(&a.MaxScopes)})
		return a
	case "fixed":
		f := new(concurrency.Fixed)
		o.fields(field{"max", func(v value) { f.Max = v.count(wantFixedMax) }},
			field{"maxWait", setDuration(&f.MaxWait)},
			field{"maxScopes", setCount(&f.MaxScopes)})
		return f
	}
	o.unknown(concurrencyTypes, wantConcurrencyType)
	return nil
}

// tolerance reports whether f is a Tolerance that Load takes: zero, the
// default, or a finite number above 1. An Adaptive reads any other value
// as the default too, but a document that writes one more likely means
// something else, such as a fraction.
func tolerance(f float64) bool { return f == 0 || (f > 1 && !math.IsInf(f, 1)) }

// concurrency encodes l as a concurrency object, the inverse of
// value.concurrency. A value that the limiter reads as another, which
// Load refuses, is written as that other, in the range Load takes: a
// count or duration below zero as zero, a Tolerance of 1 or less, NaN or
// +Inf, and a Backoff outside (0, 1), as zero, the default.
func (e *encoder) concurrency(path string, l concurrency.Limiter) []byte {
	o := e.object(path)
	switch c := l.(type) {
	case *concurrency.Adaptive:
		o.str("type", "adaptive")
		o.int("initial", int64(max(c.Initial, 0)))
		o.int("min", int64(max(c.Min, 0)))
		o.int("max", int64(max(c.Max, 0)))
		if tolerance(c.Tolerance) {
			o.float("tolerance", c.Tolerance)
		}
		if below1(c.Backoff) {
			o.float("backoff", c.Backoff)
		}
		o.dur("maxWait", max(c.MaxWait, 0))
		o.int("maxScopes", int64(max(c.MaxScopes, 0)))
		o.fn("after", c.After != nil)
	case *concurrency.Fixed:
		o.str("type", "fixed")
		o.int("max", int64(max(c.Max, 0)))
		o.dur("maxWait", max(c.MaxWait, 0))
		o.int("maxScopes", int64(max(c.MaxScopes, 0)))
		o.fn("after", c.After != nil)
	default:
		e.fail(path, fmt.Sprintf("it is a %T; only a *concurrency.Adaptive or a *concurrency.Fixed has a JSON form", l))
		return []byte("null")
	}
	return o.bytes()
}
