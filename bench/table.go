package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// table is one scenario's Markdown table: a row per contender. The first
// column is left-aligned, the others (numbers) right-aligned. Cells are
// padded so that the table also reads well as plain text.
type table struct {
	title string   // printed as a "###" heading
	notes []string // lines printed between the heading and the table
	cols  []string
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n", t.title)
	for _, n := range t.notes {
		fmt.Fprintln(w, n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
	width := make([]int, len(t.cols))
	for _, r := range append([][]string{t.cols}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c), 3)
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(" " + c + pad + " |")
			} else {
				b.WriteString(" " + pad + c + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(t.cols)
	sep := make([]string, len(t.cols))
	for i := range sep {
		if i == 0 {
			sep[i] = strings.Repeat("-", width[i])
		} else {
			sep[i] = strings.Repeat("-", width[i]-1) + ":"
		}
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
}

// goal is one of the goals, checked for one of our contenders.
type goal struct {
	met  bool
	text string // what was required, and the numbers
}

func writeGoals(w io.Writer, goals []goal) {
	fmt.Fprintln(w)
	for _, g := range goals {
		verdict := "met"
		if !g.met {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "- goal %s: %s\n", verdict, g.text)
	}
}

// connGoal checks that c opened at most bare's connections plus one per
// worker.
func connGoal(name string, conns, bareConns int64, workers int) goal {
	limit := bareConns + int64(workers)
	return goal{conns <= limit, fmt.Sprintf("%s opened %d connections; bare opened %d, + %d workers = at most %d",
		name, conns, bareConns, workers, limit)}
}

// Number formats for the cells.

func count(n int64) string { return fmt.Sprint(n) }

// whole formats a count held in a float64.
func whole(x float64) string { return fmt.Sprintf("%.0f", x) }

func twoPlaces(x float64) string { return fmt.Sprintf("%.2f", x) }

func ratio(x float64) string { return fmt.Sprintf("%.3f", x) }

func percent(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
