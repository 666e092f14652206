package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// exactAttempts is how many attempts build computes one by one. Later
// attempts, which only a policy file with a huge maxAttempts has, are taken
// to wait as long as this one, and the summary says so.
const exactAttempts = 1_000_000

// span is a range of durations, from lo to hi.
type span struct{ lo, hi time.Duration }

// row is one attempt of a schedule.
type row struct {
	attempt int    // from 1
	wait    span   // the wait before the attempt; zero for attempt 1
	total   span   // the sum of the waits before the attempt
	capped  bool   // the backoff exceeds MaxDelay, which cuts it
	phase   string // the SNS phase of the wait, for a backoff.Schedule
	mark    limitMark
}

// table is the schedule of one strategy under one policy.
type table struct {
	// exact is false when the waits are single samples of a strategy that
	// boundsOf cannot bound.
	exact bool
	stop  cutoff // the policy's limit on time, which marks the rows
	rows  []row  // the first attempts, as many as build's limit lets in
	last  row    // the final attempt, or the first over the time limit
	made  row    // the last attempt made: last, or the one before it
	// estimatedAfter, when positive, is the attempt after which the
	// waits are taken to equal its own (see exactAttempts).
	estimatedAfter int
}

// build computes the schedule of attempts that p makes when every failure
// is retried and each wait before retry n is s.Delay(n), cut to MaxDelay as
// the transport does. p has its defaults resolved (Policy.WithDefaults). It
// keeps the first limit rows, or all of them if limit is 0, and stops at
// MaxAttempts or at the first attempt that even the shortest waits push
// past the policy's cutoff (MaxTotalTime, less TerminationBuffer, or
// MaxTotalWait): the transport starts no attempt past it.
func build(p policy.Policy, s backoff.Strategy, limit int) table {
	return buildPenalized(p, s, 0, limit)
}

// buildPenalized is build with extra added to every wait, on top of
// MaxDelay, as a Penalty adds its Delay while it lasts.
func buildPenalized(p policy.Policy, s backoff.Strategy, extra time.Duration, limit int) table {
	b := boundsOf(s)
	t := table{exact: b.exact, stop: cutoffOf(p)}
	r := row{attempt: 1}
	t.rows = append(t.rows, r)
	t.made = r
	for r.attempt < p.MaxAttempts && r.mark != overLimit {
		if r.attempt == exactAttempts {
			r = extrapolate(p, t.stop, s, r)
			t.estimatedAfter = exactAttempts
			if r.mark == overLimit {
				// The attempt before it is made: one wait earlier.
				t.made = row{attempt: r.attempt - 1, wait: r.wait,
					total: span{r.total.lo - r.wait.lo, r.total.hi - r.wait.hi}}
				t.made.mark = t.stop.mark(t.made.total)
			}
		} else {
			r = next(p, t.stop, s, b, extra, r)
			if limit == 0 || len(t.rows) < limit {
				t.rows = append(t.rows, r)
			}
		}
		if r.mark != overLimit {
			t.made = r
		}
	}
	t.last = r
	return t
}

// next returns the attempt after prev, whose wait is extra longer than the
// backoff cut to MaxDelay.
func next(p policy.Policy, stop cutoff, s backoff.Strategy, b bounds, extra time.Duration, prev row) row {
	n := prev.attempt // the retry number of the wait before attempt n+1
	r := row{attempt: n + 1, phase: phase(s, n)}
	r.wait.hi = b.hi.Delay(n)
	r.wait.lo = r.wait.hi
	if b.exact {
		r.wait.lo = b.lo.Delay(n)
	}
	r.capped = r.wait.hi > p.MaxDelay
	r.wait = span{addSat(min(r.wait.lo, p.MaxDelay), extra), addSat(min(r.wait.hi, p.MaxDelay), extra)}
	r.total = span{addSat(prev.total.lo, r.wait.lo), addSat(prev.total.hi, r.wait.hi)}
	r.mark = stop.mark(r.total)
	return r
}

// extrapolate returns the final attempt, or the first over stop, taking
// every wait after prev to equal prev's.
func extrapolate(p policy.Policy, stop cutoff, s backoff.Strategy, prev row) row {
	k := p.MaxAttempts - prev.attempt
	if stop.at > 0 && prev.wait.lo > 0 {
		// The fewest further waits of prev.wait.lo that reach the cutoff.
		need := (stop.at - prev.total.lo + prev.wait.lo - 1) / prev.wait.lo
		k = int(min(int64(k), int64(need)))
	}
	r := prev
	r.attempt += k
	r.phase = phase(s, r.attempt-1)
	r.total = span{addSat(prev.total.lo, mulSat(prev.wait.lo, k)), addSat(prev.total.hi, mulSat(prev.wait.hi, k))}
	r.mark = stop.mark(r.total)
	return r
}

// phase returns the SNS phase (docs/sns.md) of retry n if s is a
// backoff.Schedule, with the backoff phase's position, or "" for any other
// strategy.
func phase(s backoff.Strategy, n int) string {
	sc, ok := s.(backoff.Schedule)
	if !ok {
		return ""
	}
	ph, i, k := sc.PhaseOf(n)
	if ph == backoff.PhaseBackoff {
		return fmt.Sprintf("backoff %d/%d", i, k)
	}
	return ph.String()
}

// printPolicy prints the header and the schedule of p, named name, to w:
// one table for Backoff and, if set, one for ThrottleBackoff and one for
// Backoff under the Penalty, each with at most limit rows (0: all).
func printPolicy(w io.Writer, name string, p policy.Policy, limit int) {
	p = p.WithDefaults()
	limits := "no MaxTotalTime"
	if p.MaxTotalTime > 0 {
		limits = "MaxTotalTime " + fmtDur(p.MaxTotalTime)
	}
	if b := p.TerminationBuffer; b > 0 {
		limits += ", TerminationBuffer " + fmtDur(b)
		if p.MaxTotalTime <= 0 {
			limits += " (of a context deadline)"
		}
	}
	if p.MaxTotalWait > 0 {
		limits += ", MaxTotalWait " + fmtDur(p.MaxTotalWait)
	}
	pacing := ""
	if f, ok := p.RateLimit.(*ratelimit.Fixed); ok && f.Rate > 0 && !math.IsInf(f.Rate, 1) {
		// The limiters pace every attempt of a scope, so they can lengthen
		// a wait shorter than their spacing (SNS's immediate retries at
		// 1/Rate); that depends on the traffic, not on the policy alone.
		pacing = fmt.Sprintf(", RateLimit %s/s per scope (can lengthen short waits)", strconv.FormatFloat(f.Rate, 'g', -1, 64))
	}
	if p.Limiter != nil {
		pacing += ", adaptive rate limiter (can add waits)"
	}
	fmt.Fprintf(w, "Policy %s: %s at most, MaxDelay %s, %s%s\n", name, count(p.MaxAttempts, "attempt"), fmtDur(p.MaxDelay), limits, pacing)
	fmt.Fprintf(w, "Backoff: %s\n", describe(p.Backoff))
	switch h := p.ServerDelay.Headers; {
	case h == retryafter.None:
		fmt.Fprintln(w, "Server delays: ignored; the backoff always applies.")
	case h != retryafter.AllSources:
		fmt.Fprintf(w, "Server delays: only %s, each in place of the backoff, up to MaxDelay.\n", h)
	}
	fmt.Fprintln(w)
	t := build(p, p.Backoff, limit)
	printTable(w, p, t)
	if p.ThrottleBackoff != nil {
		fmt.Fprintf(w, "\nIf every failure is a throttle, ThrottleBackoff: %s\n\n", describe(p.ThrottleBackoff))
		printTable(w, p, build(p, p.ThrottleBackoff, limit))
	}
	if pen := p.Penalty; pen != nil { // WithDefaults keeps only one that can apply
		// A signal in every failure renews the penalty before each wait.
		fmt.Fprintf(w, "\nIf every failure signals the Penalty (%s), each wait is %s longer:\n\n", signals(pen), fmtDur(pen.Delay))
		printTable(w, p, buildPenalized(p, p.Backoff, pen.Delay, limit))
	}
	fmt.Fprintln(w, "\nJitter picks each wait between its min and max. The times leave out the attempts themselves.")
}

// printTable prints t's rows with text/tabwriter, then a line on the
// attempts left out, on the time limit and on the whole.
func printTable(w io.Writer, p policy.Policy, t table) {
	approx := ""
	if !t.exact {
		approx = "~"
	}
	d := func(x time.Duration) string { return approx + fmtDur(x) }
	// Every row ends with a notes cell, empty or not, so that tabwriter
	// aligns all columns as one block; the padding this leaves at the end
	// of rows without notes is trimmed.
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attempt\twait min\twait max\ttotal min\ttotal max\tnotes")
	capped := false
	for _, r := range t.rows {
		wlo, whi := "-", "-"
		if r.attempt > 1 {
			wlo, whi = d(r.wait.lo), d(r.wait.hi)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", commas(r.attempt), wlo, whi, d(r.total.lo), d(r.total.hi), notes(r, t.stop))
		capped = capped || r.capped
	}
	tw.Flush()
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}

	if shown := t.rows[len(t.rows)-1].attempt; t.last.attempt > shown {
		more := "more attempts"
		if t.last.attempt-shown == 1 {
			more = "more attempt"
		}
		fmt.Fprintf(w, "… %s %s; the last, attempt %s, waits %s",
			commas(t.last.attempt-shown), more, commas(t.last.attempt), spanText(t.last.wait, approx))
		if n := notes(t.last, t.stop); n != "" {
			fmt.Fprintf(w, " (%s)", n)
		}
		fmt.Fprintln(w)
		capped = capped || t.last.capped
	}
	if t.estimatedAfter > 0 {
		fmt.Fprintf(w, "Attempts after %s are taken to wait as long as it.\n", commas(t.estimatedAfter))
	}
	if capped {
		fmt.Fprintf(w, "cap: the backoff exceeds MaxDelay, %s, which cuts it.\n", fmtDur(p.MaxDelay))
	}
	if t.last.mark == overLimit {
		fmt.Fprintln(w, t.stop.summary(t.last.attempt))
	}
	fmt.Fprintf(w, "In all: %s, waiting %s.\n", count(t.made.attempt, "attempt"), longSpanText(t.made.total, approx))
}

// notes returns the notes column of r, a row of a table cut by stop.
func notes(r row, stop cutoff) string {
	var n []string
	if r.phase != "" {
		n = append(n, r.phase)
	}
	if r.capped {
		n = append(n, "cap")
	}
	if b := stop.note(r.mark); b != "" {
		n = append(n, b)
	}
	return strings.Join(n, ", ")
}

// signals describes what starts pen: its error codes and statuses.
func signals(pen *policy.Penalty) string {
	var s []string
	for _, c := range pen.Codes {
		s = append(s, "error code "+c)
	}
	for _, st := range pen.Statuses {
		s = append(s, "status "+strconv.Itoa(st))
	}
	return strings.Join(s, " or ")
}

// describe returns s in policy.Load's JSON schema, as Policy.MarshalJSON
// writes it, or its Go type if it has no JSON form.
func describe(s backoff.Strategy) string {
	b, err := policy.Policy{Backoff: s}.MarshalJSON()
	if err == nil {
		var doc struct {
			Backoff json.RawMessage `json:"backoff"`
		}
		if json.Unmarshal(b, &doc) == nil && len(doc.Backoff) > 0 {
			return string(doc.Backoff)
		}
	}
	return fmt.Sprintf("%T (no JSON form)", s)
}

// fmtDur formats d compactly: to the millisecond from 1s up and to four
// significant digits below, as time.Duration.String writes it but without
// its zero minutes and seconds, so 2m0s is "2m" and 1h0m0s "1h".
func fmtDur(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(time.Millisecond)
	} else if d > 0 {
		unit := time.Duration(1)
		for v := d; v >= 10_000; v /= 10 {
			unit *= 10
		}
		d = d.Round(unit)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// spanText formats a range of durations as "lo to hi", or as one value
// when both ends are equal, each prefixed with approx.
func spanText(s span, approx string) string {
	if fmtDur(s.lo) == fmtDur(s.hi) {
		return approx + fmtDur(s.hi)
	}
	return approx + fmtDur(s.lo) + " to " + approx + fmtDur(s.hi)
}

// longSpanText is spanText, followed by the same range in days when it
// reaches two days.
func longSpanText(s span, approx string) string {
	text := spanText(s, approx)
	if s.hi < 48*time.Hour {
		return text
	}
	days := func(d time.Duration) string { return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) }
	if days(s.lo) == days(s.hi) {
		return text + " (" + days(s.hi) + " days)"
	}
	return text + " (" + days(s.lo) + " to " + days(s.hi) + " days)"
}

// count returns n and noun, in the plural unless n is 1: "3 attempts".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return commas(n) + " " + noun + "s"
}

// commas formats n with a comma between groups of three digits: 100,016.
func commas(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// addSat returns a + b for a, b >= 0, saturating at the largest Duration.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns d * n for d, n >= 0, saturating at the largest Duration.
func mulSat(d time.Duration, n int) time.Duration {
	if d == 0 || n == 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}
