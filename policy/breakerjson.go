package policy

import (
	"slices"
	"strings"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// This file maps the in-process circuit breaker of package breaker to the
// breaker member of the JSON schema (see Load) and back. Each decode makes
// a new *breaker.Circuit, so that no two loads share one. Trips is the
// list of outcome kinds that count as failures, a breaker.Kinds; the hooks
// (Now, Rand, OnChange) have no member.

// tripKinds are the names in a breaker object's trips: the kinds of
// outcome that a Circuit asks its Trips about, and no others.
var tripKinds = []string{"transient", "timeout"}

// wantTrips is what the trips member accepts.
const wantTrips = "a non-empty list of transient, timeout"

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
// Trips, a breaker.Kinds of the kinds it names in the order of tripKinds.
func (v value) trips() breaker.Tripper {
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
	case transient && timeout:
		return breaker.Kinds{classify.Transient, classify.Timeout}
	case transient:
		return breaker.Kinds{classify.Transient}
	case timeout:
		return breaker.Kinds{classify.Timeout}
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
	if c.Trips != nil {
		if names, ok := tripNames(c.Trips); ok {
			o.strs("trips", names)
		} else {
			e.fail(join(path, "trips"), "it is not a breaker.Kinds of transient and timeout; only those have a JSON form")
		}
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

// tripNames returns the names of the kinds a breaker.Kinds lists, in the
// order of tripKinds, or false for another Tripper or a Kinds that lists a
// kind other than Transient and Timeout, which the trips member cannot
// name. A Kinds that lists neither counts no outcome, which no trips list
// says either.
func tripNames(t breaker.Tripper) ([]string, bool) {
	k, ok := t.(breaker.Kinds)
	if !ok {
		return nil, false
	}
	var names []string
	for i, kind := range []classify.Kind{classify.Transient, classify.Timeout} {
		if slices.Contains(k, kind) {
			names = append(names, tripKinds[i])
		}
	}
	for _, kind := range k {
		if kind != classify.Transient && kind != classify.Timeout {
			return nil, false
		}
	}
	return names, len(names) > 0
}
