package policy

// This file reports the members of a policy document that an earlier
// schema had and that moved into an object of their feature, saying where
// each went.

// movedMember is a policy member that moved, the member it moved to, and
// how to write it there.
type movedMember struct {
	name, to, write string
}

// movedMemberTable returns the members that moved, built on each call so
// that no caller can change it.
func movedMemberTable() []movedMember {
	return []movedMember{
		{"adaptive", "limiter", `"limiter": {} (AWS adaptive mode's limiter, with its defaults)`},
		{"disableQuota", "quota", `"quota": "none"`},
		{"delayHeaders", "serverDelay", `"serverDelay": {"headers": [...]}`},
		{"ignoreDelayHeaders", "serverDelay", `"serverDelay": {"headers": "none"}`},
		{"serverDelayBound", "serverDelay", `"serverDelay": {"bound": "5s"}`},
		{"endpoints", "failover", `"failover": {"endpoints": [...]}`},
		{"locationMode", "failover", `"failover": {"mode": "..."}`},
		{"failoverMethods", "failover", `"failover": {"methods": [...]}`},
	}
}

// movedMembers reports each member of ms, the policy object at path, whose
// name is one that moved, with where it went, and returns the others.
func movedMembers(d *decoder, path string, ms []member) []member {
	table := movedMemberTable()
	var rest []member
next:
	for _, m := range ms {
		for _, mv := range table {
			if m.name == mv.name {
				d.errs = append(d.errs, &FieldError{Field: join(path, m.name), Want: "moved; write " + mv.write, Suggestion: mv.to})
				continue next
			}
		}
		rest = append(rest, m)
	}
	return rest
}
