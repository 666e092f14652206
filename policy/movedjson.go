package policy

import (
	"bytes"
	"encoding/json"
)

// This file reports the members of a policy document that an earlier
// schema had and that moved into the object of their feature, saying
// where each went.

// movedMember is a member of a policy object that moved to the member to,
// where it is written as write. A flag was a boolean whose false was the
// default.
type movedMember struct {
	name, to, write string
	flag            bool
}

// movedMembers returns the members of a policy object that moved. The
// table is built on each call, so that no caller can change it.
func movedMembers() []movedMember {
	return []movedMember{
		{"adaptive", "limiter", `"limiter": {} (AWS adaptive mode's limiter, with its defaults)`, true},
		{"disableQuota", "quota", `"quota": "none"`, true},
		{"delayHeaders", "serverDelay", `"serverDelay": {"headers": [...]}`, false},
		{"ignoreDelayHeaders", "serverDelay", `"serverDelay": {"headers": "none"}`, true},
		{"serverDelayBound", "serverDelay", `"serverDelay": {"bound": "5s"}`, false},
		{"endpoints", "failover", `"failover": {"endpoints": [...]}`, false},
		{"locationMode", "failover", `"failover": {"mode": "..."}`, false},
		{"failoverMethods", "failover", `"failover": {"methods": [...]}`, false},
	}
}

// fieldError returns the FieldError of m, found at path with the value
// raw. Its Suggestion is the member m moved to, and its Want how to write
// the setting there; but a flag set to false, and any member set to null,
// asked for the default, which needs no member at all, so the Want is to
// remove it: the setting m moved to would do the opposite.
func (m movedMember) fieldError(path string, raw json.RawMessage) *FieldError {
	if v := string(bytes.TrimSpace(raw)); v == "null" || m.flag && v == "false" {
		return &FieldError{Field: path, Want: "moved; " + v + " is the default, so remove the member"}
	}
	return &FieldError{Field: path, Want: "moved; write " + m.write, Suggestion: m.to}
}
