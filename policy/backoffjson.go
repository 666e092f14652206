package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// This file maps the strategies of package backoff to the strategy objects
// of the JSON schema (see Load) and back. Each type's members are its
// fields with a lower-case first letter; Rand fields have none.

// strategyTypes are the values of a strategy object's "type", as Load's
// documentation lists them; strategyAt matches them in any case.
var strategyTypes = []string{"fullJitter", "equalJitter", "decorrelated", "scaledJitter",
	"exponential", "incremental", "constant", "schedule", "capped", "jittered"}

// wantType lists the strategy types.
var wantType = "one of " + strings.Join(strategyTypes, ", ")

// maxNesting is how deep strategy objects may nest in capped and jittered
// ones. Real configurations nest two or three; the limit keeps a hostile
// document, whose every level is parsed again, from taking quadratic time.
const maxNesting = 16

// strategy decodes a strategy object.
func (v value) strategy() backoff.Strategy { return v.strategyAt(1) }

// strategyAt decodes a strategy object nested depth levels deep.
func (v value) strategyAt(depth int) backoff.Strategy {
	if depth > maxNesting {
		v.d.fail(v.path, "", "strategies nested too deep; want at most 16 levels")
		return nil
	}
	o, ok := v.typed("a strategy object whose type is "+wantType, wantType)
	if !ok {
		return nil
	}
	switch strings.ToLower(o.typ) {
	case "fulljitter":
		var s backoff.FullJitter
		o.fields(field{"base", setDuration(&s.Base)}, field{"max", setDuration(&s.Max)})
		return s
	case "equaljitter":
		var s backoff.EqualJitter
		o.fields(field{"base", setDuration(&s.Base)}, field{"max", setDuration(&s.Max)})
		return s
	case "decorrelated":
		var s backoff.Decorrelated
		o.fields(field{"base", setDuration(&s.Base)}, field{"max", setDuration(&s.Max)})
		return s
	case "scaledjitter":
		var s backoff.ScaledJitter
		o.fields(field{"initialDelay", setDuration(&s.InitialDelay)},
			field{"maxBackoff", setDuration(&s.MaxBackoff)},
			field{"scaleFactor", func(v value) {
				s.ScaleFactor = v.float(func(f float64) bool { return f == 0 || f >= 1 }, "a number >= 1, or 0 for the default")
			}},
			field{"jitter", setFraction(&s.Jitter)},
			field{"noJitter", setBool(&s.NoJitter)})
		return s
	case "exponential":
		var s backoff.Exponential
		o.fields(field{"minBackoff", setDuration(&s.MinBackoff)},
			field{"maxBackoff", setDuration(&s.MaxBackoff)},
			field{"deltaBackoff", setDuration(&s.DeltaBackoff)},
			field{"noMinBackoff", setBool(&s.NoMinBackoff)},
			field{"fastFirstRetry", setBool(&s.FastFirstRetry)})
		return s
	case "incremental":
		var s backoff.Incremental
		o.fields(field{"initial", setDuration(&s.Initial)},
			field{"increment", setDuration(&s.Increment)},
			field{"fastFirstRetry", setBool(&s.FastFirstRetry)})
		return s
	case "constant":
		var s backoff.Constant
		o.fields(field{"interval", setDuration(&s.Interval)}, field{"fastFirstRetry", setBool(&s.FastFirstRetry)})
		return s
	case "schedule":
		var s backoff.Schedule
		o.fields(field{"minDelay", setDuration(&s.MinDelay)},
			field{"maxDelay", setDuration(&s.MaxDelay)},
			field{"numRetries", setCount(&s.NumRetries)},
			field{"numNoDelayRetries", setCount(&s.NumNoDelayRetries)},
			field{"numMinDelayRetries", setCount(&s.NumMinDelayRetries)},
			field{"numMaxDelayRetries", setCount(&s.NumMaxDelayRetries)},
			field{"backoffFunction", func(v value) { s.BackoffFunction = v.curve() }},
			field{"jitter", setFraction(&s.Jitter)})
		return s
	case "capped":
		var s backoff.Capped
		o.fields(field{"strategy", func(v value) { s.Strategy = v.strategyAt(depth + 1) }}, field{"max", setDuration(&s.Max)})
		return s
	case "jittered":
		var s backoff.Jittered
		o.fields(field{"strategy", func(v value) { s.Strategy = v.strategyAt(depth + 1) }}, field{"fraction", setFraction(&s.Fraction)})
		return s
	}
	o.unknown(strategyTypes, wantType)
	return nil
}

// curve decodes an SNS backoffFunction name, in any case.
func (v value) curve() backoff.Curve {
	const want = "linear, arithmetic, exponential or geometric"
	s, ok := v.string(want)
	if !ok {
		return backoff.CurveLinear
	}
	c, err := backoff.ParseCurve(s)
	if err != nil {
		names := []string{backoff.CurveLinear.String(), backoff.CurveArithmetic.String(), backoff.CurveExponential.String(), backoff.CurveGeometric.String()}
		v.failName(s, names, want)
	}
	return c
}

// setDuration, setBool, setCount and setFraction return a field's action
// that stores its value in dst.
func setDuration(dst *time.Duration) func(value) { return func(v value) { *dst = v.duration() } }
func setBool(dst *bool) func(value)              { return func(v value) { *dst = v.bool() } }
func setCount(dst *int) func(value)              { return func(v value) { *dst = v.count(wantCount) } }
func setFraction(dst *float64) func(value) {
	return func(v value) { *dst = v.float(unit, "a number 0..1 (0: the default)") }
}

// strategy encodes s as a strategy object, the inverse of value.strategy.
func (e *encoder) strategy(path string, s backoff.Strategy) []byte {
	o := e.object(path)
	switch s := s.(type) {
	case backoff.FullJitter:
		o.str("type", "fullJitter")
		o.dur("base", s.Base)
		o.dur("max", s.Max)
		o.fn("rand", s.Rand != nil)
	case backoff.EqualJitter:
		o.str("type", "equalJitter")
		o.dur("base", s.Base)
		o.dur("max", s.Max)
		o.fn("rand", s.Rand != nil)
	case backoff.Decorrelated:
		o.str("type", "decorrelated")
		o.dur("base", s.Base)
		o.dur("max", s.Max)
		o.fn("rand", s.Rand != nil)
	case backoff.ScaledJitter:
		o.str("type", "scaledJitter")
		o.dur("initialDelay", s.InitialDelay)
		o.dur("maxBackoff", s.MaxBackoff)
		o.float("scaleFactor", s.ScaleFactor)
		o.float("jitter", s.Jitter)
		o.bool("noJitter", s.NoJitter)
		o.fn("rand", s.Rand != nil)
	case backoff.Exponential:
		o.str("type", "exponential")
		o.dur("minBackoff", s.MinBackoff)
		o.dur("maxBackoff", s.MaxBackoff)
		o.dur("deltaBackoff", s.DeltaBackoff)
		o.bool("noMinBackoff", s.NoMinBackoff)
		o.bool("fastFirstRetry", s.FastFirstRetry)
		o.fn("rand", s.Rand != nil)
	case backoff.Incremental:
		o.str("type", "incremental")
		o.dur("initial", s.Initial)
		o.dur("increment", s.Increment)
		o.bool("fastFirstRetry", s.FastFirstRetry)
	case backoff.Constant:
		o.str("type", "constant")
		o.dur("interval", s.Interval)
		o.bool("fastFirstRetry", s.FastFirstRetry)
	case backoff.Schedule:
		o.str("type", "schedule")
		o.dur("minDelay", s.MinDelay)
		o.dur("maxDelay", s.MaxDelay)
		o.int("numRetries", int64(s.NumRetries))
		o.int("numNoDelayRetries", int64(s.NumNoDelayRetries))
		o.int("numMinDelayRetries", int64(s.NumMinDelayRetries))
		o.int("numMaxDelayRetries", int64(s.NumMaxDelayRetries))
		if name, err := s.BackoffFunction.MarshalText(); err != nil {
			e.fail(join(path, "backoffFunction"), "it is "+s.BackoffFunction.String())
		} else if s.BackoffFunction != backoff.CurveLinear {
			o.str("backoffFunction", string(name))
		}
		o.float("jitter", s.Jitter)
		o.fn("rand", s.Rand != nil)
	case backoff.Capped:
		o.str("type", "capped")
		if s.Strategy != nil {
			o.member("strategy", e.strategy(join(path, "strategy"), s.Strategy))
		}
		o.dur("max", s.Max)
	case backoff.Jittered:
		o.str("type", "jittered")
		if s.Strategy != nil {
			o.member("strategy", e.strategy(join(path, "strategy"), s.Strategy))
		}
		o.float("fraction", s.Fraction)
		o.fn("rand", s.Rand != nil)
	default:
		e.fail(path, fmt.Sprintf("it is a %T; only the strategy values of package backoff have a JSON form", s))
	}
	return o.bytes()
}
