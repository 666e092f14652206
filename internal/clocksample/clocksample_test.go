package clocksample

import (
	"testing"
	"time"
)

// read feeds n events to s, the clock at now for each that is due, and
// returns how many were.
func read(s *Sampler, n int, now time.Time) int {
	due := 0
	for range n {
		if s.Due() {
			s.Stamp(now)
			due++
		}
	}
	return due
}

func TestSamplerReadsEveryEventOfAQuietStream(t *testing.T) {
	var s Sampler
	if s.Last() != 0 {
		t.Fatalf("Last of the zero Sampler = %d; want 0", s.Last())
	}
	at := time.Unix(100, 0)
	for i := range 50 {
		at = at.Add(MaxGap) // 50 events a second
		if got := read(&s, 1, at); got != 1 {
			t.Fatalf("event %d, %v after the one before: read %d times; want every event read", i, MaxGap, got)
		}
	}
	if s.Last() != at.UnixNano() {
		t.Errorf("Last = %d; want the latest reading, %d", s.Last(), at.UnixNano())
	}
}

func TestSamplerReadsOneInSixteenOfABusyStream(t *testing.T) {
	var s Sampler
	at := time.Unix(100, 0)
	// Every reading less than MinGap after the one before: the events per
	// reading double, 1, 2, 4, 8, 16, and stay at 16.
	due := read(&s, 1+2+4+8+16, at)
	if due != 5 {
		t.Errorf("31 events of a busy stream read the clock %d times; want 5 (1, 2, 4, 8 and 16 events per reading)", due)
	}
	if due := read(&s, 160, at); due != 10 {
		t.Errorf("160 more events read it %d times; want 10, one in 16", due)
	}
	// Quiet again: the next reading comes within 16 events, and each
	// reading more than MaxGap after the one before halves the events per
	// reading, back to 1.
	n := 1
	for !s.Due() {
		n++
	}
	if n > 16 {
		t.Errorf("the first reading after 160 events came %d events later; want at most 16", n)
	}
	for _, want := range []int{8, 4, 2, 1, 1} {
		at = at.Add(MaxGap + time.Millisecond)
		s.Stamp(at)
		n := 1
		for !s.Due() {
			n++
		}
		if n != want {
			t.Errorf("after a quiet gap: the next reading came %d events later; want %d", n, want)
		}
	}
}
