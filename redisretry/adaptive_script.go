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

var adaptiveScript = redis.NewScript(adaptiveSource)

// adaptiveAnswer is what the script returns. Times are microseconds of
// the script's clock, rates requests per second.
type adaptiveAnswer struct {
	enabled                               bool
	gen                                   uint64
	taken                                 int     // slots handed out, of those asked for
	wait, slot                            float64 // µs, of the first slot
	fill, measured, lastMax               float64
	lastThrottle, burst, tat, scriptClock float64 // µs, tokens, µs, µs
	interval                              float64 // µs between two slots
}

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

// args returns the script's ARGV for op at now, with extra after the
// common ones.
func (a *Adaptive) args(now time.Time, p *adaptiveParams, sends uint64, op string, extra ...any) []any {
	return append([]any{op, a.store().clockArg(now), p.beta, p.scale, p.minFill, p.smoothing, p.additive,
		a.store().ttlMillis(), sends}, extra...)
}

// run calls the script for op on scope at now and parses its answer,
// within ctx (see Store.doWithin).
func (a *Adaptive) run(ctx context.Context, now time.Time, scope string, p *adaptiveParams, sends uint64, op string, extra ...any) (ans adaptiveAnswer, err error) {
	err = a.store().doWithin(ctx, func(ctx context.Context, c redis.UniversalClient) error {
		v, err := adaptiveScript.Run(ctx, c, []string{a.store().key(scope, "adaptive")}, a.args(now, p, sends, op, extra...)...).Slice()
		if err != nil {
			return err
		}
		return ans.parse(v)
	})
	return ans, err
}

// parse reads the script's reply v into ans.
func (ans *adaptiveAnswer) parse(v []any) error {
	if len(v) != 13 {
		return fmt.Errorf("redisretry: adaptive script returned %d values, want 13", len(v))
	}
	ans.enabled = v[0] == int64(1)
	gen, _ := v[1].(int64)
	ans.gen = uint64(max(gen, 0))
	taken, _ := v[2].(int64)
	ans.taken = int(max(taken, 0))
	fs := [...]*float64{&ans.wait, &ans.slot, &ans.fill, &ans.measured, &ans.lastMax, &ans.lastThrottle, &ans.burst, &ans.tat, &ans.scriptClock, &ans.interval}
	for i, f := range fs {
		s, _ := v[3+i].(string)
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("redisretry: adaptive script returned %q: %w", s, err)
		}
		*f = x
	}
	return nil
}
