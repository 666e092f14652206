package policy

// typedObject is a JSON object whose "type" member says which of several
// kinds it is, a backoff strategy or a concurrency limit: its members, and
// its type as written.
type typedObject struct {
	v   value
	ms  []member
	typ string
	tv  value // the "type" member's value, which an unknown type is reported at
}

// typed reads v as an object with a "type" member, a string; what
// describes the object and want the types, for the errors. It reports why
// v is not one and returns ok false.
func (v value) typed(what, want string) (o typedObject, ok bool) {
	ms, ok := v.d.members(v.path, v.raw, what)
	if !ok {
		return typedObject{}, false
	}
	o = typedObject{v: v, ms: ms}
	hasType := false
	for _, m := range ms {
		if m.name == "type" && !isNull(m.raw) {
			o.tv = value{v.d, join(v.path, m.name), m.raw}
			if o.typ, hasType = o.tv.string(want); !hasType {
				return typedObject{}, false
			}
		}
	}
	if !hasType {
		v.d.fail(join(v.path, "type"), "", "missing; want "+want)
		return typedObject{}, false
	}
	return o, true
}

// fields passes each member of o but "type" to the field of its name, and
// reports the members that none accepts.
func (o typedObject) fields(fs ...field) {
	o.v.d.apply(o.v.path, o.ms, append([]field{{"type", func(value) {}}}, fs...))
}

// unknown reports that o's type is none of names; want describes them.
func (o typedObject) unknown(names []string, want string) { o.tv.failName(o.typ, names, want) }
