package main

import (
	"fmt"
	"math"
	"time"

	"github.com/retrytransport/retrytransport/policy"
)

// limitMark says how an attempt stands with the policy's limit on time
// (see cutoff).
type limitMark int

const (
	withinLimit limitMark = iota
	mayOverrun            // the longest waits reach the limit
	overLimit             // even the shortest waits reach it: never attempted
)

// cutoff is the limit that ends a schedule early: the smallest sum of the
// waits before an attempt at which the transport no longer starts it. The
// zero cutoff is no limit.
type cutoff struct {
	at    time.Duration // an attempt after at least this much waiting is not made
	field string        // the field that sets it: MaxTotalTime or MaxTotalWait
	// buffer is the TerminationBuffer that brings a MaxTotalTime cutoff
	// forward, or zero.
	buffer time.Duration
	value  time.Duration // the field's value
}

// cutoffOf returns the cutoff of p, a policy with its defaults resolved:
// the earlier of
//
//   - MaxTotalTime T: an attempt due when T ends is not made (at T), nor,
//     with a TerminationBuffer b, one that would start with less than b
//     left (at T - b + 1ns);
//   - MaxTotalWait W: no wait starts that would take the waits past W
//     (at W + 1ns).
//
// The times of the schedule are waits alone, so MaxTotalWait applies to
// them exactly, while MaxTotalTime also counts the attempts (see main.go).
func cutoffOf(p policy.Policy) cutoff {
	var c cutoff
	if t := p.MaxTotalTime; t > 0 {
		c = cutoff{at: t, field: "MaxTotalTime", value: t}
		if b := min(p.TerminationBuffer, t); b > 0 {
			c.at, c.buffer = t-b+1, b
		}
	}
	if w := p.MaxTotalWait; w > 0 {
		at := w
		if w < math.MaxInt64 {
			at++
		}
		if c.at == 0 || at < c.at {
			c = cutoff{at: at, field: "MaxTotalWait", value: w}
		}
	}
	return c
}

// mark places an attempt that starts after total of waiting against c.
func (c cutoff) mark(total span) limitMark {
	switch {
	case c.at <= 0 || total.hi < c.at:
		return withinLimit
	case total.lo < c.at:
		return mayOverrun
	default:
		return overLimit
	}
}

// note returns the notes column's word for m, which names the field that
// sets the limit.
func (c cutoff) note(m limitMark) string {
	switch m {
	case mayOverrun:
		return "may exceed " + c.field
	case overLimit:
		return "over " + c.field + ": not attempted"
	}
	return ""
}

// summary returns the line that says why attempt, the first over c, is not
// made.
func (c cutoff) summary(attempt int) string {
	switch {
	case c.field == "MaxTotalWait":
		return fmt.Sprintf("MaxTotalWait, %s, leaves no room for the wait before attempt %s: the transport does not start it.",
			fmtDur(c.value), commas(attempt))
	case c.buffer > 0:
		return fmt.Sprintf("MaxTotalTime, %s, less its TerminationBuffer, %s, is spent before attempt %s: the transport does not start it.",
			fmtDur(c.value), fmtDur(c.buffer), commas(attempt))
	}
	return fmt.Sprintf("MaxTotalTime, %s, is spent before attempt %s: the transport does not start it.", fmtDur(c.value), commas(attempt))
}
