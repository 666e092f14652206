package policy_test

// The concurrency member: a *concurrency.Adaptive or *concurrency.Fixed
// from JSON and back.

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
)

func TestLoadConcurrency(t *testing.T) {
	tests := []struct {
		doc  string
		want concurrency.Limiter
	}{
		{`{"type": "adaptive"}`, &concurrency.Adaptive{}},
		{`{"type": "Adaptive", "initial": null}`, &concurrency.Adaptive{}},
		{`{"type": "ADAPTIVE", "initial": 10, "min": 2, "max": 200, "tolerance": 1.5, "backoff": 0.75, "maxWait": "5ms", "maxScopes": 50}`,
			&concurrency.Adaptive{Initial: 10, Min: 2, Max: 200, Tolerance: 1.5, Backoff: 0.75, MaxWait: 5 * time.Millisecond, MaxScopes: 50}},
		{`{"min": 50, "max": 10, "type": "adaptive"}`, &concurrency.Adaptive{Min: 50, Max: 10}},
		{`{"type": "adaptive", "tolerance": 0, "backoff": 0}`, &concurrency.Adaptive{}},
		{`{"type": "fixed"}`, &concurrency.Fixed{}},
		{`{"type": "fixed", "max": 8, "maxWait": "10ms", "maxScopes": 3}`, &concurrency.Fixed{Max: 8, MaxWait: 10 * time.Millisecond, MaxScopes: 3}},
		{`{"max": 9223372036854775807, "type": "Fixed"}`, &concurrency.Fixed{Max: math.MaxInt}},
	}
	for _, tt := range tests {
		got, err := load(`{"concurrency": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(concurrency %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got.Concurrency, policyOpts); diff != "" {
			t.Errorf("Load(concurrency %s).Concurrency mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// A fixed concurrency object limits every scope to its max: the max+1st
// attempt in flight is refused.
func TestLoadConcurrencyFixedLimits(t *testing.T) {
	p, err := load(`{"concurrency": {"type": "fixed", "max": 2}}`)
	if err != nil {
		t.Fatalf("Load error = %v; want nil", err)
	}
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		_, err := p.Concurrency.Acquire(ctx, "a.example:443")
		if wantRefused := i == 3; (err != nil) != wantRefused {
			t.Errorf("Acquire #%d with 2 places error = %v; want refused %t", i, err, wantRefused)
		}
	}
}

func TestLoadConcurrencyErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message of the only error
	}{
		{"NotObject", `{"concurrency": "adaptive"}`, `policy: concurrency = "adaptive"; want a concurrency object whose type is adaptive or fixed`},
		{"MissingType", `{"concurrency": {"max": 8}}`, `policy: concurrency.type: missing; want adaptive or fixed`},
		{"NullType", `{"concurrency": {"type": null}}`, `policy: concurrency.type: missing; want adaptive or fixed`},
		{"TypeNotString", `{"concurrency": {"type": 1}}`, `policy: concurrency.type = 1; want adaptive or fixed`},
		{"MisspeltType", `{"concurrency": {"type": "fxed", "max": 8}}`, `policy: concurrency.type = "fxed"; did you mean "fixed"?`},
		{"UnknownType", `{"concurrency": {"type": "vegas"}}`, `policy: concurrency.type = "vegas"; want adaptive or fixed`},
		{"BothTypesAsMembers", `{"concurrency": {"adaptive": {}, "fixed": {"max": 8}}}`, `policy: concurrency.type: missing; want adaptive or fixed`},
		{"AdaptiveMemberInFixed", `{"concurrency": {"type": "fixed", "max": 8, "initial": 4}}`, `policy: concurrency.initial: unknown field; want one of type, max, maxWait, maxScopes`},
		{"AdaptiveUnknown", `{"concurrency": {"type": "adaptive", "limit": 4}}`, `policy: concurrency.limit: unknown field; want one of type, initial, min, max, tolerance, backoff, maxWait, maxScopes`},
		{"AdaptiveMisspelt", `{"concurrency": {"type": "adaptive", "tolerence": 1.5}}`, `policy: concurrency.tolerence: unknown field; did you mean "tolerance"?`},
		{"Hook", `{"concurrency": {"type": "fixed", "after": "1s"}}`, `policy: concurrency.after: unknown field; want one of type, max, maxWait, maxScopes`},
		{"NegativeFixedMax", `{"concurrency": {"type": "fixed", "max": -1}}`, `policy: concurrency.max = -1; want an integer >= 0 (0: no limit)`},
		{"FractionalFixedMax", `{"concurrency": {"type": "fixed", "max": 2.5}}`, `policy: concurrency.max = 2.5; want an integer >= 0 (0: no limit)`},
		{"NegativeInitial", `{"concurrency": {"type": "adaptive", "initial": -5}}`, `policy: concurrency.initial = -5; want an integer >= 0 (0: the default)`},
		{"NegativeMin", `{"concurrency": {"type": "adaptive", "min": -1}}`, `policy: concurrency.min = -1; want an integer >= 0 (0: the default)`},
		{"NegativeAdaptiveMax", `{"concurrency": {"type": "adaptive", "max": -1}}`, `policy: concurrency.max = -1; want an integer >= 0 (0: the default)`},
		{"ToleranceOne", `{"concurrency": {"type": "adaptive", "tolerance": 1}}`, `policy: concurrency.tolerance = 1; want a number > 1, or 0 for the default`},
		{"ToleranceFraction", `{"concurrency": {"type": "adaptive", "tolerance": 0.75}}`, `policy: concurrency.tolerance = 0.75; want a number > 1, or 0 for the default`},
		{"ToleranceTooLarge", `{"concurrency": {"type": "adaptive", "tolerance": 1e999}}`, `policy: concurrency.tolerance = 1e999; want a number > 1, or 0 for the default`},
		{"BackoffOne", `{"concurrency": {"type": "adaptive", "backoff": 1}}`, `policy: concurrency.backoff = 1; want a number 0 <= n < 1 (0: the default)`},
		{"BackoffNegative", `{"concurrency": {"type": "adaptive", "backoff": -0.5}}`, `policy: concurrency.backoff = -0.5; want a number 0 <= n < 1 (0: the default)`},
		{"NegativeMaxWait", `{"concurrency": {"type": "fixed", "max": 8, "maxWait": "-10ms"}}`, `policy: concurrency.maxWait = "-10ms"; want a duration string >= 0, such as "1.5s"`},
		{"NegativeScopes", `{"concurrency": {"type": "adaptive", "maxScopes": -1}}`, `policy: concurrency.maxScopes = -1; want an integer >= 0 (0: the default)`},
		{"Repeated", `{"concurrency": {"type": "fixed", "max": 8, "max": 9}}`, `policy: concurrency.max: repeated field; want it once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.doc)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Load(%s) error = %v; want %s", tt.doc, err, tt.want)
			}
		})
	}
}

func TestMarshalJSONWritesConcurrency(t *testing.T) {
	tests := []struct {
		l    concurrency.Limiter
		want string
	}{
		{&concurrency.Adaptive{}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Initial: 10, Min: 2, Max: 200, Tolerance: 1.5, Backoff: 0.75, MaxWait: 5 * time.Millisecond, MaxScopes: 50},
			`{"concurrency":{"type":"adaptive","initial":10,"min":2,"max":200,"tolerance":1.5,"backoff":0.75,"maxWait":"5ms","maxScopes":50}}`},
		{&concurrency.Fixed{}, `{"concurrency":{"type":"fixed"}}`},
		{&concurrency.Fixed{Max: 8, MaxWait: 10 * time.Millisecond, MaxScopes: 3}, `{"concurrency":{"type":"fixed","max":8,"maxWait":"10ms","maxScopes":3}}`},
	}
	for _, tt := range tests {
		p := policy.Policy{Concurrency: tt.l}
		b, err := p.MarshalJSON()
		if err != nil || string(b) != tt.want {
			t.Errorf("MarshalJSON(Concurrency %+v) = %s, %v; want %s, nil", tt.l, b, err, tt.want)
			continue
		}
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(Concurrency %+v)) mismatch (-want +got):\n%s", tt.l, diff)
		}
	}
}

// A value that the limiter reads as another (a negative count or
// duration as zero, a Tolerance of 1 or less, NaN or +Inf and a Backoff
// outside (0, 1) as the default), which Validate accepts and Load
// refuses, is written as zero, which Load reads the same.
func TestMarshalJSONWritesConcurrencyOutOfRangeInLoadsRange(t *testing.T) {
	tests := []struct {
		l    concurrency.Limiter
		want string
	}{
		{&concurrency.Adaptive{Initial: -1, Min: -2, Max: -3, MaxWait: -time.Second, MaxScopes: -4}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Tolerance: 1, Backoff: 1}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Tolerance: -2, Backoff: -0.5}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Tolerance: math.NaN(), Backoff: math.NaN()}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Tolerance: math.Inf(1), Backoff: math.Inf(-1)}, `{"concurrency":{"type":"adaptive"}}`},
		{&concurrency.Adaptive{Tolerance: math.Nextafter(1, 2), Backoff: math.Nextafter(1, 0)}, `{"concurrency":{"type":"adaptive","tolerance":1.0000000000000002,"backoff":0.9999999999999999}}`},
		{&concurrency.Fixed{Max: -1, MaxWait: -1, MaxScopes: math.MinInt}, `{"concurrency":{"type":"fixed"}}`},
	}
	for _, tt := range tests {
		p := policy.Policy{Concurrency: tt.l}
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(Concurrency %+v) = %v; want nil", tt.l, err)
		}
		data, err := json.Marshal(p)
		if err != nil || string(data) != tt.want {
			t.Errorf("Marshal(Concurrency %+v) = %s, %v; want %s, nil", tt.l, data, err, tt.want)
			continue
		}
		if _, err := policy.Load(bytes.NewReader(data)); err != nil {
			t.Errorf("Load(%s) error = %v; want nil", data, err)
		}
	}
}

func TestMarshalJSONRejectsConcurrencyJSONCannotHold(t *testing.T) {
	after := func(time.Duration) <-chan time.Time { return nil }
	tests := []struct {
		name string
		l    concurrency.Limiter
		want string
	}{
		{"AdaptiveAfter", &concurrency.Adaptive{After: after}, "policy: cannot write concurrency.after as JSON: it is a func"},
		{"FixedAfter", &concurrency.Fixed{Max: 8, After: after}, "policy: cannot write concurrency.after as JSON: it is a func"},
		{"OtherLimiter", otherConcurrency{}, "policy: cannot write concurrency as JSON: it is a policy_test.otherConcurrency; only a *concurrency.Adaptive or a *concurrency.Fixed has a JSON form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := policy.Policy{Concurrency: tt.l}.MarshalJSON()
			if err == nil || err.Error() != tt.want || b != nil {
				t.Errorf("MarshalJSON() = %s, %v; want nil, %s", b, err, tt.want)
			}
		})
	}
}

// otherConcurrency stands for a concurrency limit kept in a store.
type otherConcurrency struct{}

func (otherConcurrency) Acquire(context.Context, string) (concurrency.Permit, error) {
	return concurrency.Permit{}, nil
}
