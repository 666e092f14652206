package ratelimit_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// Instants in this file are offsets from t0. The pace of a quota of R
// left, resetting after T, for a client alone is (R - 0.5)/T per second.
// A quota comes with a success unless a test says otherwise: a response
// not throttled, which leaves the CUBIC bucket off.

// at returns the instant d after t0.
func at(d time.Duration) time.Time { return t0.Add(d) }

// reserveWait reserves in scope "q" at d and returns the wait.
func reserveWait(t *testing.T, a *ratelimit.Adaptive, d time.Duration) time.Duration {
	t.Helper()
	_, w, ok := a.ReserveAt(at(d), "q")
	if !ok {
		t.Fatalf("ReserveAt(%v) refused", d)
	}
	return w
}

func TestRecordQuotaPacesRemainingOverReset(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 10, 10*time.Second)
	// 9.5 sends per 10 s: the first goes at once, each next 1/0.95 s later.
	step := secs(1 / 0.95)
	for i, want := range []time.Duration{0, step, 2 * step} {
		if w := reserveWait(t, a, 0); !near(w, want) {
			t.Errorf("reservation %d: wait %v; want %v", i+1, w, want)
		}
	}
	st := a.StateAt(at(0), "q")
	if st.QuotaRemaining != 10 || math.Abs(st.QuotaRate-0.95) > 1e-9 || !st.QuotaReset.Equal(at(10*time.Second)) {
		t.Errorf("StateAt = remaining %d, rate %v, reset %v; want 10, 0.95, t0+10s", st.QuotaRemaining, st.QuotaRate, st.QuotaReset.Sub(t0))
	}
	if st.Enabled {
		t.Error("StateAt: Enabled; want the CUBIC bucket still off: no throttle was recorded")
	}
}

func TestRecordQuotaExhaustedWaitsForReset(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 5*time.Second)
	if w := reserveWait(t, a, time.Second); !near(w, 4*time.Second) {
		t.Errorf("wait 1 s after a quota of 0 resetting at 5 s: %v; want 4s", w)
	}
	// From the reset on nothing is paced until the next window's quota.
	for range 3 {
		if w := reserveWait(t, a, 5*time.Second); w != 0 {
			t.Errorf("wait at the reset: %v; want 0", w)
		}
	}
	if st := a.StateAt(at(5*time.Second), "q"); st.QuotaRate != 0 || !st.QuotaReset.IsZero() {
		t.Errorf("StateAt at the reset = rate %v, reset %v; want zero", st.QuotaRate, st.QuotaReset)
	}
}

func TestRecordQuotaWaitMovesWithTheNextAnswer(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 10*time.Second)
	r, w, _ := a.ReserveAt(at(0), "q")
	if !near(w, 10*time.Second) {
		t.Fatalf("wait %v; want 10s", w)
	}
	// The next answer of the window (another server's, say) has quota
	// left: the waiting reservation is due at the new pace, 99.5 in 9 s.
	a.RecordQuotaAt(at(time.Second), "q", classify.Success, 100, 9*time.Second)
	if d, want := a.DelayAt(at(time.Second), r), secs(9/99.5); !near(d, want) {
		t.Errorf("DelayAt after a quota of 100 = %v; want %v", d, want)
	}
}

func TestRecordQuotaNeverHoldsPastTheReset(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 2, 3*time.Second)
	// Far more reservations than the quota: none waits past the reset.
	for i := range 10 {
		if w := reserveWait(t, a, 0); w > 3*time.Second {
			t.Errorf("reservation %d waits %v; want at most the 3s to the reset", i+1, w)
		}
	}
}

func TestRecordQuotaDoesNotHoldLongerThan20s(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, time.Hour)
	if w := reserveWait(t, a, 0); w != 0 {
		t.Errorf("wait for a quota of 0 resetting in an hour: %v; want 0: the server answers instead", w)
	}
	a = &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 20*time.Second)
	if w := reserveWait(t, a, 0); !near(w, 20*time.Second) {
		t.Errorf("wait for a quota of 0 resetting in 20 s: %v; want 20s", w)
	}
}

func TestRecordQuotaIgnoresAResetThatHasCome(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 0)
	if w := reserveWait(t, a, 0); w != 0 {
		t.Errorf("wait after a quota of 0 resetting now: %v; want 0", w)
	}
}

func TestRecordQuotaIgnoresAnAnswerOfTheWindowBefore(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(10*time.Second), "q", classify.Success, 600, 10*time.Second) // the new window, to 20 s
	// A request of the old window answered late: 0 left, its reset 8 s
	// before the one known.
	a.RecordQuotaAt(at(10*time.Second), "q", classify.Success, 0, 2*time.Second)
	if st := a.StateAt(at(10*time.Second), "q"); st.QuotaRemaining != 600 || !st.QuotaReset.Equal(at(20*time.Second)) {
		t.Errorf("StateAt = remaining %d, reset t0+%v; want 600, t0+20s", st.QuotaRemaining, st.QuotaReset.Sub(t0))
	}
}

func TestRecordQuotaKeepsTheEarlierResetOfAWindow(t *testing.T) {
	a := &ratelimit.Adaptive{}
	// Whole seconds rounded up: 10 at 0 s and 10 at 0.6 s name one reset.
	a.RecordQuotaAt(at(0), "q", classify.Success, 100, 10*time.Second)
	a.RecordQuotaAt(at(600*time.Millisecond), "q", classify.Success, 90, 10*time.Second)
	if st := a.StateAt(at(time.Second), "q"); st.QuotaRemaining != 90 || !st.QuotaReset.Equal(at(10*time.Second)) {
		t.Errorf("StateAt = remaining %d, reset t0+%v; want 90, t0+10s", st.QuotaRemaining, st.QuotaReset.Sub(t0))
	}
	// More remaining is another window, or another counter: it replaces it.
	a.RecordQuotaAt(at(time.Second), "q", classify.Success, 500, 10*time.Second)
	if st := a.StateAt(at(time.Second), "q"); st.QuotaRemaining != 500 || !st.QuotaReset.Equal(at(11*time.Second)) {
		t.Errorf("StateAt = remaining %d, reset t0+%v; want 500, t0+11s", st.QuotaRemaining, st.QuotaReset.Sub(t0))
	}
}

// TestRecordQuotaMeasuresTheShare has the counter fall by 4 for each of
// the client's own answers, as when 4 clients spend it alike: the pace
// becomes what is left over the time to the reset, divided by 4 to the
// power 0.9 (a little more than a quarter, which evens out the shares of
// clients that start unequal).
func TestRecordQuotaMeasuresTheShare(t *testing.T) {
	a := &ratelimit.Adaptive{}
	remaining := int64(1000)
	for i := range 40 {
		a.RecordQuotaAt(at(time.Duration(i)*10*time.Millisecond), "q", classify.Success, remaining, 10*time.Second)
		remaining -= 4
	}
	st := a.StateAt(at(390*time.Millisecond), "q")
	want := (float64(st.QuotaRemaining) - 0.5*4) / (math.Pow(4, 0.9) * 9.61) // as of the last answer, 9.61 s before the reset
	if math.Abs(st.QuotaRate-want) > 0.01*want {
		t.Errorf("QuotaRate = %v; want %v, a share of 4", st.QuotaRate, want)
	}
}

func TestRecordQuotaWaitsTheLongerOfTheTwo(t *testing.T) {
	a := &ratelimit.Adaptive{}
	// A throttle at a measured rate of 10/s enables the CUBIC bucket, which
	// starts empty at 7 req/s: a wait of 1/7 s.
	for i := range 5 {
		a.RecordAt(at(time.Duration(i)*100*time.Millisecond), "q", classify.Success)
	}
	a.RecordAt(at(500*time.Millisecond), "q", classify.Throttle)
	cubic := reserveWait(t, a, 500*time.Millisecond)
	if cubic == 0 {
		t.Fatal("no CUBIC wait after a throttle")
	}
	a.RecordQuotaAt(at(500*time.Millisecond), "q", classify.Success, 0, 3*time.Second)
	if w := reserveWait(t, a, 500*time.Millisecond); w < 3*time.Second-time.Microsecond {
		t.Errorf("wait with a quota of 0 for 3 s and the CUBIC bucket's %v: %v; want 3s", cubic, w)
	}
}

func TestRecordQuotaInReferenceModeRecordsOnlyTheOutcome(t *testing.T) {
	a := &ratelimit.Adaptive{Reference: true}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 10*time.Second)
	if w := reserveWait(t, a, 0); w != 0 {
		t.Errorf("reference mode: wait %v after a quota of 0; want 0, the SDKs' algorithm", w)
	}
	if st := a.StateAt(at(0), "q"); st.QuotaRate != 0 || !st.QuotaReset.IsZero() {
		t.Errorf("reference mode: StateAt = %+v; want no quota", st)
	}
	// The outcome is recorded all the same: a throttle enables the bucket.
	a.RecordQuotaAt(at(time.Second), "q", classify.Throttle, 0, 10*time.Second)
	if st := a.StateAt(at(time.Second), "q"); !st.Enabled || st.QuotaRate != 0 || !st.QuotaReset.IsZero() {
		t.Errorf("reference mode: StateAt after a throttle with a quota = %+v; want enabled, no quota", st)
	}
}

// TestRecordQuotaRecordsTheOutcome checks that RecordQuotaAt records the
// attempt's outcome as RecordAt does, before the quota: the same answers
// leave the same CUBIC state, through one call or the other, and the
// quota besides.
func TestRecordQuotaRecordsTheOutcome(t *testing.T) {
	plain, quoted := &ratelimit.Adaptive{}, &ratelimit.Adaptive{}
	for i, k := range []classify.Kind{classify.Success, classify.Success, classify.Success, classify.Success, classify.Throttle, classify.Success} {
		now := at(time.Duration(i) * 100 * time.Millisecond)
		plain.ReserveAt(now, "q")
		quoted.ReserveAt(now, "q")
		plain.RecordAt(now, "q", k)
		quoted.RecordQuotaAt(now, "q", k, 1000, 10*time.Second)
	}
	want := plain.StateAt(at(time.Second), "q")
	got := quoted.StateAt(at(time.Second), "q")
	if got.QuotaRemaining != 1000 || !got.QuotaReset.Equal(at(10*time.Second)) {
		t.Errorf("StateAt after RecordQuotaAt(1000 left, reset 10s) = remaining %d, reset t0+%v; want 1000, t0+10s",
			got.QuotaRemaining, got.QuotaReset.Sub(t0))
	}
	got.QuotaRemaining, got.QuotaRate, got.QuotaReset = 0, 0, time.Time{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StateAt after RecordQuotaAt, quota aside, differs from after RecordAt (-RecordAt +RecordQuotaAt):\n%s", diff)
	}
	if !got.Enabled || got.Outstanding != 0 {
		t.Errorf("StateAt after RecordQuotaAt of a throttle = %+v; want enabled, nothing outstanding", got)
	}
}

func TestRecordQuotaRefusesWithFailFast(t *testing.T) {
	a := &ratelimit.Adaptive{FailFast: true}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 10*time.Second)
	if _, w, ok := a.ReserveAt(at(0), "q"); ok || !near(w, 10*time.Second) {
		t.Errorf("ReserveAt with FailFast = %v, %t; want 10s, false", w, ok)
	}
}

func TestRecordQuotaCancelGivesThePlaceBack(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 2, 2*time.Second) // 0.75 per second
	reserveWait(t, a, 0)                                            // the one saved up
	r2, w2, _ := a.ReserveAt(at(0), "q")
	_, w3, _ := a.ReserveAt(at(0), "q")
	a.CancelAt(at(0), r2)
	if w4 := reserveWait(t, a, 0); !near(w4, w3) {
		t.Errorf("after cancelling the second of three waiting reservations (waits %v, %v), a new one waits %v; want %v, the third's", w2, w3, w4, w3)
	}
}

func TestRecordQuotaCancelInTheMiddleKeepsTheTurnsAhead(t *testing.T) {
	a := &ratelimit.Adaptive{}
	a.RecordQuotaAt(at(0), "q", classify.Success, 5, 5*time.Second) // 0.9 per second
	reserveWait(t, a, 0)                                            // the one saved up
	r1, w1, _ := a.ReserveAt(at(0), "q")
	r2, _, _ := a.ReserveAt(at(0), "q")
	r3, w3, _ := a.ReserveAt(at(0), "q")
	a.CancelAt(at(0), r2)
	if d := a.DelayAt(at(0), r1); !near(d, w1) {
		t.Errorf("DelayAt of the reservation ahead of one given back = %v; want %v, unchanged", d, w1)
	}
	if d := a.DelayAt(at(0), r3); !near(d, w3-(w3-w1)/2) {
		t.Errorf("DelayAt of the reservation behind one given back = %v; want %v, one turn earlier", d, w3-(w3-w1)/2)
	}
}

func TestRecordQuotaEvictedScopeStartsOver(t *testing.T) {
	a := &ratelimit.Adaptive{MaxScopes: 1}
	a.RecordQuotaAt(at(0), "q", classify.Success, 0, 10*time.Second)
	a.RecordAt(at(0), "other", classify.Success) // evicts q
	if w := reserveWait(t, a, 0); w != 0 {
		t.Errorf("wait in an evicted scope: %v; want 0 until its next answer", w)
	}
}

func TestRecordQuotaHugeValues(t *testing.T) {
	a := &ratelimit.Adaptive{}
	for _, q := range []struct {
		remaining int64
		reset     time.Duration
	}{
		{math.MaxInt64, math.MaxInt64}, {math.MaxInt64, time.Nanosecond}, {0, math.MaxInt64},
		{-5, time.Second}, {1, -time.Second}, {0, time.Nanosecond},
	} {
		a.RecordQuotaAt(at(0), "q", classify.Success, q.remaining, q.reset)
		for range 3 {
			if w := reserveWait(t, a, 0); w < 0 || w > 20*time.Second {
				t.Errorf("after RecordQuotaAt(%d, %v): wait %v; want within [0, 20s]", q.remaining, q.reset, w)
			}
		}
		a.StateAt(at(0), "q")
	}
}

// TestRecordQuotaThrottleIsNeverIsolated: a scope whose server publishes
// its quota takes a throttle as a misread quota, not as arrivals that
// bunched up, and enables the limiter at the first one, however long it
// sent without one.
func TestRecordQuotaThrottleIsNeverIsolated(t *testing.T) {
	var a ratelimit.Adaptive
	for at := 100 * ms; at <= time.Second; at += 100 * ms {
		a.ReserveAt(t0.Add(at-100*ms), "s")
		a.RecordQuotaAt(t0.Add(at), "s", classify.Success, 100, 10*time.Second) // 10 req/s, one at a time, a quota to spare
	}
	now := t0.Add(time.Second + ms)
	a.ReserveAt(now.Add(-ms), "s")
	a.RecordQuotaAt(now, "s", classify.Throttle, 0, 9*time.Second)
	if !a.StateAt(now, "s").Enabled {
		t.Errorf("after the first throttle of a scope that publishes its quota: not enabled; want the throttle decreasing the rate")
	}
}
