package policy

import (
	"reflect"
	"strings"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// This file maps the in-process circuit breaker of package breaker to the
// breaker member of the JSON schema (see Load) and back. Each decode makes
// a new *breaker.Circuit, so that no two loads share one. Trips, a func,
// is written as the list of outcome kinds that count as failures; the
// hooks (Now, Rand, OnChange) have no member.

// tripKinds are the names in a breaker object's trips: the kinds of
// outcome that a Circuit asks its Trips about, and no others.
var tripKinds = []string{"transient", "timeout"}

// wantTrips is what the trips member accepts.
const wantTrips = "a non-empty list of transient, timeout"

// tripsTransient and tripsTimeout are the Trips of a breaker object whose
// trips names one kind: only that kind's outcomes count as failures. A
// Circuit asks Trips about Transient and Timeout outcomes alone, so
// naming both is a nil Trips, the Circuit's default.
func tripsTransient(o classify.Outcome) bool { return o.Kind == classify.Transient }
func tripsTimeout(o classify.Outcome) bool   { return o.Kind == classify.Timeout }

// breaker decodes a breaker object into a new Circuit.
func (v value) breaker() *breaker.Circuit {
	c := new(breaker.Circuit)
	v.d.object(v.path, v.raw, "a breaker object",
		field{"failures", setCount(&c.Failures)},
		field{"stalls", setCount(&c.Stalls)},
		field{"stallFor", setDuration(&c.StallFor)},
		field{"trips", func(v value) { c.Trips = v.trips() }},
		field{"openFor", setDuration(&c.OpenFor)},
		field{"maxOpenFor", setDuration(&c.MaxOpenFor)},
		field{"probes", setCount(&c.Probes)},
		field{"probeLease", setDuration(&c.ProbeLease)},
		field{"maxScopes", setCount(&c.MaxScopes)},
	)
	return c
}

// trips decodes a trips list, kind names in any case, into a Circuit's
// Trips: nil when it names both kinds, which is what a nil Trips counts.
func (v value) trips() func(classify.Outcome) bool {
	elems := v.elements(wantTrips)
	if elems == nil {
		return nil
	}
	if len(elems) == 0 {
		v.fail(wantTrips)
		return nil
	}
	var transient, timeout bool
	for _, e := range elems {
		s, ok := e.string("transient or timeout")
		if !ok {
			continue
		}
		switch strings.ToLower(s) {
		case "transient":
			transient = true
		case "timeout":
			timeout = true
		default:
			e.failName(s, tripKinds, "transient or timeout")
		}
	}
	switch {
	case transient && !timeout:
		return tripsTransient
	case timeout && !transient:
		return tripsTimeout
	}
	return nil
}

// breaker encodes b as a breaker object, the inverse of value.breaker. A
// count or duration below zero, which the Circuit reads as its default,
// is written as zero, which Load reads the same, since Load refuses
// negative values.
func (e *encoder) breaker(path string, b breaker.Breaker) []byte {
	c := only[breaker.Circuit](e, path, b)
	if c == nil {
		return []byte("null")
	}
	o := e.object(path)
	o.int("failures", int64(max(c.Failures, 0)))
	o.int("stalls", int64(max(c.Stalls, 0)))
	o.dur("stallFor", max(c.StallFor, 0))
	switch {
	case c.Trips == nil:
	case sameFunc(c.Trips, tripsTransient):
		o.strs("trips", []string{"transient"})
	case sameFunc(c.Trips, tripsTimeout):
		o.strs("trips", []string{"timeout"})
	default:
		e.fail(join(path, "trips"), "it is a func; only the Trips that Load makes of a trips list has a JSON form")
	}
	o.dur("openFor", max(c.OpenFor, 0))
	o.dur("maxOpenFor", max(c.MaxOpenFor, 0))
	o.int("probes", int64(max(c.Probes, 0)))
	o.dur("probeLease", max(c.ProbeLease, 0))
	o.int("maxScopes", int64(max(c.MaxScopes, 0)))
	o.fn("now", c.Now != nil)
	o.fn("rand", c.Rand != nil)
	o.fn("onChange", c.OnChange != nil)
	return o.bytes()
}

// sameFunc reports whether f is g, a function declared in this package.
// Funcs cannot be compared in Go; their code pointers can, and no func
// of a caller's, a closure included, has the code pointer of a function
// of this package.
func sameFunc(f, g func(classify.Outcome) bool) bool {
	return reflect.ValueOf(f).Pointer() == reflect.ValueOf(g).Pointer()
}
