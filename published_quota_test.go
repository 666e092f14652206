package retrytransport_test

// Published quotas: the transport tells a limiter that paces by them the
// quota every response publishes, in the scope that answered, with the
// attempt's outcome, in one call.

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/retryafter"
)

// quotaHeard is a limiter that never waits and records the quotas it is
// told, with the outcomes. It is neither a ratelimit.Recorder nor a
// ratelimit.Releaser: it hears of an attempt only through RecordQuota.
type quotaHeard struct {
	mu    sync.Mutex
	heard []quotaCall
}

type quotaCall struct {
	Scope     string
	Kind      classify.Kind
	Remaining int64
	Reset     time.Duration
}

func (l *quotaHeard) Reserve(string) (ratelimit.Reservation, time.Duration, bool) {
	return ratelimit.Reservation{}, 0, true
}

func (l *quotaHeard) RecordQuota(scope string, k classify.Kind, remaining int64, reset time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard = append(l.heard, quotaCall{scope, k, remaining, reset})
}

func TestPublishedQuotaIsRecordedOnEveryStatus(t *testing.T) {
	s := &script{steps: []step{
		{status: 429, header: http.Header{"Ratelimit": {`"q";r=0;t=2`}}},
		{status: 200, header: http.Header{"X-Ratelimit-Remaining": {"599"}, "X-Ratelimit-Reset": {"10"}}},
		{status: 200}, // no fields: nothing to record
	}}
	l := &quotaHeard{}
	p := policy.Standard()
	p.Limiter = l
	tr := newRig(t, s, p)
	for range 2 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []quotaCall{{"api.example.com", classify.Throttle, 0, 2 * time.Second}, {"api.example.com", classify.Success, 599, 10 * time.Second}}
	if diff := cmp.Diff(want, l.heard); diff != "" {
		t.Errorf("RecordQuota calls mismatch (-want +got):\n%s", diff)
	}
}

// TestPublishedQuotaIsTheAttemptsRecord: a limiter that learns from
// outcomes hears each attempt once, the one whose response publishes a
// quota through RecordQuota, with its outcome, and not through Record.
func TestPublishedQuotaIsTheAttemptsRecord(t *testing.T) {
	s := &script{steps: []step{
		{status: 429, header: http.Header{"Ratelimit": {`"q";r=0;t=2`}}},
		{status: 200},
	}}
	clock := faketime.NewAt(time.Now())
	lim := newTallyLimiter(clock)
	p := policy.Standard()
	p.Limiter = lim
	tr := newRig(t, s, p, onClock(clock))
	tr.get(t, url)
	lim.waitEnds(t, 2)
	if diff := cmp.Diff([]string{"Record success", "Record throttle"}, lim.sortedEnds()); diff != "" {
		t.Errorf("the limiter heard (-want +got):\n%s", diff)
	}
	lim.mu.Lock()
	quotas := lim.quotas
	lim.mu.Unlock()
	if diff := cmp.Diff([]string{"throttle 0"}, quotas); diff != "" {
		t.Errorf("published quotas recorded (-want +got):\n%s", diff)
	}
}

func TestPublishedQuotaNotReadWhenItsFieldsAreNotTrusted(t *testing.T) {
	s := &script{steps: []step{{status: 200, header: http.Header{
		"Ratelimit":             {`"q";r=5;t=2`},
		"X-Ratelimit-Remaining": {"599"}, "X-Ratelimit-Reset": {"10"},
	}}}}
	for _, tt := range []struct {
		name    string
		headers retryafter.Source
		want    []quotaCall
	}{
		{"none", retryafter.None, nil},
		{"retry_after_only", retryafter.RetryAfter, nil},
		{"x_ratelimit_only", retryafter.RateLimitReset, []quotaCall{{"api.example.com", classify.Success, 599, 10 * time.Second}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &quotaHeard{}
			p := policy.Standard()
			p.Limiter = l
			p.ServerDelay.Headers = tt.headers
			tr := newRig(t, s, p)
			resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(tt.want, l.heard); diff != "" {
				t.Errorf("RecordQuota calls with Headers %v mismatch (-want +got):\n%s", tt.headers, diff)
			}
		})
	}
}

// TestAdaptivePacesByThePublishedQuota: policy.Adaptive() as it comes
// waits for the reset of a quota that a success said was spent, before
// any throttle.
func TestAdaptivePacesByThePublishedQuota(t *testing.T) {
	s := &script{steps: []step{
		{status: 200, header: http.Header{"Ratelimit": {`"q";r=0;t=3`}}},
		{status: 200},
	}}
	tr := newRig(t, s, policy.Adaptive(), adaptiveOnRig())
	for range 2 {
		resp, err := tr.RoundTrip(newReq(t, "GET", url, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var waited time.Duration
	for _, d := range tr.clock.Sleeps() {
		waited += d
	}
	if waited < 3*time.Second-time.Millisecond || waited > 3*time.Second+time.Millisecond {
		t.Errorf("waits = %v (%v in all); want 3s: the second request waits for the reset", tr.clock.Sleeps(), waited)
	}
	if st := tr.scopeStats("api.example.com").Adaptive; st.Enabled {
		t.Errorf("Adaptive state %+v; want the CUBIC bucket off: no throttle", st)
	}
}
