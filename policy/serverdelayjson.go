package policy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/retrytransport/retrytransport/retryafter"
)

// This file maps ServerDelay to the serverDelay member of the JSON schema
// (see Load) and back.

// serverDelay decodes a serverDelay object.
func (v value) serverDelay() ServerDelay {
	var sd ServerDelay
	v.d.object(v.path, v.raw, "a serverDelay object",
		field{"headers", func(v value) { sd.Headers = v.sources() }},
		field{"bound", setDuration(&sd.Bound)},
	)
	return sd
}

// sourceList returns every retryafter.Source, one bit each, in bit order.
func sourceList() []retryafter.Source {
	var list []retryafter.Source
	for i := range 16 {
		if s := retryafter.Source(1) << i; s&retryafter.AllSources != 0 {
			list = append(list, s)
		}
	}
	return list
}

// sources decodes serverDelay.headers: "all", "none" (retryafter.None), or
// a non-empty list of the names that retryafter.Source.String gives, each
// in any case.
func (v value) sources() retryafter.Source {
	var names []string
	for _, s := range sourceList() {
		names = append(names, s.String())
	}
	want := `"all", "none" or a non-empty list of ` + strings.Join(names, ", ")
	if bytes.HasPrefix(bytes.TrimSpace(v.raw), []byte(`"`)) {
		s, _ := v.string(want)
		switch {
		case strings.EqualFold(s, "all"):
			return retryafter.AllSources
		case strings.EqualFold(s, "none"):
			return retryafter.None
		}
		v.fail(want)
		return 0
	}
	elems := v.elements(want)
	if elems != nil && len(elems) == 0 {
		v.fail(want + ` ("none" trusts none)`)
	}
	var set retryafter.Source
	wantName := "one of " + strings.Join(names, ", ")
	list := sourceList()
	for _, e := range elems {
		name, ok := e.string(wantName)
		if !ok {
			continue
		}
		found := false
		for _, s := range list {
			if strings.EqualFold(name, s.String()) {
				set, found = set|s, true
			}
		}
		if !found {
			e.failName(name, names, wantName)
		}
	}
	return set
}

// serverDelay encodes sd, which is not zero, as a serverDelay object, the
// inverse of value.serverDelay.
func (e *encoder) serverDelay(path string, sd ServerDelay) []byte {
	o := e.object(path)
	if sd.Headers != 0 {
		o.member("headers", e.sources(join(path, "headers"), sd.Headers))
	}
	o.dur("bound", sd.Bound)
	return o.bytes()
}

// sources encodes a non-empty set of headers: "all", "none", or its
// names.
func (e *encoder) sources(path string, set retryafter.Source) []byte {
	switch {
	case set == retryafter.None:
		return []byte(`"none"`)
	case set&retryafter.None != 0:
		e.fail(path, "it holds retryafter.None with other headers, "+(set&^retryafter.None).String()+"; want None alone")
		return []byte("null")
	case set&^retryafter.AllSources != 0:
		e.fail(path, "it holds "+(set&^retryafter.AllSources).String()+", which names no retryafter.Source")
		return []byte("null")
	case set == retryafter.AllSources:
		return []byte(`"all"`)
	}
	var names []string
	for _, s := range sourceList() {
		if set&s != 0 {
			names = append(names, s.String())
		}
	}
	b, _ := json.Marshal(names) // a []string always marshals
	return b
}
