package policy_test

// The breaker member: a *breaker.Circuit from JSON and back.

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
)

// onlyTimeouts and onlyTransients are Trips that count one kind.
var (
	onlyTimeouts   = breaker.Kinds{classify.Timeout}
	onlyTransients = breaker.Kinds{classify.Transient}
)

func TestLoadBreaker(t *testing.T) {
	tests := []struct {
		doc  string
		want *breaker.Circuit
	}{
		{`{}`, &breaker.Circuit{}},
		{`{"failures": null, "trips": null}`, &breaker.Circuit{}},
		{`{"failures": 3, "stalls": 1, "stallFor": "100ms"}`, &breaker.Circuit{Failures: 3, Stalls: 1, StallFor: 100 * time.Millisecond}},
		{`{"openFor": "5s", "maxOpenFor": "1m", "probes": 3, "probeLease": "2s", "maxScopes": 7}`,
			&breaker.Circuit{OpenFor: 5 * time.Second, MaxOpenFor: time.Minute, Probes: 3, ProbeLease: 2 * time.Second, MaxScopes: 7}},
		{`{"maxOpenFor": "1s", "openFor": "2s", "stalls": 9, "failures": 2}`, &breaker.Circuit{Failures: 2, Stalls: 9, OpenFor: 2 * time.Second, MaxOpenFor: time.Second}},
		{`{"trips": ["timeout"]}`, &breaker.Circuit{Trips: onlyTimeouts}},
		{`{"trips": ["Transient"]}`, &breaker.Circuit{Trips: onlyTransients}},
		{`{"trips": ["TIMEOUT", "timeout"]}`, &breaker.Circuit{Trips: onlyTimeouts}},
		{`{"trips": ["timeout", "transient"]}`, &breaker.Circuit{Trips: breaker.Kinds{classify.Transient, classify.Timeout}}},
	}
	for _, tt := range tests {
		got, err := load(`{"breaker": ` + tt.doc + `}`)
		if err != nil {
			t.Errorf("Load(breaker %s) error = %v; want nil", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(breaker.Breaker(tt.want), got.Breaker, policyOpts); diff != "" {
			t.Errorf("Load(breaker %s).Breaker mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// A trips list says which of the outcomes a Circuit asks about count as
// failures: a Timeout outcome (the client's own timeouts) for "timeout", a
// Transient one (a 503, a refused connection) for "transient".
func TestLoadBreakerTripsCountTheKindsNamed(t *testing.T) {
	tests := []struct {
		trips              string
		transient, timeout bool // whether each kind counts
	}{
		{`["timeout"]`, false, true},
		{`["transient"]`, true, false},
		{`["transient", "timeout"]`, true, true},
	}
	for _, tt := range tests {
		got, err := load(`{"breaker": {"trips": ` + tt.trips + `}}`)
		if err != nil {
			t.Fatalf("Load(breaker trips %s) error = %v; want nil", tt.trips, err)
		}
		c := got.Breaker.(*breaker.Circuit)
		for _, o := range tripsAsked {
			want := tt.transient
			if o.Kind == classify.Timeout {
				want = tt.timeout
			}
			if counts := c.Trips == nil || c.Trips.Trips(o); counts != want {
				t.Errorf("Load(breaker trips %s): %v (%s) counts = %t; want %t", tt.trips, o.Kind, o.Reason, counts, want)
			}
		}
	}
}

func TestLoadBreakerErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message of the only error
	}{
		{"NotObject", `{"breaker": true}`, `policy: breaker = true; want a breaker object`},
		{"NegativeFailures", `{"breaker": {"failures": -1}}`, `policy: breaker.failures = -1; want an integer >= 0 (0: the default)`},
		{"FractionalStalls", `{"breaker": {"stalls": 1.5}}`, `policy: breaker.stalls = 1.5; want an integer >= 0 (0: the default)`},
		{"NegativeProbes", `{"breaker": {"probes": -2}}`, `policy: breaker.probes = -2; want an integer >= 0 (0: the default)`},
		{"NegativeScopes", `{"breaker": {"maxScopes": -1}}`, `policy: breaker.maxScopes = -1; want an integer >= 0 (0: the default)`},
		{"NegativeOpenFor", `{"breaker": {"openFor": "-1s"}}`, `policy: breaker.openFor = "-1s"; want a duration string >= 0, such as "1.5s"`},
		{"OpenForAsNumber", `{"breaker": {"openFor": 1.5}}`, `policy: breaker.openFor = 1.5; want a duration string >= 0, such as "1.5s"`},
		{"StallForWithoutUnit", `{"breaker": {"stallFor": "250"}}`, `policy: breaker.stallFor = "250"; want a duration string >= 0, such as "1.5s"`},
		{"NegativeMaxOpenFor", `{"breaker": {"maxOpenFor": "-1m"}}`, `policy: breaker.maxOpenFor = "-1m"; want a duration string >= 0, such as "1.5s"`},
		{"NegativeProbeLease", `{"breaker": {"probeLease": "-30s"}}`, `policy: breaker.probeLease = "-30s"; want a duration string >= 0, such as "1.5s"`},
		{"Misspelt", `{"breaker": {"failure": 3}}`, `policy: breaker.failure: unknown field; did you mean "failures"?`},
		{"GoName", `{"breaker": {"OpenFor": "1s"}}`, `policy: breaker.OpenFor: unknown field; did you mean "openFor"?`},
		{"Unknown", `{"breaker": {"threshold": 3}}`, `policy: breaker.threshold: unknown field; want one of failures, stalls, stallFor, trips, openFor, maxOpenFor, probes, probeLease, maxScopes`},
		{"Hook", `{"breaker": {"onChange": "log"}}`, `policy: breaker.onChange: unknown field; want one of failures, stalls, stallFor, trips, openFor, maxOpenFor, probes, probeLease, maxScopes`},
		{"Repeated", `{"breaker": {"failures": 3, "failures": 4}}`, `policy: breaker.failures: repeated field; want it once`},
		{"TripsEmpty", `{"breaker": {"trips": []}}`, `policy: breaker.trips = []; want a non-empty list of transient, timeout`},
		{"TripsNotList", `{"breaker": {"trips": "timeout"}}`, `policy: breaker.trips = "timeout"; want a non-empty list of transient, timeout`},
		{"TripsMisspelt", `{"breaker": {"trips": ["transient", "timeouts"]}}`, `policy: breaker.trips[1] = "timeouts"; did you mean "timeout"?`},
		{"TripsOtherKind", `{"breaker": {"trips": ["throttle"]}}`, `policy: breaker.trips[0] = "throttle"; want transient or timeout`},
		{"TripsNotString", `{"breaker": {"trips": [503]}}`, `policy: breaker.trips[0] = 503; want transient or timeout`},
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

func TestMarshalJSONWritesBreaker(t *testing.T) {
	tests := []struct {
		c    *breaker.Circuit
		want string
	}{
		{&breaker.Circuit{}, `{"breaker":{}}`},
		{&breaker.Circuit{Failures: 3, Stalls: 1, StallFor: 100 * time.Millisecond, OpenFor: 5 * time.Second, MaxOpenFor: time.Minute, Probes: 2, ProbeLease: 2 * time.Second, MaxScopes: 7},
			`{"breaker":{"failures":3,"stalls":1,"stallFor":"100ms","openFor":"5s","maxOpenFor":"1m0s","probes":2,"probeLease":"2s","maxScopes":7}}`},
	}
	for _, tt := range tests {
		b, err := policy.Policy{Breaker: tt.c}.MarshalJSON()
		if err != nil || string(b) != tt.want {
			t.Errorf("MarshalJSON(Breaker %+v) = %s, %v; want %s, nil", tt.c, b, err, tt.want)
		}
	}
}

// A Trips that Load made of a trips list is written back as that list, and
// Load makes the same Trips of it again.
func TestMarshalJSONWritesTripsBack(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{`{"breaker": {"trips": ["TIMEOUT"]}}`, `{"breaker":{"trips":["timeout"]}}`},
		{`{"breaker": {"trips": ["transient"]}}`, `{"breaker":{"trips":["transient"]}}`},
		{`{"breaker": {"trips": ["timeout", "transient"], "failures": 2}}`, `{"breaker":{"failures":2,"trips":["transient","timeout"]}}`},
	} {
		p, err := load(tt.doc)
		if err != nil {
			t.Fatalf("Load(%s) error = %v; want nil", tt.doc, err)
		}
		b, err := p.MarshalJSON()
		if err != nil || string(b) != tt.want {
			t.Errorf("MarshalJSON(Load(%s)) = %s, %v; want %s, nil", tt.doc, b, err, tt.want)
			continue
		}
		if diff := cmp.Diff(p, roundTrip(t, p), policyOpts); diff != "" {
			t.Errorf("Load(MarshalJSON(Load(%s))) mismatch (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// A negative count or duration, which the Circuit reads as its default, is
// written as zero, which Load reads as the default too, where it refuses a
// negative value.
func TestMarshalJSONWritesBreakerNegativesInLoadsRange(t *testing.T) {
	p := policy.Policy{Breaker: &breaker.Circuit{Failures: -1, Stalls: math.MinInt, StallFor: -1, OpenFor: -time.Second,
		MaxOpenFor: -time.Hour, Probes: -3, ProbeLease: -1, MaxScopes: -10}}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v; want nil", p.Breaker, err)
	}
	data, err := json.Marshal(p)
	if err != nil || string(data) != `{"breaker":{}}` {
		t.Fatalf("Marshal(%+v) = %s, %v; want {\"breaker\":{}}, nil", p.Breaker, data, err)
	}
	if _, err := policy.Load(bytes.NewReader(data)); err != nil {
		t.Errorf("Load(%s) error = %v; want nil", data, err)
	}
}

func TestMarshalJSONRejectsBreakerJSONCannotHold(t *testing.T) {
	tests := []struct {
		name string
		b    breaker.Breaker
		want string
	}{
		{"Trips", &breaker.Circuit{Trips: breaker.TripFunc(func(o classify.Outcome) bool { return o.Kind == classify.Timeout })}, "policy: cannot write breaker.trips as JSON: it is not a breaker.Kinds of transient and timeout; only those have a JSON form"},
		{"Now", &breaker.Circuit{Now: time.Now}, "policy: cannot write breaker.now as JSON: it is a func"},
		{"Rand", &breaker.Circuit{Failures: 2, Rand: func() float64 { return 0.5 }}, "policy: cannot write breaker.rand as JSON: it is a func"},
		{"OnChange", &breaker.Circuit{OnChange: func(string, breaker.Phase, breaker.State) {}}, "policy: cannot write breaker.onChange as JSON: it is a func"},
		{"OtherBreaker", otherBreaker{}, "policy: cannot write breaker as JSON: it is a policy_test.otherBreaker; only a *breaker.Circuit has a JSON form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := policy.Policy{Breaker: tt.b}.MarshalJSON()
			if err == nil || err.Error() != tt.want || b != nil {
				t.Errorf("MarshalJSON() = %s, %v; want nil, %s", b, err, tt.want)
			}
		})
	}
}

// otherBreaker stands for a breaker kept in a store.
type otherBreaker struct{}

func (otherBreaker) Allow(string) (breaker.Pass, error) { return breaker.Pass{}, nil }
