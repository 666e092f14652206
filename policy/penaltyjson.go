package policy

// This file maps Penalty to the penalty member of the JSON schema (see
// Load) and back, with the lists of statuses and codes that the classifier
// object shares.

// penalty decodes a penalty object into a new Penalty. An empty codes or
// statuses list gives an empty, non-nil slice, so that the policy written
// back is the same. A penalty that can never apply, without a delay or
// without codes and statuses, is reported.
func (v value) penalty() *Penalty {
	p := new(Penalty)
	errs := len(v.d.errs)
	ms, ok := v.d.members(v.path, v.raw, "a penalty object")
	if !ok {
		return p
	}
	v.d.apply(v.path, ms, []field{
		{"codes", func(v value) { p.Codes = v.codes() }},
		{"statuses", func(v value) { p.Statuses = v.statuses() }},
		{"delay", setDuration(&p.Delay)},
		{"for", setDuration(&p.For)},
	})
	if len(v.d.errs) == errs && (p.Delay <= 0 || len(p.Codes) == 0 && len(p.Statuses) == 0) {
		v.fail("a penalty object with a delay > 0 and codes or statuses; without them it never applies")
	}
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

// penalty encodes p as a penalty object, the inverse of value.penalty.
func (e *encoder) penalty(path string, p *Penalty) []byte {
	o := e.object(path)
	o.strs("codes", p.Codes)
	o.ints("statuses", p.Statuses)
	o.dur("delay", p.Delay)
	o.dur("for", p.For)
	return o.bytes()
}
