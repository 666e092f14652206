package policy

import (
	"encoding/json"
	"fmt"
)

// This file maps Failover and Hedge to the failover and hedge members of
// the JSON schema (see Load) and back.

// Descriptions of the values the failover and hedge members accept.
const (
	wantEndpoint  = `"host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user`
	wantMethod    = "a method name such as GET"
	wantQuantile  = "a number 0 <= q < 1 (0: delay alone)"
	wantMaxHedges = "an integer 1..4 (HedgeLimit), or 0 for 1"
)

// failover decodes a failover object into a new Failover. Its endpoints
// member is required: a failover without endpoints fails nothing over.
func (v value) failover() *Failover {
	f := new(Failover)
	ms, ok := v.d.members(v.path, v.raw, "a failover object")
	if !ok {
		return f
	}
	given := false
	v.d.apply(v.path, ms, []field{
		{"endpoints", func(v value) {
			given = true
			switch f.Endpoints = v.endpoints(); {
			case f.Endpoints != nil && len(f.Endpoints) == 0:
				v.fail("a non-empty list of endpoints")
			case len(f.Endpoints) > MaxEndpoints:
				v.fail(fmt.Sprintf("a list of at most %d endpoints (MaxEndpoints), not %d", MaxEndpoints, len(f.Endpoints)))
			}
		}},
		{"mode", func(v value) { f.Mode = v.locationMode() }},
		{"methods", func(v value) { f.Methods = v.failoverMethods() }},
	})
	if !given {
		v.d.fail(join(v.path, "endpoints"), "", "missing; want a non-empty list of endpoints")
	}
	return f
}

// endpoints decodes a list of alternate endpoints, each checked with
// ParseEndpoint and kept as written; the error of a bad one says what
// ParseEndpoint found wrong. An empty list gives an empty, non-nil slice,
// so that the policy written back is the same.
func (v value) endpoints() []string {
	return v.checkedList("a list of endpoints", wantEndpoint, func(s string) string {
		_, f := parseEndpoint(s)
		switch {
		case f.what == "":
			return ""
		case f.fix != "":
			return wantEndpoint + " (" + f.what + "; " + f.fix + ")"
		}
		return wantEndpoint + " (" + f.what + ")"
	})
}

// failoverMethods decodes a list of method names, kept as written: methods
// are case-sensitive. An empty list, which lets no request fail over, gives
// an empty, non-nil slice, unlike a missing one, which means GET and HEAD.
func (v value) failoverMethods() []string {
	return v.stringList("a list of method names", wantMethod, validHeaderName)
}

// stringList decodes a list of strings for which ok holds. want describes
// the list, wantElem each string. It returns nil only when v is not a list.
func (v value) stringList(want, wantElem string, ok func(string) bool) []string {
	return v.checkedList(want, wantElem, func(s string) string {
		if !ok(s) {
			return wantElem
		}
		return ""
	})
}

// checkedList is stringList for a check that says what is wrong: check
// returns "" for a good string, else what the error wants instead.
func (v value) checkedList(want, wantElem string, check func(string) string) []string {
	elems := v.elements(want)
	if elems == nil {
		return nil
	}
	list := make([]string, 0, len(elems))
	for _, e := range elems {
		s, isString := e.string(wantElem)
		if isString {
			if why := check(s); why != "" {
				e.fail(why)
			}
		}
		list = append(list, s)
	}
	return list
}

// locationMode decodes a location mode's name, in any case.
func (v value) locationMode() LocationMode {
	s, ok := v.string(wantLocationMode)
	if !ok {
		return PrimaryThenSecondary
	}
	m, err := ParseLocationMode(s)
	if err != nil {
		v.failName(s, locationModeNames[:], wantLocationMode)
	}
	return m
}

// hedge decodes a hedge object into a new Hedge. One without a delay or
// a quantile, which would hedge nothing, is reported.
func (v value) hedge() *Hedge {
	h := new(Hedge)
	errs := len(v.d.errs)
	ms, ok := v.d.members(v.path, v.raw, "a hedge object")
	if !ok {
		return h
	}
	v.d.apply(v.path, ms, []field{
		{"delay", setDuration(&h.Delay)},
		{"quantile", func(v value) { h.Quantile = v.float(below1, wantQuantile) }},
		{"minDelay", setDuration(&h.MinDelay)},
		{"maxHedges", func(v value) { h.MaxHedges = int(v.int(0, HedgeLimit, wantMaxHedges)) }},
	})
	if len(v.d.errs) == errs && h.Delay == 0 && h.Quantile == 0 {
		v.fail("a hedge object with a delay > 0 or a quantile > 0; without either it hedges nothing")
	}
	return h
}

// locationMode encodes m, the inverse of value.locationMode; a mode without
// a name has no JSON form.
func (e *encoder) locationMode(path string, m LocationMode) []byte {
	if m < 0 || int(m) >= len(locationModeNames) {
		e.fail(path, "it is "+m.String())
		return []byte("null")
	}
	b, _ := json.Marshal(m.String()) // a string always marshals
	return b
}

// failover encodes f as a failover object, the inverse of value.failover.
func (e *encoder) failover(path string, f *Failover) []byte {
	o := e.object(path)
	o.strs("endpoints", f.Endpoints)
	if f.Mode != PrimaryThenSecondary {
		o.member("mode", e.locationMode(join(path, "mode"), f.Mode))
	}
	o.strs("methods", f.Methods)
	return o.bytes()
}

// hedge encodes h as a hedge object, the inverse of value.hedge.
func (e *encoder) hedge(path string, h *Hedge) []byte {
	o := e.object(path)
	o.dur("delay", h.Delay)
	o.float("quantile", h.Quantile)
	o.dur("minDelay", h.MinDelay)
	o.int("maxHedges", int64(h.MaxHedges))
	return o.bytes()
}
