package concurrency_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/concurrency"
)

// The adaptive limit's learning, driven by hand: a client that keeps the
// limit full and ends its attempts with the latencies the test chooses.

// TestAdaptiveNewScopeStartsAtInitial: a scope's first State shows the
// resolved Initial, nothing learned.
func TestAdaptiveNewScopeStartsAtInitial(t *testing.T) {
	tests := []struct {
		name string
		a    *concurrency.Adaptive
		want int
	}{
		{"zero", &concurrency.Adaptive{}, concurrency.DefaultInitial},
		{"set", &concurrency.Adaptive{Initial: 7}, 7},
		{"aboveMax", &concurrency.Adaptive{Initial: 50, Max: 30}, 30},
		{"belowMin", &concurrency.Adaptive{Initial: 2, Min: 5}, 5},
		{"maxBelowMin", &concurrency.Adaptive{Initial: 2, Min: 5, Max: 3}, 5},
		{"negative", &concurrency.Adaptive{Initial: -1, Min: -1, Max: -1}, concurrency.DefaultInitial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.a.Acquire(context.Background(), "api")
			if err != nil {
				t.Fatalf("Acquire = %v; want a place", err)
			}
			want := concurrency.State{Limit: tt.want, InFlight: 1}
			if diff := cmp.Diff(want, tt.a.State("api")); diff != "" {
				t.Errorf("State mismatch (-want +got):\n%s", diff)
			}
			p.Drop()
		})
	}
}

// TestAdaptiveLimitRisesWhileLatencyStaysAtNoLoad: a client that fills
// the limit and always sees 10 ms makes the limit rise, doubling, to Max,
// and never beyond.
func TestAdaptiveLimitRisesWhileLatencyStaysAtNoLoad(t *testing.T) {
	a := &concurrency.Adaptive{Max: 300}
	c := newClient(t, a, "api")
	seen := []int{a.State("api").Limit}
	for range 5000 {
		c.end(1, 10*time.Millisecond, classify.Success)
		if l := a.State("api").Limit; l != seen[len(seen)-1] {
			seen = append(seen, l)
		}
	}
	// The first round probes at a quarter of the limit, and finds no
	// queue; then the limit doubles each round.
	want := []int{20, 5, 20, 40, 80, 160, 300}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if got := a.State("api").MinLatency; got != 10*time.Millisecond {
		t.Errorf("MinLatency = %v; want 10ms", got)
	}
}

// TestAdaptiveLimitFallsWhenLatencyDoubles: with the no-load latency
// learned at 10 ms and the limit full, a round whose attempts take 20 ms
// shows half of them queued; the limit falls to what the server serves
// without a queue, 20 of 40, plus a queue of its square root.
func TestAdaptiveLimitFallsWhenLatencyDoubles(t *testing.T) {
	a := &concurrency.Adaptive{Max: 40}
	c := newClient(t, a, "api")
	c.end(2000, 10*time.Millisecond, classify.Success)
	if got := a.State("api").Limit; got != 40 {
		t.Fatalf("limit after 10 ms rounds = %d; want 40", got)
	}
	// The round under way ends on a mix of 10 and 20 ms, which is not
	// yet a queue; the next is all 20 ms.
	for n := 0; a.State("api").Limit == 40; n++ {
		if n == 200 {
			t.Fatalf("limit still 40 after %d attempts of 20 ms", n)
		}
		c.end(1, 20*time.Millisecond, classify.Success)
	}
	st := a.State("api")
	if st.Limit != 24 || st.Latency != 20*time.Millisecond || st.MinLatency != 10*time.Millisecond {
		t.Errorf("State after a 20 ms round = limit %d, latency %v, min %v; want 24, 20ms, 10ms", st.Limit, st.Latency, st.MinLatency)
	}
}

// TestAdaptiveNoLoadLatencyFollowsSlowerServer: when every attempt takes
// 20 ms whatever the limit, as when the server's base latency doubled, the
// limit falls twice, a probe at half the limit finds 20 ms too, and the
// no-load latency rises towards 20 ms, halfway at each probe; the limit
// then climbs again.
func TestAdaptiveNoLoadLatencyFollowsSlowerServer(t *testing.T) {
	a := &concurrency.Adaptive{Max: 40}
	c := newClient(t, a, "api")
	c.end(2000, 10*time.Millisecond, classify.Success)
	lowest := a.State("api").Limit
	for range 3000 {
		c.end(1, 20*time.Millisecond, classify.Success)
		lowest = min(lowest, a.State("api").Limit)
	}
	st := a.State("api")
	if st.MinLatency < 18*time.Millisecond || st.MinLatency > 20*time.Millisecond {
		t.Errorf("MinLatency after 3000 attempts of 20 ms = %v; want 18ms to 20ms", st.MinLatency)
	}
	if lowest >= 40 || st.Limit != 40 {
		t.Errorf("limit fell to %d and is %d; want below 40, then 40 again", lowest, st.Limit)
	}
}

// TestAdaptiveLimitStaysWithinMinAndMax: timeouts halve the limit down to
// Min and not below; latencies at no load raise it to Max and not above.
func TestAdaptiveLimitStaysWithinMinAndMax(t *testing.T) {
	a := &concurrency.Adaptive{Min: 3, Max: 32}
	c := newClient(t, a, "api")
	lowest, highest := 1<<30, 0
	track := func() {
		l := a.State("api").Limit
		lowest, highest = min(lowest, l), max(highest, l)
	}
	for range 200 {
		c.end(1, time.Second, classify.Timeout)
		track()
	}
	if lowest != 3 {
		t.Errorf("lowest limit under timeouts = %d; want Min 3", lowest)
	}
	for range 3000 {
		c.end(1, 10*time.Millisecond, classify.Success)
		track()
	}
	if lowest != 3 || highest != 32 || a.State("api").Limit != 32 {
		t.Errorf("limits within [%d, %d], last %d; want [3, 32], last 32", lowest, highest, a.State("api").Limit)
	}
}

// TestAdaptiveTimeoutsLowerLimitOncePerRound: twenty attempts taken
// together that all time out halve the limit once, not twenty times; a
// timeout of an attempt taken after that halves it again.
func TestAdaptiveTimeoutsLowerLimitOncePerRound(t *testing.T) {
	a := &concurrency.Adaptive{}
	c := newClient(t, a, "api")
	c.end(20, time.Second, classify.Timeout)
	if got := a.State("api").Limit; got != 10 {
		t.Fatalf("limit after 20 timeouts of one round = %d; want 10", got)
	}
	c.end(1, time.Second, classify.Timeout)
	if got := a.State("api").Limit; got != 5 {
		t.Errorf("limit after a timeout of the next round = %d; want 5", got)
	}
}

// TestAdaptiveIgnoresThrottlesAndFailures: throttles (the rate limiter's
// business), transient and fatal failures, however slow, neither lower
// nor raise the limit, nor teach a latency.
func TestAdaptiveIgnoresThrottlesAndFailures(t *testing.T) {
	for _, k := range []classify.Kind{classify.Throttle, classify.Transient, classify.Fatal} {
		t.Run(k.String(), func(t *testing.T) {
			a := &concurrency.Adaptive{}
			c := newClient(t, a, "api")
			c.end(500, 5*time.Second, k)
			st := a.State("api")
			if st.Limit != 20 || st.MinLatency != 0 || st.Latency != 0 {
				t.Errorf("State after 500 %v outcomes = limit %d, min %v, latency %v; want 20, 0s, 0s", k, st.Limit, st.MinLatency, st.Latency)
			}
		})
	}
}

// TestAdaptiveLimitNobodyFillsDoesNotGrow: a caller that never has more
// than 5 attempts in flight, all at no-load latency, leaves the limit of
// 20 where it is.
func TestAdaptiveLimitNobodyFillsDoesNotGrow(t *testing.T) {
	a := &concurrency.Adaptive{}
	ctx := context.Background()
	var flight []concurrency.Permit
	for range 2000 {
		for len(flight) < 5 {
			p, err := a.Acquire(ctx, "api")
			if err != nil {
				t.Fatalf("Acquire with %d in flight = %v; want a place", len(flight), err)
			}
			flight = append(flight, p)
		}
		flight[0].Done(10*time.Millisecond, classify.Success)
		flight = flight[1:]
	}
	if st := a.State("api"); st.Limit != 20 || st.MinLatency != 10*time.Millisecond {
		t.Errorf("State = limit %d, min %v; want 20, 10ms", st.Limit, st.MinLatency)
	}
}

// TestAdaptiveScopesLearnApart: one scope's timeouts leave another's
// limit alone.
func TestAdaptiveScopesLearnApart(t *testing.T) {
	a := &concurrency.Adaptive{}
	c := newClient(t, a, "slow")
	newClient(t, a, "fast")
	c.end(20, time.Second, classify.Timeout)
	if s, f := a.State("slow").Limit, a.State("fast").Limit; s != 10 || f != 20 {
		t.Errorf("limits slow, fast = %d, %d; want 10, 20", s, f)
	}
}

// TestAdaptiveStoresAtMostMaxScopes: with MaxScopes 2, using a third
// scope evicts one, which then reads as the zero State.
func TestAdaptiveStoresAtMostMaxScopes(t *testing.T) {
	a := &concurrency.Adaptive{MaxScopes: 2}
	for _, s := range []string{"a", "b", "c"} {
		p, err := a.Acquire(context.Background(), s)
		if err != nil {
			t.Fatalf("Acquire(%q) = %v", s, err)
		}
		p.Done(time.Millisecond, classify.Success)
	}
	stored := 0
	for _, s := range []string{"a", "b", "c"} {
		if a.State(s) != (concurrency.State{}) {
			stored++
		}
	}
	if stored != 2 {
		t.Errorf("scopes stored = %d; want 2", stored)
	}
}

// TestAdaptiveTimesNoAttemptAfterAQuietRound: a round that kept no more
// than √limit attempts in flight cannot move the limit, so the round after
// it times none of its attempts (LearnsLatency is false): a sequential
// caller pays no reading of the clock once its scope's first round, which
// learns the no-load latency, is over. When more attempts are in flight
// again, the round after times them.
func TestAdaptiveTimesNoAttemptAfterAQuietRound(t *testing.T) {
	a := &concurrency.Adaptive{} // limit 20: a round of 20 places, quiet with 4 in flight or fewer
	ctx := context.Background()
	acquire := func() concurrency.Permit {
		t.Helper()
		p, err := a.Acquire(ctx, "api")
		if err != nil {
			t.Fatalf("Acquire = %v; want a place", err)
		}
		return p
	}
	// The first round, one attempt at a time: timed, whatever the load.
	for i := range 20 {
		p := acquire()
		if !p.LearnsLatency() {
			t.Fatalf("attempt %d of the first round: LearnsLatency() = false; want true, the no-load latency is learned from it", i+1)
		}
		p.Done(10*time.Millisecond, classify.Success)
	}
	// The round after it, still one at a time, times nothing; and the
	// quiet rounds after that.
	for i := range 60 {
		p := acquire()
		if p.LearnsLatency() {
			t.Fatalf("sequential attempt %d after the first round: LearnsLatency() = true; want false", i+1)
		}
		p.Done(0, classify.Success)
	}
	// Ten in flight: the round they fall in is not timed, the next is.
	var flight []concurrency.Permit
	timed := 0
	for range 100 {
		for len(flight) < 10 {
			flight = append(flight, acquire())
		}
		if flight[0].LearnsLatency() {
			timed++
		}
		flight[0].Done(10*time.Millisecond, classify.Success)
		flight = flight[1:]
	}
	// Once busy, each round times its cohort, the places handed out as
	// it begins; those taken while its cohort ends fall outside it and are
	// not timed either: about half of all.
	if timed < 100/3 {
		t.Errorf("100 attempts with 10 in flight after quiet rounds: %d timed; want the cohorts of the rounds after the first busy one timed, a third of them at least", timed)
	}
	if st := a.State("api"); st.Limit != 20 || st.MinLatency != 10*time.Millisecond {
		t.Errorf("State = limit %d, min %v; want 20, 10ms: nothing moved the limit", st.Limit, st.MinLatency)
	}
}

// TestAdaptiveTimesOnlyItsRoundsCohort: a place handed out after the
// round's cohort, while the cohort's attempts are still in flight, is not
// timed: its latency would never be learned from.
func TestAdaptiveTimesOnlyItsRoundsCohort(t *testing.T) {
	a := &concurrency.Adaptive{} // limit 20: the first round's cohort is the first 20 places
	ctx := context.Background()
	var flight []concurrency.Permit
	for i := 1; i <= 22; i++ {
		p, err := a.Acquire(ctx, "api")
		if err != nil {
			t.Fatalf("Acquire %d = %v; want a place", i, err)
		}
		if want := i <= 20; p.LearnsLatency() != want {
			t.Errorf("place %d: LearnsLatency() = %t; want %t, the cohort being places 1 to 20", i, p.LearnsLatency(), want)
		}
		flight = append(flight, p)
		if len(flight) == 19 { // keep the round open and a place free
			flight[0].Done(10*time.Millisecond, classify.Success)
			flight = flight[1:]
		}
	}
}
