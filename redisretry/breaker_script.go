package redisretry

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
)

// This file is the Go side of breaker.lua: the parameters it takes, the
// call, and the answer it returns.

//go:embed breaker.lua
var breakerSource string

var breakerScript = redis.NewScript(breakerSource)

// The script's operations (see breaker.lua).
const (
	opRead   = "read"   // what the fleet's circuit is, and the probe lease if free
	opOpen   = "open"   // the replica's own circuit opened: open the fleet's
	opSettle = "settle" // a probe's outcome
)

// jitter is the relative spread of the open time after a failed probe, as
// breaker.Circuit's: its nominal value times a factor uniform in
// [1-jitter, 1+jitter).
const jitter = 0.1

// fleetAnswer is what the script returns of a scope's shared circuit.
// Durations are relative to the script's clock at the call.
type fleetAnswer struct {
	gen      uint64
	open     bool
	left     time.Duration // until the open time ends; negative when over
	ago      time.Duration // since the phase began
	openFor  time.Duration // the open time before jitter; 0 when closed
	opens    uint64
	fails    int
	last     string // the last failure's text
	deadline bool   // the last failure was a deadline's
	leased   bool   // a probe holds the lease
	token    uint64 // the lease this call took; 0 if none
}

// run calls the script for op on scope at now with op's arguments, and
// parses its answer (see Store.do).
func (b *Breaker) run(now time.Time, scope, op string, args ...any) (ans fleetAnswer, err error) {
	s := b.store()
	argv := append([]any{op, s.clockArg(now), s.ttlMillis()}, args...)
	err = s.do(func(ctx context.Context, c redis.UniversalClient) error {
		v, err := breakerScript.Run(ctx, c, []string{s.key(scope, "breaker")}, argv...).Slice()
		if err != nil {
			return err
		}
		return ans.parse(v)
	})
	return ans, err
}

// parse reads the script's reply v into ans.
func (ans *fleetAnswer) parse(v []any) error {
	if len(v) != 11 {
		return fmt.Errorf("redisretry: breaker script returned %d values, want 11", len(v))
	}
	var n [11]int64
	for i, x := range v {
		if i == 7 {
			continue
		}
		var ok bool
		if n[i], ok = x.(int64); !ok {
			return fmt.Errorf("redisretry: breaker script returned %v (%T) at %d, want an integer", x, x, i)
		}
	}
	ans.last, _ = v[7].(string)
	ans.gen = uint64(max(n[0], 0))
	ans.open = n[1] == 1
	ans.left = time.Duration(n[2]) * time.Microsecond
	ans.ago = time.Duration(n[3]) * time.Microsecond
	ans.openFor = time.Duration(n[4]) * time.Microsecond
	ans.opens = uint64(max(n[5], 0))
	ans.fails = int(max(n[6], 0))
	ans.deadline = n[8] == 1
	ans.leased = n[9] == 1
	ans.token = uint64(max(n[10], 0))
	return nil
}

// openArgs are the arguments of opOpen: the generation the replica knows
// and its own circuit's state st as of now.
func openArgs(now time.Time, gen uint64, st breaker.State) []any {
	left := time.Duration(0)
	if st.Phase == breaker.Open {
		left = max(st.Until.Sub(now), 0)
	}
	text, deadline := failureText(st.Last)
	return []any{gen, left.Microseconds(), st.OpenFor.Microseconds(), st.Failures, text, deadline}
}

// settleArgs are the arguments of opSettle for probe p, whose outcome is
// verdict: for a failure, out with its error err.
func (b *Breaker) settleArgs(p breaker.Pass, verdict string, out classify.Outcome, err error) []any {
	openFor, maxOpen, _ := circuitParams(b.local())
	text, deadline := "", "0"
	if verdict == "fail" {
		text, deadline = failureText(err)
		if err == nil { // a response came: its description, as breaker.Circuit keeps it
			text = cmp.Or(out.Reason, out.Kind.String())
		}
	}
	return []any{p.Ticket().Gen, p.Ticket().Seq, verdict, openFor.Microseconds(), maxOpen.Microseconds(),
		b.jitterFactor(), text, deadline}
}

// failureText returns what the fleet keeps of a failure: its text, and "1"
// if it is a deadline's ("0" if not).
func failureText(err error) (text, deadline string) {
	if err == nil {
		return "", "0"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err.Error(), "1"
	}
	return err.Error(), "0"
}

// circuitParams returns the open time of a first opening, its cap and
// the probe lease of l, with the defaults resolved as package breaker
// resolves them.
func circuitParams(l *breaker.Circuit) (openFor, maxOpen, lease time.Duration) {
	openFor = positive(l.OpenFor, breaker.DefaultOpenFor)
	maxOpen = max(positive(l.MaxOpenFor, 8*openFor), openFor)
	return openFor, maxOpen, positive(l.ProbeLease, breaker.DefaultProbeLease)
}

// jitterFactor returns a factor uniform in [1-jitter, 1+jitter), drawn
// from Local's Rand.
func (b *Breaker) jitterFactor() float64 {
	r := rand.Float64
	if l := b.local(); l.Rand != nil {
		r = l.Rand
	}
	u := r()
	if !(u >= 0) { // negative or NaN: a Rand out of its range is held to it
		u = 0
	}
	return 1 - jitter + 2*jitter*math.Min(u, 1)
}

// fleetFailure is the last failure of a scope's shared circuit as the
// replica that counted it published it: its text, and whether it was a
// deadline's, so that errors.Is(err, context.DeadlineExceeded) tells a hung
// server from one that answers 503 on every replica, as in process.
type fleetFailure struct {
	text     string
	deadline bool
}

func (e *fleetFailure) Error() string { return e.text }

// Is reports whether target is context.DeadlineExceeded and the failure
// was a deadline's.
func (e *fleetFailure) Is(target error) bool {
	return e.deadline && target == context.DeadlineExceeded
}
