package retrytransport

import (
	"testing"
	"time"
)

// A signal that renews a penalty before its period ends keeps the period's
// start: a retry whose clock was read between the first signal and the
// renewal, and checked after it, pays the penalty, as the scope was
// penalised all along.
func TestPenaltyRenewalKeepsThePeriodsStart(t *testing.T) {
	t0 := time.Now()
	const period, delay = 10 * time.Second, 5 * time.Second
	var c scopeBehaviour
	c.penalise(t0, period)
	read := t0.Add(time.Second)               // a retry reads the clock
	c.penalise(t0.Add(2*time.Second), period) // a concurrent signal renews the penalty
	if got := c.penalised(read, delay); got != delay {
		t.Errorf("penalised(t0+1s) after signals at t0 and t0+2s = %v; want %v", got, delay)
	}
	if got := c.penalised(t0.Add(11*time.Second), delay); got != delay {
		t.Errorf("penalised(t0+11s) = %v; want %v: the renewal extends the period to t0+12s", got, delay)
	}
	if got := c.penalised(t0.Add(12*time.Second), delay); got != 0 {
		t.Errorf("penalised(t0+12s) = %v; want 0: the period has ended", got)
	}
}

// A signal after the period ended starts a new one, which a clock read
// between the two periods is not in.
func TestPenaltyAfterItsPeriodStartsAnew(t *testing.T) {
	t0 := time.Now()
	const period, delay = 10 * time.Second, 5 * time.Second
	var c scopeBehaviour
	c.penalise(t0, period)
	c.penalise(t0.Add(20*time.Second), period)
	if got := c.penalised(t0.Add(15*time.Second), delay); got != 0 {
		t.Errorf("penalised(t0+15s) after signals at t0 and t0+20s (period 10s) = %v; want 0", got)
	}
	if got := c.penalised(t0.Add(25*time.Second), delay); got != delay {
		t.Errorf("penalised(t0+25s) = %v; want %v", got, delay)
	}
}

// A signal noted after a later one (its code took longer to read) moves
// the period's start back to its own clock reading, and keeps the later
// one's end.
func TestPenaltySignalNotedLateMovesTheStartBack(t *testing.T) {
	t0 := time.Now()
	const period, delay = 10 * time.Second, 5 * time.Second
	var c scopeBehaviour
	c.penalise(t0.Add(2*time.Second), period) // the later signal, noted first
	c.penalise(t0, period)
	if got := c.penalised(t0.Add(time.Second), delay); got != delay {
		t.Errorf("penalised(t0+1s) after signals at t0+2s and t0 (noted in that order) = %v; want %v", got, delay)
	}
	if got := c.penalised(t0.Add(11*time.Second), delay); got != delay {
		t.Errorf("penalised(t0+11s) = %v; want %v: the later signal's period ends at t0+12s", got, delay)
	}
	// One whose period ended before the current one began changes nothing.
	c.penalise(t0.Add(-time.Hour), period)
	if got := c.penalised(t0.Add(-time.Hour+time.Second), delay); got != 0 {
		t.Errorf("penalised(t0-1h+1s) = %v; want 0: a period wholly before the current one is not kept", got)
	}
}
