// Package clocksample lets a busy stream of events read the clock for one
// event in a few.
//
// Reading the clock costs more than the rest of a healthy scope's work in
// a circuit breaker (70 ns on a virtual machine, where a sync.Map lookup
// costs 30), and what the reading serves (has the scope stalled, is a
// shared view due a refresh) can afford to lag a few milliseconds. The
// number of events per reading, every+1, is a power of 2 up to 16 that
// doubles while the readings come less than MinGap apart and halves while
// they come more than MaxGap apart, so a stream of at most 200 events a
// second reads the clock at each. When a busy stream falls quiet, up to 16
// events may pass unread before it reads again.
package clocksample

import (
	"sync/atomic"
	"time"
)

const (
	// MinGap is the time between readings below which the sampler reads
	// for half as many events.
	MinGap = 5 * time.Millisecond
	// MaxGap is the time between readings above which it reads for
	// twice as many.
	MaxGap = 20 * time.Millisecond
	// maxEvery is every's bound: one reading in 16 events at the least.
	maxEvery = 15
)

// Sampler decides which events of a stream read the clock. The zero
// Sampler reads it at the first event and has no reading yet. It is safe
// for concurrent use.
type Sampler struct {
	events atomic.Uint64
	every  atomic.Uint64 // an event reads the clock when its number ANDs with every to 0
	last   atomic.Int64  // Unix time in ns of the latest reading; 0 if none
}

// Due counts an event and reports whether it should read the clock and
// give the time to Stamp.
func (s *Sampler) Due() bool { return s.events.Add(1)&s.every.Load() == 0 }

// Stamp records a reading of the clock, now, and sets how many events go
// between readings from the time since the last one.
func (s *Sampler) Stamp(now time.Time) {
	t := now.UnixNano()
	prev := s.last.Swap(t)
	every := s.every.Load()
	switch gap := time.Duration(t - prev); {
	case prev != 0 && gap < MinGap && every < maxEvery:
		s.every.Store(every<<1 | 1)
	case gap > MaxGap && every > 0:
		s.every.Store(every >> 1)
	}
}

// Last returns the latest reading, in Unix ns; 0 if there has been none.
func (s *Sampler) Last() int64 { return s.last.Load() }
