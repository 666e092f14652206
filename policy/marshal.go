package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalJSON writes p in the schema that [Load] reads, so that Load gives
// back a Policy equal to p: the same values, and new pointers in place of
// Quota, Budget, Limiter, RateLimit, Breaker, Concurrency, Penalty,
// Failover and Hedge holding the same settings. Zero fields and nil
// pointers are left out, the members come in the order of the Policy
// fields, and no preset is written: every setting is spelled out. A nil
// *quota.Bucket or other nil pointer in Quota, Budget, Limiter, RateLimit,
// Breaker or Concurrency means nil (see Nil pointers on [Policy]) and is
// left out too. An empty but non-nil Failover.Endpoints, Failover.Methods,
// Penalty.Codes or Penalty.Statuses is written as [], since an empty
// Failover.Methods lets no request fail over where a nil one means GET and
// HEAD. quota.None in Quota is written as "none", and retryafter.None in
// ServerDelay.Headers as "none".
//
// A func cannot be written, so MarshalJSON returns an error naming the
// field when one is set: Classify, Scope, a Rand of a strategy, a Now of
// a quota, the budget or a limiter, the Now, Rand or OnChange of a
// breaker, the After of a concurrency limit, and a breaker's Trips, unless
// it is a breaker.Kinds of Transient and Timeout, which is written as the
// trips list.
// Write p before [Policy.WithDefaults], which sets Classify. It also
// returns an error for a Backoff or ThrottleBackoff that is not one of the
// strategy values of package backoff (a backoff.Func, a pointer, a type
// of your own); for a Quota, Budget, Limiter, RateLimit, Breaker or
// Concurrency that is not an in-process value of package quota,
// ratelimit, breaker or concurrency (*quota.Bucket or quota.None in
// Quota, *quota.Budget in Budget, *ratelimit.Adaptive in Limiter,
// *ratelimit.Fixed in RateLimit, *breaker.Circuit in Breaker,
// *concurrency.Adaptive or *concurrency.Fixed in Concurrency); for a
// number that JSON cannot hold (NaN, an infinity); for a string that is
// not valid UTF-8; for ServerDelay.Headers bits that name no
// retryafter.Source, or that mix retryafter.None with others; and for a
// Failover.Mode with no name. The errors are joined with errors.Join; each
// reads "policy: cannot write <path> as JSON: <why>", with path in the
// names of the schema.
//
// A value that Load would reject, such as a negative MaxAttempts or
// MaxDelay, an endpoint that ParseEndpoint rejects or a Hedge that hedges
// nothing, is written as it is, so MarshalJSON never changes a setting
// silently. The exceptions are written as what they mean, in the range
// Load takes, so that Load reads back the same setting: a nil pointer, as
// nil; a limiter's ThrottleRetries below -1 as -1 and above 100 as 100;
// and in a Breaker or Concurrency, a negative count or duration, a
// concurrency.Adaptive's Tolerance of 1 or less, NaN or +Inf, and its
// Backoff outside (0, 1), as zero, which means the same there.
func (p Policy) MarshalJSON() ([]byte, error) {
	e := &encoder{}
	b := e.policy("", p)
	if err := errors.Join(e.errs...); err != nil {
		return nil, err
	}
	return b, nil
}

// policy encodes p, the policy at path.
func (e *encoder) policy(path string, p Policy) []byte {
	p = p.withoutNilPointers()
	o := e.object(path)
	o.int("maxAttempts", int64(p.MaxAttempts))
	if p.Backoff != nil {
		o.member("backoff", e.strategy(join(path, "backoff"), p.Backoff))
	}
	if p.ThrottleBackoff != nil {
		o.member("throttleBackoff", e.strategy(join(path, "throttleBackoff"), p.ThrottleBackoff))
	}
	o.dur("maxDelay", p.MaxDelay)
	if p.ServerDelay != (ServerDelay{}) {
		o.member("serverDelay", e.serverDelay(join(path, "serverDelay"), p.ServerDelay))
	}
	o.dur("attemptTimeout", p.AttemptTimeout)
	o.dur("maxTotalTime", p.MaxTotalTime)
	o.dur("maxTotalWait", p.MaxTotalWait)
	o.dur("terminationBuffer", p.TerminationBuffer)
	if p.Penalty != nil {
		o.member("penalty", e.penalty(join(path, "penalty"), p.Penalty))
	}
	o.fn("classify", p.Classify != nil)
	if p.Quota != nil {
		o.member("quota", e.quota(join(path, "quota"), p.Quota))
	}
	if p.Budget != nil {
		o.member("budget", e.budget(join(path, "budget"), p.Budget))
	}
	o.bool("retryNonIdempotent", p.RetryNonIdempotent)
	o.int("maxBodyBuffer", p.MaxBodyBuffer)
	if p.Limiter != nil {
		o.member("limiter", e.limiter(join(path, "limiter"), p.Limiter))
	}
	if p.RateLimit != nil {
		o.member("rateLimit", e.rateLimit(join(path, "rateLimit"), p.RateLimit))
	}
	if p.Breaker != nil {
		o.member("breaker", e.breaker(join(path, "breaker"), p.Breaker))
	}
	if p.Concurrency != nil {
		o.member("concurrency", e.concurrency(join(path, "concurrency"), p.Concurrency))
	}
	o.fn("scope", p.Scope != nil)
	if p.Failover != nil {
		o.member("failover", e.failover(join(path, "failover"), p.Failover))
	}
	if p.Hedge != nil {
		o.member("hedge", e.hedge(join(path, "hedge"), p.Hedge))
	}
	o.int("maxDrain", p.MaxDrain)
	o.dur("readTimeout", p.ReadTimeout)
	o.str("attemptHeader", p.AttemptHeader)
	o.bool("ignoreSDKAttempts", p.IgnoreSDKAttempts)
	return o.bytes()
}

// encoder collects the errors of one MarshalJSON call.
type encoder struct{ errs []error }

// fail records that the field at path cannot be written, and why.
func (e *encoder) fail(path, why string) {
	e.errs = append(e.errs, fmt.Errorf("policy: cannot write %s as JSON: %s", orDocument(path), why))
}

// jsonObject builds the JSON object at path member by member, in the order
// written, leaving out the zero values.
type jsonObject struct {
	e    *encoder
	path string
	buf  []byte
}

// object starts the object at path.
func (e *encoder) object(path string) *jsonObject { return &jsonObject{e: e, path: path} }

// member appends the member name with the JSON value raw.
func (o *jsonObject) member(name string, raw []byte) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	quoted, _ := json.Marshal(name) // a string always marshals
	o.buf = append(o.buf, quoted...)
	o.buf = append(o.buf, ':')
	o.buf = append(o.buf, raw...)
}

func (o *jsonObject) str(name, s string) {
	if s != "" && o.utf8(name, s) {
		b, _ := json.Marshal(s) // a string always marshals
		o.member(name, b)
	}
}

// strs appends list, leaving out a nil one but writing an empty one as [].
func (o *jsonObject) strs(name string, list []string) {
	if list == nil {
		return
	}
	for i, s := range list {
		if !o.utf8(name+"["+strconv.Itoa(i)+"]", s) {
			return
		}
	}
	b, _ := json.Marshal(list) // a []string always marshals
	o.member(name, b)
}

// ints appends list, leaving out a nil one but writing an empty one as [].
func (o *jsonObject) ints(name string, list []int) {
	if list == nil {
		return
	}
	b, _ := json.Marshal(list) // an []int always marshals
	o.member(name, b)
}

// utf8 reports whether s is valid UTF-8, and reports the field name if
// not: encoding/json would replace the bad bytes, changing the setting.
func (o *jsonObject) utf8(name, s string) bool {
	if !utf8.ValidString(s) {
		o.e.fail(join(o.path, name), "it is not valid UTF-8: "+strconv.Quote(s))
		return false
	}
	return true
}

func (o *jsonObject) int(name string, n int64) {
	if n != 0 {
		o.member(name, strconv.AppendInt(nil, n, 10))
	}
}

func (o *jsonObject) dur(name string, d time.Duration) {
	if d != 0 {
		o.str(name, d.String())
	}
}

func (o *jsonObject) bool(name string, b bool) {
	if b {
		o.member(name, []byte("true"))
	}
}

// float appends f in the shortest form that reads back as the same
// float64, and reports NaN and the infinities, which JSON cannot hold.
func (o *jsonObject) float(name string, f float64) {
	switch {
	case f == 0:
	case math.IsNaN(f) || math.IsInf(f, 0):
		o.e.fail(join(o.path, name), "it is "+strconv.FormatFloat(f, 'g', -1, 64))
	default:
		o.member(name, strconv.AppendFloat(nil, f, 'g', -1, 64))
	}
}

// fn reports the func field name if it is set: a func has no JSON form.
func (o *jsonObject) fn(name string, set bool) {
	if set {
		o.e.fail(join(o.path, name), "it is a func")
	}
}

// bytes returns the finished object.
func (o *jsonObject) bytes() []byte {
	if len(o.buf) == 0 {
		return []byte("{}")
	}
	return append(o.buf, '}')
}
