package redisretry

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file is the Go side of adaptive.lua: the parameters it takes, the
// call, and the answer it returns.

//go:embed adaptive.lua
var adaptiveSource string

// publishedSource defines the functions of the published quota's queue
// that adaptive.lua calls: one script, so that a Reserve takes its places
// in both queues in one round trip.
//
//go:embed published.lua
var publishedSource string

var adaptiveScript = redis.NewScript(publishedSource + "\n" + adaptiveSource)

// adaptiveAnswer is what the script returns. Times are microseconds of
// the script's clock, rates requests per second.
type adaptiveAnswer struct {
	enabled                               bool
	gen                                   uint64
	taken                                 int     // slots handed out, of those asked for
	slot                                  float64 // µs, the first slot
	fill, measured, lastMax               float64
	lastThrottle, burst, tat, scriptClock float64 // µs, tokens, µs, µs
	interval                              float64 // µs between two slots

	// The published quota's pacing (published.lua).
	paced    bool      // it paces the scope
	quota    int64     // the remaining count last published
	pubRate  float64   // places per second, for the fleet
	pubReset float64   // µs: when its window resets
	pubWaits []float64 // µs: the wait of each slot taken in its queue, and of the first refused; none unless paced
}

// limited reports whether ans says that the scope is limited or paced by
// its published quota, so that the slots it handed out wait; the zero
// answer says neither.
func (ans *adaptiveAnswer) limited() bool { return ans.enabled || ans.paced }

// adaptiveParams are a ratelimit.Adaptive's parameters with the defaults
// resolved as package ratelimit resolves them.
type adaptiveParams struct {
	beta, scale, minFill, smoothing, additive float64
	maxWait                                   int64 // µs; -1: any
}

func adaptiveParamsOf(l *ratelimit.Adaptive) adaptiveParams {
	p := adaptiveParams{beta: l.Beta, scale: l.Scale, minFill: l.MinFillRate, smoothing: l.Smoothing, additive: l.Additive, maxWait: -1}
	if !(p.beta > 0 && p.beta < 1) {
		p.beta = ratelimit.DefaultBeta
	}
	if !(p.scale > 0) || math.IsInf(p.scale, 1) {
		p.scale = ratelimit.DefaultScale
	}
	if !(p.smoothing > 0 && p.smoothing <= 1) {
		p.smoothing = ratelimit.DefaultSmoothing
	}
	if !(p.minFill > 0) || math.IsInf(p.minFill, 1) {
		p.minFill = ratelimit.DefaultMinFillRate
	}
	if !(p.additive > 0) || math.IsInf(p.additive, 1) {
		p.additive = 0
	}
	switch {
	case l.FailFast:
		p.maxWait = 0
	case l.MaxWait > 0:
		p.maxWait = l.MaxWait.Microseconds()
	}
	return p
}

// args returns the script's ARGV for op at now, with op's two arguments
// x and y after the common ones, then the published quotas in notes.
func (a *Adaptive) args(now time.Time, p *adaptiveParams, sends uint64, op string, x, y any, notes *quotaNotes) []any {
	v := []any{op, a.store().clockArg(now), p.beta, p.scale, p.minFill, p.smoothing, p.additive,
		a.store().ttlMillis(), sends, x, y}
	return notes.appendArgs(v, now)
}

// keys returns the script's KEYS for scope: its hash, and its published
// quota's.
func (a *Adaptive) keys(scope string) []string {
	return []string{a.store().key(scope, "adaptive"), a.store().key(scope, "published")}
}

// run calls the script for op on scope at now, with op's arguments x and y
// and the published quotas in notes, and parses its answer, within ctx
// (see Store.doWithin).
func (a *Adaptive) run(ctx context.Context, now time.Time, scope string, p *adaptiveParams, sends uint64, op string, x, y any, notes *quotaNotes) (ans adaptiveAnswer, err error) {
	err = a.store().doWithin(ctx, func(ctx context.Context, c redis.UniversalClient) error {
		v, err := adaptiveScript.Run(ctx, c, a.keys(scope), a.args(now, p, sends, op, x, y, notes)...).Slice()
		if err != nil {
			return err
		}
		return ans.parse(v)
	})
	return ans, err
}

// parse reads the script's reply v into ans.
func (ans *adaptiveAnswer) parse(v []any) error {
	if len(v) != 17 {
		return fmt.Errorf("redisretry: adaptive script returned %d values, want 17", len(v))
	}
	ans.enabled = v[0] == int64(1)
	gen, _ := v[1].(int64)
	ans.gen = uint64(max(gen, 0))
	taken, _ := v[2].(int64)
	ans.taken = int(max(taken, 0))
	var quota float64
	fs := [...]*float64{&ans.slot, &ans.fill, &ans.measured, &ans.lastMax, &ans.lastThrottle, &ans.burst, &ans.tat, &ans.scriptClock, &ans.interval}
	for i, f := range fs {
		if err := parseFloat(v[3+i], f); err != nil {
			return err
		}
	}
	ans.paced = v[12] == int64(1)
	for i, f := range [...]*float64{&quota, &ans.pubRate, &ans.pubReset} {
		if err := parseFloat(v[13+i], f); err != nil {
			return err
		}
	}
	ans.quota = saturate(quota)
	waits, _ := v[16].([]any)
	ans.pubWaits = make([]float64, len(waits))
	for i, w := range waits {
		if err := parseFloat(w, &ans.pubWaits[i]); err != nil {
			return err
		}
	}
	return nil
}

// parseFloat reads into f the number the script returned as the string v.
func parseFloat(v any, f *float64) error {
	s, _ := v.(string)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("redisretry: adaptive script returned %q: %w", s, err)
	}
	*f = x
	return nil
}

// saturate converts x, a count the script computed in doubles, to an
// int64, saturating at the bounds: a remaining count up to 2^63 survives
// the trip as the largest int64.
func saturate(x float64) int64 {
	switch {
	case !(x > 0):
		return 0
	case x >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(x)
}
