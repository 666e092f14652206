package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file maps the quotas and the limiters of package ratelimit to the
// quota, budget, limiter and rateLimit members of the JSON schema (see
// Load) and back. Each decode makes a new value, so that no two loads
// share one; the Now hooks have no member.

// wantQuota is what the quota member accepts.
const wantQuota = `"none" or a quota object`

// retryQuota decodes the quota member: the string "none", in any case, as
// quota.None, or a quota object as a new Quota. A quota object
// whose "type" is "budget" (or close to it), the form of a budget in an
// earlier schema, is reported with where a budget goes; any other "type"
// is an unknown field.
func (v value) retryQuota() quota.Quota {
	if bytes.HasPrefix(bytes.TrimSpace(v.raw), []byte(`"`)) {
		if s, ok := v.string(wantQuota); ok && strings.EqualFold(s, "none") {
			return quota.None
		}
		v.fail(wantQuota)
		return nil
	}
	ms, ok := v.d.members(v.path, v.raw, wantQuota)
	if !ok {
		return nil
	}
	for _, m := range ms {
		var typ string
		if m.name == "type" && json.Unmarshal(m.raw, &typ) == nil && closest(typ, []string{"budget"}) != "" {
			v.d.fail(join(v.path, m.name), show(m.raw), `a quota object without "type"; a budget counts requests and goes in "budget": {...}`)
			return nil
		}
	}
	q := new(quota.Bucket)
	v.d.apply(v.path, ms, quotaFields(q))
	return q
}

// quotaFields are the members of a quota object, stored in q.
func quotaFields(q *quota.Bucket) []field {
	return []field{
		{"capacity", setCount(&q.Capacity)},
		{"retryCost", setCount(&q.RetryCost)},
		{"timeoutCost", setCount(&q.TimeoutCost)},
		{"throttleCost", setCount(&q.ThrottleCost)},
		{"successIncrement", setCount(&q.SuccessIncrement)},
		{"refillPerSecond", func(v value) { q.RefillPerSecond = v.float(nonNegative, "a number >= 0 (0: no refill)") }},
		{"wait", setBool(&q.Wait)},
		{"maxScopes", setCount(&q.MaxScopes)},
	}
}

// budget decodes a budget object into a new Budget.
func (v value) budget() *quota.Budget {
	b := new(quota.Budget)
	v.d.object(v.path, v.raw, "a budget object", budgetFields(b)...)
	return b
}

// budgetFields are the members of a budget object, stored in b. The
// numbers take any value that Budget gives a meaning, negative ones
// included.
func budgetFields(b *quota.Budget) []field {
	return []field{
		{"ratio", func(v value) { b.Ratio = v.float(finite, "a number (0: the default; < 0: none)") }},
		{"minPerSecond", func(v value) { b.MinPerSecond = v.float(finite, "a number (0: the default; < 0: no floor)") }},
		{"window", setDuration(&b.Window)},
		{"maxScopes", setCount(&b.MaxScopes)},
	}
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
		field{"throttleRetries", func(v value) {
			a.ThrottleRetries = int(v.int(-1, ratelimit.MaxThrottleRetries, fmt.Sprintf("an integer -1..%d (0: the default, %d; -1: none)",
				ratelimit.MaxThrottleRetries, ratelimit.DefaultThrottleRetries)))
		}},
		field{"reference", setBool(&a.Reference)},
		field{"failFast", setBool(&a.FailFast)},
		field{"maxWait", setDuration(&a.MaxWait)},
		field{"maxScopes", setCount(&a.MaxScopes)},
	)
	return a
}

// rateLimit decodes a rateLimit object into a new Fixed.
func (v value) rateLimit() *ratelimit.Fixed {
	f := new(ratelimit.Fixed)
	v.d.object(v.path, v.raw, "a rateLimit object",
		field{"rate", func(v value) { f.Rate = v.float(nonNegative, "a number >= 0 (0: no limit)") }},
		field{"burst", setCount(&f.Burst)},
		field{"failFast", setBool(&f.FailFast)},
		field{"maxWait", setDuration(&f.MaxWait)},
		field{"maxScopes", setCount(&f.MaxScopes)},
	)
	return f
}

// quota encodes rq, the inverse of value.retryQuota: "none" for
// quota.None, a quota object for a *quota.Bucket.
func (e *encoder) quota(path string, rq quota.Quota) []byte {
	if rq == quota.None {
		return []byte(`"none"`)
	}
	switch q := rq.(type) {
	case *quota.Bucket:
		if q != nil {
			return e.quotaObject(path, q)
		}
		e.fail(path, "it is a nil *quota.Bucket")
	case *quota.Budget:
		e.fail(path, "it is a *quota.Budget, which counts requests and goes in budget")
	default:
		e.fail(path, fmt.Sprintf("it is a %T; only a *quota.Bucket or quota.None has a JSON form", rq))
	}
	return []byte("null")
}

// only returns x as a *T, the one type with a JSON form at path. For
// anything else, a nil *T included, it reports why x cannot be written and
// returns nil.
func only[T any](e *encoder, path string, x any) *T {
	p, ok := x.(*T)
	switch {
	case !ok:
		e.fail(path, fmt.Sprintf("it is a %T; only a %T has a JSON form", x, p))
	case p == nil:
		e.fail(path, fmt.Sprintf("it is a nil %T", p))
	}
	return p
}

// budget encodes rq as a budget object, the inverse of value.budget.
func (e *encoder) budget(path string, rq quota.Quota) []byte {
	b := only[quota.Budget](e, path, rq)
	if b == nil {
		return []byte("null")
	}
	o := e.object(path)
	o.float("ratio", b.Ratio)
	o.float("minPerSecond", b.MinPerSecond)
	o.dur("window", b.Window)
	o.int("maxScopes", int64(b.MaxScopes))
	o.fn("now", b.Now != nil)
	return o.bytes()
}

// quotaObject encodes q as a quota object.
func (e *encoder) quotaObject(path string, q *quota.Bucket) []byte {
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

// limiter encodes l as a limiter object, the inverse of value.limiter.
func (e *encoder) limiter(path string, l ratelimit.Limiter) []byte {
	a := only[ratelimit.Adaptive](e, path, l)
	if a == nil {
		return []byte("null")
	}
	o := e.object(path)
	o.float("beta", a.Beta)
	o.float("scale", a.Scale)
	o.float("smoothing", a.Smoothing)
	o.float("minFillRate", a.MinFillRate)
	o.float("additive", a.Additive)
	o.int("throttleRetries", int64(max(-1, min(a.ThrottleRetries, ratelimit.MaxThrottleRetries)))) // the same meaning, in the range Load takes
	o.bool("reference", a.Reference)
	o.bool("failFast", a.FailFast)
	o.dur("maxWait", a.MaxWait)
	o.int("maxScopes", int64(a.MaxScopes))
	o.fn("now", a.Now != nil)
	return o.bytes()
}

// rateLimit encodes l as a rateLimit object, the inverse of
// value.rateLimit.
func (e *encoder) rateLimit(path string, l ratelimit.Limiter) []byte {
	f := only[ratelimit.Fixed](e, path, l)
	if f == nil {
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
