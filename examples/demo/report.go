package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrytransport/retrytransport/quota"
)

// printer writes the demo's plain-text report. It keeps the first write
// error, which flush returns, so that the printing code reads straight.
type printer struct {
	tw  *tabwriter.Writer
	err error
}

// newPrinter returns a printer that writes aligned columns to w.
func newPrinter(w io.Writer) *printer {
	return &printer{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// printf formats to the report unless an earlier write failed.
func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.tw, format, args...)
	}
}

// flush writes out what is buffered and returns the first error so far.
func (p *printer) flush() error {
	if p.err == nil {
		p.err = p.tw.Flush()
	}
	return p.err
}

// intro says what runs against what.
func (p *printer) intro(serverURL string) {
	p.printf("Flaky server on %s (loopback only). Every scenario runs once per client, against fresh server state.\n", serverURL)
	p.printf("  plain:          &http.Client{Transport: cleanhttp.DefaultPooledTransport()}\n")
	p.printf("  retrytransport: &http.Client{Transport: retrytransport.New(nil, retrytransport.WithPolicy(policy.Standard()))}\n")
	p.printf("                  the nil base is the default, go-cleanhttp's pooled transport: the plain client's base, so only retrying differs\n")
	p.printf("  policy.Standard(): 3 attempts, full-jitter backoff, Retry-After honoured, and a retry quota per host (the circuit breaker):\n")
	p.printf("                  %d tokens, starting full; a retry pays %d (%d after a throttle such as 429, or a timeout);\n",
		quota.DefaultCapacity, quota.DefaultRetryCost, quota.DefaultTimeoutCost)
	p.printf("                  a retry that succeeds gets its cost back, a first attempt that succeeds adds %d, never above %d\n",
		quota.DefaultSuccessIncrement, quota.DefaultCapacity)
	p.printf("Under each table: where the quota's tokens went, from the levels the transport's Events report.\n")
}

// table prints one scenario: a heading naming the fault, then a row per
// client. The outage also gets the server hits per logical request over
// time, which shows the retry quota cutting retries off.
func (p *printer) table(r report) {
	p.printf("\n%s: %s\n", r.name, r.fault)
	p.printf("  client\trequests\tsucceeded\tserver hits\tretries\ttotal wait\tfinal statuses\tquota left\trefused by quota\n")
	for _, t := range []tally{r.plain, r.retry} {
		quota, refused := "-", "-"
		if t.quota >= 0 {
			quota, refused = fmt.Sprintf("%.0f", t.quota), fmt.Sprint(t.refused)
		}
		p.printf("  %s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", t.client, t.requests, t.succeeded,
			t.hits, t.retries, formatWait(t.wait), formatStatuses(t.statuses), quota, refused)
	}
	if r.retry.quota >= 0 {
		for _, line := range r.retry.account.explain(r.retry.quota) {
			p.printf("  %s\n", line)
		}
	}
	if r.path == pathOutage {
		block := max(1, r.requests/6)
		p.printf("  server hits per logical request for retrytransport, in blocks of %d requests: %s\n",
			block, hitsPerBlock(r.retry.perRequest, block))
	}
}

// summary prints the closing lines: what retrying bought in the fault
// scenarios, and what the quota saved during the outage.
func (p *printer) summary(reports []report) {
	var faults, n, plainOK, retryOK, retries int
	var wait time.Duration
	for _, r := range reports {
		if r.path == pathOutage {
			continue
		}
		faults++
		n += r.requests
		plainOK += r.plain.succeeded
		retryOK += r.retry.succeeded
		retries += r.retry.retries
		wait += r.retry.wait
	}
	p.printf("\nSummary: in the %d fault scenarios the plain client got %d of %d requests through; "+
		"retrytransport got %d of %d, with %d retries and %s of waiting.\n",
		faults, plainOK, n, retryOK, n, retries, formatWait(wait))
	for _, r := range reports {
		if r.path != pathOutage {
			continue
		}
		if r.retry.firstRefused == 0 {
			p.printf("During the outage the retry quota never ran dry (%.0f tokens left): send more requests to see it refuse.\n", r.retry.quota)
			continue
		}
		p.printf("During the outage retrytransport retried %d times, until the retry quota ran dry at request %d; "+
			"from then on it sent each request once.\n", r.retry.retries, r.retry.firstRefused)
		p.printf("That is the circuit breaker: %d server hits instead of up to %d, against %d for the plain client.\n",
			r.retry.hits, 3*r.requests, r.plain.hits)
	}
}

// explain says, a line per step, where the quota's tokens went and how
// that leads to level, the level Transport.Snapshot reported; if the
// account does not lead there, it says so.
func (a quotaAccount) explain(level float64) []string {
	lines := []string{fmt.Sprintf("Why %.0f tokens are left: the quota started full at %.0f;", level, a.start)}
	add := func(format string, args ...any) { lines = append(lines, "  "+fmt.Sprintf(format, args...)) }
	retries := 0
	for _, c := range slices.SortedFunc(maps.Keys(a.costs), func(x, y retryCost) int {
		return cmp.Or(cmp.Compare(x.tokens, y.tokens), cmp.Compare(x.after, y.after))
	}) {
		n := a.costs[c]
		retries += n
		add("%d %s after %s outcomes paid %d %s each: -%d", n, plural(n, "retry", "retries"),
			c.after, c.tokens, plural(c.tokens, "token", "tokens"), n*c.tokens)
	}
	switch {
	case retries == 0:
		add("no retries, so nothing was paid")
	case a.recovered == 0:
		add("no retry succeeded, so nothing came back")
	default:
		add("%d %s succeeded on a retry, and each got that retry's cost back: +%.0f",
			a.recovered, plural(a.recovered, "request", "requests"), a.refunded)
		if failed := retries - a.recovered; failed > 0 {
			add("the other %d %s failed, and stay paid", failed, plural(failed, "retry", "retries"))
		}
	}
	sum := fmt.Sprintf("%.0f - %.0f", a.start, a.paid)
	if a.refunded != 0 {
		sum += fmt.Sprintf(" + %.0f", a.refunded)
	}
	if a.added != 0 {
		add("%d first %s succeeded while the quota was below full, adding %.0f",
			a.firstOK, plural(a.firstOK, "attempt", "attempts"), a.added)
		sum += fmt.Sprintf(" + %.0f", a.added)
	}
	if a.other != 0 {
		add("other decisions changed it by %+.0f", a.other)
		sum += fmt.Sprintf(" %+.0f", a.other)
	}
	check := "the level Transport.Snapshot reports"
	if math.Abs(a.expected()-level) >= 0.5 {
		check = fmt.Sprintf("but Transport.Snapshot reports %.0f", level)
	}
	add("%s = %.0f, %s", sum, a.expected(), check)
	return lines
}

// plural returns one if n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// formatWait rounds d to the millisecond for display.
func formatWait(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// formatStatuses renders final statuses as "3×503 2×err", status codes in
// ascending order and transport errors last.
func formatStatuses(statuses map[string]int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(statuses)) { // "err" sorts after digits
		parts = append(parts, fmt.Sprintf("%d×%s", statuses[s], s))
	}
	return strings.Join(parts, " ")
}

// hitsPerBlock returns the mean server hits per logical request for each
// run of block consecutive requests, as "3.00 3.00 1.00"; a shorter last
// run counts as a block of its own.
func hitsPerBlock(perRequest []int, block int) string {
	var parts []string
	for chunk := range slices.Chunk(perRequest, block) {
		sum := 0
		for _, h := range chunk {
			sum += h
		}
		parts = append(parts, fmt.Sprintf("%.2f", float64(sum)/float64(len(chunk))))
	}
	return strings.Join(parts, " ")
}
