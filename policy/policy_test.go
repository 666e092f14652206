package policy_test

import (
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// ignoreClassify compares Policies without their Classify func, which cmp
// cannot compare; sameAsStandard checks it by behaviour.
var ignoreClassify = cmpopts.IgnoreFields(policy.Policy{}, "Classify")

// defaults is the zero Policy with every documented default filled in.
var defaults = policy.Policy{
	MaxAttempts:   3,
	Backoff:       backoff.FullJitter{},
	MaxDelay:      20 * time.Second,
	MaxBodyBuffer: 1 << 20,
	MaxDrain:      64 << 10,
	ServerDelay:   policy.ServerDelay{Headers: retryafter.DefaultSources},
	ReadTimeout:   time.Second,
}

// sameAsStandard reports the first attempt that fn classifies differently
// from classify.Default, or "" if there is none.
func sameAsStandard(t *testing.T, fn classify.Func) string {
	t.Helper()
	if fn == nil {
		return "Classify is nil"
	}
	req, err := http.NewRequest("GET", "https://example.com/", nil)
	if err != nil {
		t.Fatalf("http.NewRequest failed: %v", err)
	}
	resp := func(status int, body string) *http.Response {
		return &http.Response{StatusCode: status, Header: make(http.Header), Body: io.NopCloser(strings.NewReader(body))}
	}
	attempts := []struct {
		name string
		resp func() *http.Response
		err  error
	}{
		{"200", func() *http.Response { return resp(200, "") }, nil},
		{"404", func() *http.Response { return resp(404, "") }, nil},
		{"429", func() *http.Response { return resp(429, "") }, nil},
		{"503 SlowDown", func() *http.Response { return resp(503, `<Error><Code>SlowDown</Code></Error>`) }, nil},
		{"400 Throttling", func() *http.Response { return resp(400, `{"__type":"Throttling"}`) }, nil},
		{"dial refused", func() *http.Response { return nil }, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		{"EOF", func() *http.Response { return nil }, io.EOF},
	}
	for _, a := range attempts {
		got, want := fn(req, a.resp(), a.err), classify.Default(req, a.resp(), a.err)
		if got != want {
			return a.name + ": got " + got.Kind.String() + " " + got.Reason + "; want " + want.Kind.String() + " " + want.Reason
		}
	}
	return ""
}

func TestDefaultConstants(t *testing.T) {
	got := []any{policy.DefaultMaxAttempts, policy.DefaultMaxDelay, policy.DefaultMaxBodyBuffer, policy.DefaultMaxDrain}
	want := []any{3, 20 * time.Second, 1 << 20, 64 << 10}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DefaultMaxAttempts, DefaultMaxDelay, DefaultMaxBodyBuffer, DefaultMaxDrain mismatch (-want +got):\n%s", diff)
	}
}

func TestZeroPolicyWithDefaultsIsDocumentedDefaults(t *testing.T) {
	got := policy.Policy{}.WithDefaults()
	if diff := cmp.Diff(defaults, got, ignoreClassify); diff != "" {
		t.Errorf("Policy{}.WithDefaults() mismatch (-want +got):\n%s", diff)
	}
	if d := sameAsStandard(t, got.Classify); d != "" {
		t.Errorf("Policy{}.WithDefaults().Classify is not classify.Default: %s", d)
	}
}

func TestWithDefaultsNormalisesNegatives(t *testing.T) {
	for _, p := range []policy.Policy{
		{MaxAttempts: -1, MaxDelay: -time.Nanosecond, MaxBodyBuffer: -1, MaxDrain: -1, ReadTimeout: -1},
		{MaxAttempts: math.MinInt, MaxDelay: math.MinInt64, MaxBodyBuffer: math.MinInt64, MaxDrain: math.MinInt64, ReadTimeout: math.MinInt64},
	} {
		got := p.WithDefaults()
		if diff := cmp.Diff(defaults, got, ignoreClassify); diff != "" {
			t.Errorf("%+v.WithDefaults() mismatch (-want +got):\n%s", p, diff)
		}
	}
}

// TestWithDefaultsNormalisesHedge: the Hedge values Validate rejects are
// given the meaning its field comments state, and a Hedge that would hedge
// nothing becomes nil.
func TestWithDefaultsNormalisesHedge(t *testing.T) {
	below1 := math.Nextafter(1, 0)
	for _, tt := range []struct{ in, want *policy.Hedge }{
		{nil, nil},
		{&policy.Hedge{}, nil},
		{&policy.Hedge{Delay: -time.Second, MinDelay: -1, Quantile: -0.5, MaxHedges: -1}, nil},
		{&policy.Hedge{Quantile: math.NaN(), MaxHedges: math.MinInt}, nil},
		{&policy.Hedge{Delay: time.Second, Quantile: math.NaN(), MinDelay: -1, MaxHedges: math.MinInt}, &policy.Hedge{Delay: time.Second}},
		{&policy.Hedge{Delay: -time.Second, Quantile: 0.5}, &policy.Hedge{Quantile: 0.5}},
		{&policy.Hedge{Quantile: 1, MaxHedges: policy.HedgeLimit + 1}, &policy.Hedge{Quantile: below1, MaxHedges: policy.HedgeLimit}},
		{&policy.Hedge{Quantile: math.Inf(1), MaxHedges: math.MaxInt}, &policy.Hedge{Quantile: below1, MaxHedges: policy.HedgeLimit}},
		{&policy.Hedge{Delay: time.Second, Quantile: 0.95, MinDelay: time.Millisecond, MaxHedges: 2}, &policy.Hedge{Delay: time.Second, Quantile: 0.95, MinDelay: time.Millisecond, MaxHedges: 2}},
	} {
		got := (policy.Policy{Hedge: tt.in}).WithDefaults().Hedge
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Policy{Hedge: %+v}.WithDefaults().Hedge mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestWithDefaultsKeepsSetFields(t *testing.T) {
	called := false
	custom := func(*http.Request, *http.Response, error) classify.Outcome {
		called = true
		return classify.Outcome{Kind: classify.Fatal}
	}
	q := &quota.Bucket{Capacity: 50}
	bo := backoff.FullJitter{Base: 10 * time.Millisecond, Max: time.Second}
	p := policy.Policy{
		MaxAttempts:        7,
		Backoff:            bo,
		MaxDelay:           5 * time.Second,
		Classify:           custom,
		Quota:              q,
		RetryNonIdempotent: true,
		MaxBodyBuffer:      10,
		MaxDrain:           1,
		ServerDelay:        policy.ServerDelay{Headers: retryafter.RetryAfter, Bound: time.Second},
		Penalty:            &policy.Penalty{Statuses: []int{503}, Delay: time.Second, For: 2 * time.Second},
		Failover:           &policy.Failover{Endpoints: []string{"b.example"}, Mode: policy.SecondaryOnly, Methods: []string{}},
		Hedge:              &policy.Hedge{Delay: time.Second, Quantile: 0.9, MinDelay: time.Millisecond, MaxHedges: 2},
		AttemptTimeout:     time.Second,
		MaxTotalTime:       time.Minute,
		ReadTimeout:        time.Millisecond,
	}
	got := p.WithDefaults()
	want := p
	if diff := cmp.Diff(want, got, ignoreClassify, cmp.Comparer(func(a, b *quota.Bucket) bool { return a == b })); diff != "" {
		t.Errorf("WithDefaults() of a fully set Policy mismatch (-want +got):\n%s", diff)
	}
	got.Classify(nil, nil, nil)
	if !called {
		t.Errorf("WithDefaults() replaced a set Classify; want it kept")
	}
}

func TestWithDefaultsKeepsQuotaNil(t *testing.T) {
	for _, p := range []policy.Policy{{}, policy.Standard(), policy.Adaptive(), policy.None()} {
		if got := p.WithDefaults().Quota; got != nil {
			t.Errorf("%+v.WithDefaults().Quota = %p; want nil, for the transport to create", p, got)
		}
	}
}

func TestStandardIsAWSStandardMode(t *testing.T) {
	p := policy.Standard()
	if p.MaxAttempts != 3 {
		t.Errorf("Standard().MaxAttempts = %d; want 3", p.MaxAttempts)
	}
	if _, ok := p.Backoff.(backoff.FullJitter); !ok {
		t.Errorf("Standard().Backoff = %#v; want a backoff.FullJitter", p.Backoff)
	}
	if p.Quota != nil || p.Limiter != nil || p.RetryNonIdempotent {
		t.Errorf("Standard() = {Quota: %v, Limiter: %v, RetryNonIdempotent: %t}; want {nil, nil, false}", p.Quota, p.Limiter, p.RetryNonIdempotent)
	}
	got := p.WithDefaults()
	if diff := cmp.Diff(defaults, got, ignoreClassify); diff != "" {
		t.Errorf("Standard().WithDefaults() mismatch (-want +got):\n%s", diff)
	}
	if d := sameAsStandard(t, got.Classify); d != "" {
		t.Errorf("Standard().WithDefaults().Classify is not classify.Default: %s", d)
	}
}

// Adaptive is Standard with a new *ratelimit.Adaptive of default
// parameters in Limiter, a different one on every call.
func TestAdaptiveIsStandardPlusLimiter(t *testing.T) {
	got, want := policy.Adaptive().WithDefaults(), policy.Standard().WithDefaults()
	a, ok := got.Limiter.(*ratelimit.Adaptive)
	if !ok || a == nil {
		t.Fatalf("Adaptive().Limiter = %#v; want a *ratelimit.Adaptive", got.Limiter)
	}
	if diff := cmp.Diff(&ratelimit.Adaptive{}, a, cmpopts.IgnoreUnexported(ratelimit.Adaptive{})); diff != "" {
		t.Errorf("Adaptive().Limiter mismatch with the default parameters (-want +got):\n%s", diff)
	}
	if other := policy.Adaptive().Limiter; other == got.Limiter {
		t.Errorf("Adaptive().Limiter = %p twice; want a new limiter on every call", a)
	}
	want.Limiter = got.Limiter
	if diff := cmp.Diff(want, got, ignoreClassify, cmp.Comparer(func(a, b *ratelimit.Adaptive) bool { return a == b })); diff != "" {
		t.Errorf("Adaptive().WithDefaults() mismatch with Standard() (-want +got):\n%s", diff)
	}
	if d := sameAsStandard(t, got.Classify); d != "" {
		t.Errorf("Adaptive().WithDefaults().Classify is not classify.Default: %s", d)
	}
}

func TestNoneMakesOneAttempt(t *testing.T) {
	for _, p := range []policy.Policy{policy.None(), policy.None().WithDefaults()} {
		if p.MaxAttempts != 1 {
			t.Errorf("None().MaxAttempts = %d; want 1", p.MaxAttempts)
		}
	}
}

func TestStandardReturnsFreshValues(t *testing.T) {
	a, b := policy.Standard(), policy.Standard()
	if a.Quota != nil || b.Quota != nil {
		t.Fatalf("Standard().Quota = %p, %p; want nil, so that no two transports share a quota", a.Quota, b.Quota)
	}
	a.MaxAttempts = 9
	a.Quota = &quota.Bucket{}
	if c := policy.Standard(); c.MaxAttempts != 3 || c.Quota != nil {
		t.Errorf("Standard() after changing an earlier result = {MaxAttempts: %d, Quota: %p}; want {3, nil}", c.MaxAttempts, c.Quota)
	}
}

// TestWithDefaultsNeverChangesTheCallersValues: the Hedge, Penalty and
// Failover that WithDefaults returns are new values, their lists too, and
// the ones p points to keep their out-of-range values.
func TestWithDefaultsNeverChangesTheCallersValues(t *testing.T) {
	hedge := &policy.Hedge{Delay: time.Second, Quantile: 2, MinDelay: -1, MaxHedges: 99}
	penalty := &policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503}, Delay: time.Second, For: -time.Second}
	failover := &policy.Failover{Endpoints: []string{"b.example.com"}, Mode: policy.LocationMode(9), Methods: []string{"GET"}}
	p := policy.Policy{Hedge: hedge, Penalty: penalty, Failover: failover}
	before := policy.Policy{
		Hedge:    &policy.Hedge{Delay: time.Second, Quantile: 2, MinDelay: -1, MaxHedges: 99},
		Penalty:  &policy.Penalty{Codes: []string{"ServerBusy"}, Statuses: []int{503}, Delay: time.Second, For: -time.Second},
		Failover: &policy.Failover{Endpoints: []string{"b.example.com"}, Mode: policy.LocationMode(9), Methods: []string{"GET"}},
	}

	got := p.WithDefaults()
	if got.Hedge == hedge || got.Penalty == penalty || got.Failover == failover {
		t.Fatalf("WithDefaults() = Hedge %p, Penalty %p, Failover %p; want none of the caller's %p, %p, %p", got.Hedge, got.Penalty, got.Failover, hedge, penalty, failover)
	}
	if got.Hedge.MaxHedges != policy.HedgeLimit || got.Penalty.For != 0 {
		t.Errorf("WithDefaults() = Hedge.MaxHedges %d, Penalty.For %v; want them normalised to %d, 0", got.Hedge.MaxHedges, got.Penalty.For, policy.HedgeLimit)
	}
	// Writing through the result's lists must not reach the caller's.
	got.Penalty.Codes[0], got.Penalty.Statuses[0] = "x", 1
	got.Failover.Endpoints[0], got.Failover.Methods[0] = "x", "x"
	if diff := cmp.Diff(before, p, cmpopts.IgnoreFields(policy.Policy{}, "Classify")); diff != "" {
		t.Errorf("WithDefaults() changed the caller's values (-before +after):\n%s", diff)
	}
}

// TestWithDefaultsKeepsNilAndEmptyMethods: a Failover's nil Methods, GET
// and HEAD, and its empty Methods, none, stay apart.
func TestWithDefaultsKeepsNilAndEmptyMethods(t *testing.T) {
	for _, methods := range [][]string{nil, {}} {
		p := policy.Policy{Failover: &policy.Failover{Endpoints: []string{"b"}, Methods: methods}}
		got := p.WithDefaults().Failover.Methods
		if (got == nil) != (methods == nil) || len(got) != 0 {
			t.Errorf("Policy{Failover: {Methods: %#v}}.WithDefaults().Failover.Methods = %#v; want %#v", methods, got, methods)
		}
	}
}

// TestWithDefaultsDropsFailoverWithoutEndpoints: a Failover without
// Endpoints fails nothing over; the transport treats it as nil.
func TestWithDefaultsDropsFailoverWithoutEndpoints(t *testing.T) {
	for _, f := range []*policy.Failover{nil, {}, {Endpoints: []string{}}, {Mode: policy.SecondaryOnly, Methods: []string{"PUT"}}} {
		if got := (policy.Policy{Failover: f}).WithDefaults().Failover; got != nil {
			t.Errorf("Policy{Failover: %+v}.WithDefaults().Failover = %+v; want nil", f, got)
		}
	}
}
