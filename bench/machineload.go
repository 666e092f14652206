package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// loadAverage returns the machine's load average over the last minute,
// as /proc/loadavg gives it, or "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(b), " ")
	return first
}

// writeLoadNote prints the load averages at a scenario's start and end,
// for a reader to judge how much of the machine the scenario had: the
// bench runs beside whatever else runs on it.
func writeLoadNote(w io.Writer, atStart string) {
	if atEnd := loadAverage(); atStart != "" && atEnd != "" {
		fmt.Fprintf(w, "- note: load average over 1 minute: %s at the start of the scenario, %s at its end, on %d CPUs\n",
			atStart, atEnd, runtime.NumCPU())
	}
}
