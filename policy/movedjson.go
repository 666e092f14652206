package policy

// This file reports the members of a policy document that an earlier
// schema had and that moved into the object of their feature, saying
// where each went.

// movedMember is a member of a policy object that moved to the member to,
// where it is written as write.
type movedMember struct{ name, to, write string }

// movedMembers returns the members of a policy object that moved. The
// table is built on each call, so that no caller can change it.
func movedMembers() []movedMember {
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

// fieldError returns the FieldError of m found at path, whose Suggestion
// is the member m moved to.
func (m movedMember) fieldError(path string) *FieldError {
	return &FieldError{Field: path, Want: "moved; write " + m.write, Suggestion: m.to}
}
