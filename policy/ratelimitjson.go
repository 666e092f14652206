package policy

import (
	"fmt"

	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file maps the quota and the limiters of package ratelimit to the
// quota, limiter and rateLimit objects of the JSON schema (see Load) and
// back. Each decode makes a new value, so that no two loads share one; the
// Now hooks have no member.

// quota decodes a quota object into a new Quota.
func (v value) quota() *ratelimit.Quota {
	q := new(ratelimit.Quota)
	v.d.object(v.path, v.raw, "a quota object",
		field{"capacity", func(v value) { q.Capacity = v.count(wantCount) }},
		field{"retryCost", func(v value) { q.RetryCost = v.count(wantCount) }},
		field{"timeoutCost", func(v value) { q.TimeoutCost = v.count(wantCount) }},
		field{"throttleCost", func(v value) { q.ThrottleCost = v.count(wantCount) }},
		field{"successIncrement", func(v value) { q.SuccessIncrement = v.count(wantCount) }},
		field{"refillPerSecond", func(v value) { q.RefillPerSecond = v.float(nonNegative, "a number >= 0 (0: no refill)") }},
		field{"wait", func(v value) { q.Wait = v.bool() }},
		field{"maxScopes", func(v value) { q.MaxScopes = v.count(wantCount) }},
	)
	return q
}

// limiter decodes a limiter object into a new Adaptive.
func (v value) limiter() *ratelimit.Adaptive {
	a := new(ratelimit.Adaptive)
	v.d.object(v.path, v.raw, "a limiter object",
		field{"beta", func(v value) { a.Beta = v.float(below1, "a number 0 <= n < 1 (0: the default)") }},
		field{"scale", func(v value) { a.Scale = v.float(nonNegative, "a number >= 0 (0: the default)") }},
		field{"smoothing", func(v value) { a.Smoothing = v.float(unit, "a number 0..1 (0: the default)") }},
		field{"minFillRate", func(v value) { a.MinFillRate = v.float(nonNegative, "a number >= 0 (0: the default)") }},
		field{"additive", func(v value) { a.Additive = v.float(nonNegative, "a number >= 0 (0: none)") }},
		field{"reference", func(v value) { a.Reference = v.bool() }},
		field{"failFast", func(v value) { a.FailFast = v.bool() }},
		field{"maxWait", func(v value) { a.MaxWait = v.duration() }},
		field{"maxScopes", func(v value) { a.MaxScopes = v.count(wantCount) }},
	)
	return a
}

// rateLimit decodes a rateLimit object into a new Fixed.
func (v value) rateLimit() *ratelimit.Fixed {
	f := new(ratelimit.Fixed)
	v.d.object(v.path, v.raw, "a rateLimit object",
		field{"rate", func(v value) { f.Rate = v.float(nonNegative, "a number >= 0 (0: no limit)") }},
		field{"burst", func(v value) { f.Burst = v.count(wantCount) }},
		field{"failFast", func(v value) { f.FailFast = v.bool() }},
		field{"maxWait", func(v value) { f.MaxWait = v.duration() }},
		field{"maxScopes", func(v value) { f.MaxScopes = v.count(wantCount) }},
	)
	return f
}

// quota encodes q as a quota object, the inverse of value.quota.
func (e *encoder) quota(path string, rq ratelimit.RetryQuota) []byte {
	q, ok := rq.(*ratelimit.Quota)
	if !ok {
		e.fail(path, fmt.Sprintf("it is a %T; only a *ratelimit.Quota has a JSON form", rq))
		return []byte("null")
	}
	o := e.object(path)
	o.int("capacity", int64(q.Capacity))
	o.int("retryCost", int64(q.RetryCost))
	o.int("timeoutCost", int64(q.TimeoutCost))
	o.int("throttleCost", int64(q.ThrottleCost))
	o.int("successIncrement", int64(q.SuccessIncrement))
	o.float("refillPerSecond", q.RefillPerSecond)
	o.bool("wait", q.Wait)
	o.int("maxScopes", int64(q.MaxScopes))
	o.fn("now", q.Now != nil)
	return o.bytes()
}

// limiter encodes a as a limiter object, the inverse of value.limiter.
func (e *encoder) limiter(path string, l ratelimit.Limiter) []byte {
	a, ok := l.(*ratelimit.Adaptive)
	if !ok {
		e.fail(path, fmt.Sprintf("it is a %T; only a *ratelimit.Adaptive has a JSON form", l))
		return []byte("null")
	}
	o := e.object(path)
	o.float("beta", a.Beta)
	o.float("scale", a.Scale)
	o.float("smoothing", a.Smoothing)
	o.float("minFillRate", a.MinFillRate)
	o.float("additive", a.Additive)
	o.bool("reference", a.Reference)
	o.bool("failFast", a.FailFast)
	o.dur("maxWait", a.MaxWait)
	o.int("maxScopes", int64(a.MaxScopes))
	o.fn("now", a.Now != nil)
	return o.bytes()
}

// rateLimit encodes f as a rateLimit object, the inverse of
// value.rateLimit.
func (e *encoder) rateLimit(path string, l ratelimit.Limiter) []byte {
	f, ok := l.(*ratelimit.Fixed)
	if !ok {
		e.fail(path, fmt.Sprintf("it is a %T; only a *ratelimit.Fixed has a JSON form", l))
		return []byte("null")
	}
	o := e.object(path)
	o.float("rate", f.Rate)
	o.int("burst", int64(f.Burst))
	o.bool("failFast", f.FailFast)
	o.dur("maxWait", f.MaxWait)
	o.int("maxScopes", int64(f.MaxScopes))
	o.fn("now", f.Now != nil)
	return o.bytes()
}
