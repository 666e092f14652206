package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
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
	p.printf("  plain:          &http.Client{Transport: base}, base = http.DefaultTransport.(*http.Transport).Clone()\n")
	p.printf("  retrytransport: &http.Client{Transport: retrytransport.New(base)}, policy.Standard():\n")
	p.printf("                  3 attempts, full-jitter backoff, Retry-After honoured, retry quota of 500 tokens per host\n")
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
