package breaker

import (
	"strconv"
	"time"
)

// Phase is where a scope's circuit stands: [Closed], [Open] or [HalfOpen].
// The zero Phase is Closed.
type Phase uint8

const (
	// Closed lets every attempt through and counts failures.
	Closed Phase = iota
	// Open refuses every attempt until its open time ends.
	Open
	// HalfOpen lets a few probes through and refuses the other attempts;
	// the probes' outcomes close the circuit or open it again.
	HalfOpen
)

var phaseNames = [...]string{"closed", "open", "half-open"}

// String returns the lower-case name of p: "closed", "open" or "half-open".
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// State is what a [Circuit] knows of one scope at an instant, for
// statistics and telemetry. The zero State is that of a scope the circuit
// does not store: closed, with nothing counted.
type State struct {
	// Phase is where the circuit stands. An open circuit whose open time
	// is over is reported HalfOpen, as the next Allow will find it.
	Phase Phase
	// Since is when the circuit entered Phase; zero for a scope never
	// opened since it was stored.
	Since time.Time
	// Failures is the number of consecutive failures counted while
	// closed: those counted so far when Closed, those that opened the
	// circuit otherwise.
	Failures int
	// Until is when the open time ends, while Open; zero otherwise.
	Until time.Time
	// OpenFor is the open time of the latest opening before jitter: the
	// circuit's OpenFor, doubled at each failed probe up to MaxOpenFor.
	// Zero when Closed.
	OpenFor time.Duration
	// Probes is the number of probes in flight, while HalfOpen.
	Probes int
	// Successes is the number of successful probes so far, while HalfOpen.
	Successes int
	// Opens counts the openings since the scope was stored, those after a
	// failed probe included.
	Opens uint64
	// Last is the last failure counted, as OpenError.Last; nil if none.
	Last error
}
