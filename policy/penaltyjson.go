package policy

// This file maps Penalty to the penalty member of the JSON schema (see
// Load) and back, with the lists of statuses and codes that the classifier
// object shares.

// penalty decodes a penalty object. An empty codes or statuses list gives
// an empty, non-nil slice, so that the policy written back is the same.
func (v value) penalty() Penalty {
	var p Penalty
	v.d.object(v.path, v.raw, "a penalty object",
		field{"codes", func(v value) { p.Codes = v.codes() }},
		field{"statuses", func(v value) { p.Statuses = v.statuses() }},
		field{"delay", setDuration(&p.Delay)},
		field{"for", setDuration(&p.For)},
	)
	return p
}

// codes decodes a list of non-empty error codes, kept as written. It
// returns nil only when v is not a list.
func (v value) codes() []string {
	return v.stringList("a list of error codes", wantCode, func(s string) bool { return s != "" })
}

// statuses decodes a list of HTTP statuses 100..599. It returns nil only
// when v is not a list.
func (v value) statuses() []int {
	elems := v.elements("a list of HTTP statuses")
	if elems == nil {
		return nil
	}
	list := make([]int, 0, len(elems))
	for _, e := range elems {
		list = append(list, int(e.int(100, 599, wantStatus)))
	}
	return list
}

// zeroPenalty reports whether p is the zero Penalty, which has no member:
// an empty but non-nil list is not zero.
func zeroPenalty(p Penalty) bool {
	return p.Codes == nil && p.Statuses == nil && p.Delay == 0 && p.For == 0
}

// penalty encodes p as a penalty object, the inverse of value.penalty.
func (e *encoder) penalty(path string, p Penalty) []byte {
	o := e.object(path)
	o.strs("codes", p.Codes)
	o.ints("statuses", p.Statuses)
	o.dur("delay", p.Delay)
	o.dur("for", p.For)
	return o.bytes()
}
