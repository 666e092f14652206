package breaker

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// Breaker decides whether an attempt of a scope may be sent at all, first
// attempts included. The transport calls Allow before every attempt and,
// once the attempt is over, Done on the [Pass] with its outcome, or Drop
// when the attempt was not sent or its caller gave up.
//
// [Circuit] implements it in process. An implementation that keeps its
// state elsewhere (shared by the replicas of a fleet) hands out Passes
// made by [NewPass], whose [Settler] hears their outcomes. Allow is called
// on every attempt, so it should cost nothing while the scope is healthy.
// It must be safe for concurrent use.
type Breaker interface {
	// Allow asks to send one attempt of scope now. It returns a Pass, or
	// an error wrapping ErrOpen, an *OpenError for Circuit, and the zero
	// Pass when the attempt must not be sent.
	Allow(scope string) (Pass, error)
}

// Settler is implemented by a [Breaker] whose Passes report back: a
// [Pass]'s Done and Drop call it with the Pass. An implementation tells its
// passes apart by their scope, [Ticket] and whether they are probes.
type Settler interface {
	// Done hears the outcome of the attempt p let through (see Pass.Done).
	Done(p Pass, out classify.Outcome, err error)
	// Drop hears that p's attempt was not sent, or that its caller gave
	// up on it (see Pass.Drop).
	Drop(p Pass)
}

// A Ticket identifies a [Pass] within its scope, in numbers whose meaning is
// the issuing [Settler]'s own. [Circuit] puts the generation of the scope's
// circuit in Gen (a new one at each change of phase, so outcomes of
// attempts let through before a change are told apart) and, for a probe,
// the probe's number in Seq.
type Ticket struct {
	Gen, Seq uint64
}

// Pass is a permission to send one attempt, handed out by a [Breaker]: a
// small value that calls its breaker back and holds no resources. A Pass
// may be a probe, one of the few attempts a half-open circuit lets through
// to learn whether the scope's server has recovered.
//
// Call exactly one of Done or Drop on each Pass, once the attempt is over:
// a probe holds one of its circuit's few probe slots until then. Copying a
// Pass copies the permission, not the duty: settle one copy only.
//
// The zero Pass is a no-op: its Done and Drop do nothing. A refusal comes
// with it, and a Breaker with nothing to learn may let attempts through
// with it.
type Pass struct {
	s      Settler // nil for the zero Pass
	scope  string
	ticket Ticket
	probe  bool
	cs     *circuitScope // the scope's circuit, for a Circuit's passes; nil for NewPass's
}

// NewPass returns a pass of s for scope, known to s by t; probe says
// whether it is a probe. Implementations of [Breaker] call it; a nil s
// gives the zero Pass.
func NewPass(s Settler, scope string, t Ticket, probe bool) Pass {
	if s == nil {
		return Pass{}
	}
	return Pass{s: s, scope: scope, ticket: t, probe: probe}
}

// Scope returns the scope p was handed out for.
func (p Pass) Scope() string { return p.scope }

// Ticket returns what p's breaker knows it by.
func (p Pass) Ticket() Ticket { return p.ticket }

// Probe reports whether p is a probe: a half-open circuit's test of the
// scope's server, whose outcome closes the circuit or opens it again.
func (p Pass) Probe() bool { return p.probe }

// Done reports the outcome of the attempt p let through: its
// classify.Outcome and its error, nil when a response came. A failure the
// breaker counts (by default a Transient or Timeout outcome) is kept as the
// scope's last failure: err, or when err is nil a description of the
// outcome, such as "status 503". Success, Throttle and Fatal outcomes are
// never counted as failures: a Success is evidence that the server
// answers, while a Throttle (the rate limiter's business) or a Fatal one (a
// 4xx, the caller's own cancellation) says nothing about whether it is in
// trouble, and is taken as Drop.
func (p Pass) Done(out classify.Outcome, err error) {
	switch c, ok := p.s.(*Circuit); {
	case ok && p.cs != nil: // the common case, without copying p again
		c.done(time.Time{}, false, &p, out, err)
	case p.s != nil:
		p.s.Done(p, out, err)
	}
}

// Drop reports that the attempt p let through was not sent after all, or
// that its caller gave up on it before it ended: it says nothing of the
// server. A probe's slot is freed, so that another caller may probe.
func (p Pass) Drop() {
	if p.s != nil {
		p.s.Drop(p)
	}
}
