package breaker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/clocksample"
)

// circuitScope is one scope's circuit. The fields that Allow and a
// successful Done read on their lock-free paths are atomics, written under
// mu; the rest is guarded by mu.
type circuitScope struct {
	word    atomic.Uint64             // word(gen, phase): a new generation at each change of phase
	streak  atomic.Int64              // consecutive failures counted while closed
	refusal atomic.Pointer[OpenError] // what Allow copies while open; stored before word says Open
	// oks are the successes, which read the clock for one in a few: its
	// Last lags the latest success by a few milliseconds, which the stall
	// rule (no success for StallFor, 250 ms by default) can afford.
	oks clocksample.Sampler

	mu      sync.Mutex
	since   time.Time     // when the current phase began
	until   time.Time     // when the open time ends, while open
	openFor time.Duration // the latest opening's open time before jitter; 0 while closed
	last    error         // the last failure counted
	opens   uint64
	passed  int     // successful probes in the current half-open phase
	seq     uint64  // the last probe number handed out
	probes  []probe // the probes in flight, in the current half-open phase
}

// probe is a probe in flight: its number and when it was let through.
type probe struct {
	seq uint64
	at  time.Time
}

// word packs a generation and a phase into a circuitScope's word.
func word(gen uint64, p Phase) uint64 { return gen<<2 | uint64(p) }

func genOf(w uint64) uint64  { return w >> 2 }
func phaseOf(w uint64) Phase { return Phase(w & 3) }

// change is a change of phase to report to OnChange.
type change struct {
	ok    bool
	from  Phase
	state State
}

// allowSlow is Allow for a circuit that was not closed when Allow looked.
func (c *Circuit) allowSlow(now time.Time, scope string, s *circuitScope) (Pass, error) {
	// An open circuit refuses without taking the lock, so that a storm of
	// callers refused at once do not queue for it.
	if phaseOf(s.word.Load()) == Open {
		if e := s.refusal.Load(); e != nil && now.Before(e.Until) {
			r := *e
			return Pass{}, &r
		}
	}
	var ch change
	s.mu.Lock()
	p, err := c.allowLocked(now, scope, s, &ch)
	if ch.ok {
		ch.state = s.stateLocked(now)
	}
	s.mu.Unlock()
	c.notify(scope, ch)
	return p, err
}

// allowLocked decides Allow under s.mu: it ends an open time that is over
// and hands out a probe if a slot is free. The caller holds s.mu.
func (c *Circuit) allowLocked(now time.Time, scope string, s *circuitScope, ch *change) (Pass, error) {
	w := s.word.Load()
	switch phaseOf(w) {
	case Closed:
		return Pass{s: c, scope: scope, ticket: Ticket{Gen: genOf(w)}, cs: s}, nil
	case Open:
		if now.Before(s.until) {
			return Pass{}, &OpenError{Scope: scope, Last: s.last, Until: s.until}
		}
		c.enterLocked(now, s, HalfOpen, ch)
	}
	p := c.params()
	if len(s.probes) >= p.probes {
		s.reclaimLocked(now, p.lease)
	}
	if len(s.probes) >= p.probes {
		return Pass{}, &OpenError{Scope: scope, Last: s.last}
	}
	if s.probes == nil {
		s.probes = make([]probe, 0, min(p.probes, 4)) // Probes may be large: grow as needed
	}
	s.seq++
	s.probes = append(s.probes, probe{seq: s.seq, at: now})
	return Pass{s: c, scope: scope, ticket: Ticket{Gen: genOf(s.word.Load()), Seq: s.seq}, probe: true, cs: s}, nil
}

// settle applies v, the verdict on the attempt of pass p, to s as of now.
func (c *Circuit) settle(now time.Time, p Pass, s *circuitScope, v verdict, out classify.Outcome, err error) {
	var ch change
	s.mu.Lock()
	c.settleLocked(now, p, s, v, out, err, &ch)
	if ch.ok {
		ch.state = s.stateLocked(now)
	}
	s.mu.Unlock()
	c.notify(p.scope, ch)
}

// settleLocked is settle under s.mu. Passes handed out before the last
// change of phase are ignored. The caller holds s.mu.
func (c *Circuit) settleLocked(now time.Time, p Pass, s *circuitScope, v verdict, out classify.Outcome, err error, ch *change) {
	w := s.word.Load()
	if genOf(w) != p.ticket.Gen {
		return
	}
	switch phaseOf(w) {
	case Closed:
		switch v {
		case succeeded:
			s.streak.Store(0)
		case failed:
			s.last = failure(out.Reason, out.Kind.String(), err)
			n := s.streak.Add(1)
			pr := c.params()
			if n >= int64(pr.failures) || (n >= int64(pr.stalls) && out.Kind == classify.Timeout && s.stalledLocked(now, pr.stallFor)) {
				c.openLocked(now, p.scope, s, pr.openFor, ch)
			}
		}
	case HalfOpen:
		if !p.probe {
			return
		}
		s.releaseLocked(p.ticket.Seq)
		switch v {
		case succeeded:
			s.passed++
			if s.passed >= c.params().probes {
				c.enterLocked(now, s, Closed, ch)
			}
		case failed:
			s.last = failure(out.Reason, out.Kind.String(), err)
			pr := c.params()
			next := pr.maxOpen
			if s.openFor < pr.maxOpen/2 {
				next = max(2*s.openFor, pr.openFor)
			}
			c.openLocked(now, p.scope, s, next, ch)
		}
	}
}

// openLocked opens s for d, jittered, as of now. The caller holds s.mu.
func (c *Circuit) openLocked(now time.Time, scope string, s *circuitScope, d time.Duration, ch *change) {
	s.openFor = d
	s.until = now.Add(c.jittered(d))
	s.opens++
	s.refusal.Store(&OpenError{Scope: scope, Last: s.last, Until: s.until})
	c.enterLocked(now, s, Open, ch)
}

// enterLocked moves s to phase to as of now, in a new generation, and
// records the change in ch. The caller holds s.mu and has set what Open
// needs.
func (c *Circuit) enterLocked(now time.Time, s *circuitScope, to Phase, ch *change) {
	from := phaseOf(s.word.Load())
	s.since = now
	if to == HalfOpen {
		s.since = s.until // when the open time ended, though nobody asked then
	}
	s.passed = 0
	s.probes = s.probes[:0]
	if to == Closed {
		s.streak.Store(0)
		s.openFor = 0
	}
	s.word.Store(word(c.gens.Add(1), to))
	*ch = change{ok: true, from: from}
}

// stalledLocked reports whether no attempt of s has succeeded for d as of
// now. The caller holds s.mu.
func (s *circuitScope) stalledLocked(now time.Time, d time.Duration) bool {
	last := s.oks.Last()
	return last == 0 || now.UnixNano()-last >= int64(d)
}

// releaseLocked frees the slot of the probe numbered seq, if it holds one.
// The caller holds s.mu.
func (s *circuitScope) releaseLocked(seq uint64) {
	for i, pr := range s.probes {
		if pr.seq == seq {
			s.probes = append(s.probes[:i], s.probes[i+1:]...)
			return
		}
	}
}

// reclaimLocked frees the slots of the probes let through lease or more
// before now and never settled. Their outcomes still count if they come.
// The caller holds s.mu.
func (s *circuitScope) reclaimLocked(now time.Time, lease time.Duration) {
	kept := s.probes[:0]
	for _, pr := range s.probes {
		if now.Sub(pr.at) < lease {
			kept = append(kept, pr)
		}
	}
	s.probes = kept
}

// stateLocked returns s's state as of now. The caller holds s.mu.
func (s *circuitScope) stateLocked(now time.Time) State {
	st := State{
		Phase:     phaseOf(s.word.Load()),
		Since:     s.since,
		Failures:  int(s.streak.Load()),
		OpenFor:   s.openFor,
		Opens:     s.opens,
		Last:      s.last,
		Probes:    len(s.probes),
		Successes: s.passed,
	}
	if st.Phase == Open {
		if now.Before(s.until) {
			st.Until = s.until
		} else {
			st.Phase, st.Since = HalfOpen, s.until
		}
	}
	return st
}

// notify reports ch, if it holds a change, to c.OnChange.
func (c *Circuit) notify(scope string, ch change) {
	if ch.ok && c.OnChange != nil {
		c.OnChange(scope, ch.from, ch.state)
	}
}
