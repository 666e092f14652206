package redisretry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/ratelimit"
	"github.com/retrytransport/retrytransport/redisretry"
)

var (
	_ breaker.Breaker           = (*redisretry.Breaker)(nil)
	_ ratelimit.FallbackCounter = (*redisretry.Breaker)(nil)
)

// Outcomes of attempts, as the transport reports them to a breaker.
var (
	answered  = classify.Outcome{Kind: classify.Success}
	status503 = classify.Outcome{Kind: classify.Transient, Reason: "status 503"}
	timedOut  = classify.Outcome{Kind: classify.Timeout, Reason: "timeout"}
	status429 = classify.Outcome{Kind: classify.Throttle, Reason: "status 429"}

	// fiveXX makes a circuit count 503s, which the tests fail attempts
	// with, as it counts timeouts and refused connections by default.
	fiveXX = breaker.Kinds{classify.Transient, classify.Timeout}
)

// breakerFleet returns n Breakers on srv, each with its own Store and
// client as separate processes have, sharing a key prefix and clock. Each
// Local is local(), or a breaker.Circuit with its defaults when local is
// nil, on the clock and with Rand 0.5 (no jitter) unless it sets one. The
// Stores' Timeout is long, so that no call falls back on a loaded machine.
func breakerFleet(t *testing.T, srv *redisServer, n int, clock *faketime.Clock, local func() *breaker.Circuit) []*redisretry.Breaker {
	t.Helper()
	prefix := uniquePrefix(t)
	bs := make([]*redisretry.Breaker, n)
	for i := range bs {
		s := &redisretry.Store{Client: srv.client(t, nil), Prefix: prefix, Timeout: 5 * time.Second, Now: clock.Now}
		l := &breaker.Circuit{}
		if local != nil {
			l = local()
		}
		l.Now = clock.Now
		if l.Rand == nil {
			l.Rand = func() float64 { return 0.5 }
		}
		if l.Trips == nil {
			l.Trips = fiveXX
		}
		bs[i] = s.Breaker(l)
	}
	return bs
}

// attemptOn lets one attempt of scope through b and settles it with out,
// failing t if b refuses it or hands out a probe.
func attemptOn(t *testing.T, b *redisretry.Breaker, out classify.Outcome) {
	t.Helper()
	p, err := b.Allow(scope)
	if err != nil {
		t.Fatalf("Allow = %v; want a pass", err)
	}
	if p.Probe() {
		t.Fatal("Allow handed out a probe; want a pass of a closed circuit")
	}
	p.Done(out, errOf(out))
}

// errOf returns the error an attempt with outcome out ends with.
func errOf(out classify.Outcome) error {
	if out.Kind == classify.Timeout {
		return context.DeadlineExceeded
	}
	return nil
}

// refusal calls b.Allow and returns its *OpenError, failing t if b lets
// the attempt through or refuses it with another error.
func refusal(t *testing.T, b *redisretry.Breaker) *breaker.OpenError {
	t.Helper()
	p, err := b.Allow(scope)
	if err == nil {
		p.Drop()
		t.Fatalf("Allow let an attempt through (probe %t); want an *OpenError", p.Probe())
	}
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Allow = %v (%T); want an *OpenError matching ErrOpen", err, err)
	}
	return oe
}

// openFleet has bs[0] count breaker.DefaultFailures 503s, which opens the
// fleet's circuit, after every replica has read it once; it returns when
// the open time ends.
func openFleet(t *testing.T, bs []*redisretry.Breaker, clock *faketime.Clock) time.Time {
	t.Helper()
	for _, b := range bs {
		attemptOn(t, b, answered)
	}
	for range breaker.DefaultFailures {
		attemptOn(t, bs[0], status503)
	}
	st := bs[0].State(scope)
	if st.Phase != breaker.Open || !st.Until.Equal(clock.Now().Add(breaker.DefaultOpenFor)) {
		t.Fatalf("State after %d failures = %+v; want open for %v", breaker.DefaultFailures, st, breaker.DefaultOpenFor)
	}
	return st.Until
}

// TestBreakerOpeningIsShared checks that when one replica's failures open
// the circuit, every replica of the fleet refuses from its next read on,
// with the opener's last failure and open time.
func TestBreakerOpeningIsShared(t *testing.T) {
	srv := startRedis(t)
	for _, n := range []int{2, 8} {
		t.Run("Replicas"+itoa(n), func(t *testing.T) {
			clock := faketime.New()
			bs := breakerFleet(t, srv, n, clock, nil)
			until := openFleet(t, bs, clock)
			clock.Advance(redisretry.DefaultBreakerRefresh)
			for i, b := range bs {
				oe := refusal(t, b)
				if !oe.Until.Equal(until) || oe.Last == nil || oe.Last.Error() != "status 503" {
					t.Errorf("replica %d: refusal = %+v; want Until %v, Last \"status 503\"", i, oe, until)
				}
				if st := b.State(scope); st.Phase != breaker.Open || st.Opens != 1 || st.Failures != breaker.DefaultFailures {
					t.Errorf("replica %d: State = %+v; want open, 1 opening, %d failures", i, st, breaker.DefaultFailures)
				}
			}
		})
	}
}

// TestBreakerFailureReadsFleetCircuit checks that a replica whose attempt
// fails reads the fleet's circuit at once, if it last did Refresh ago, and
// refuses from then on: the attempts it had in flight when another replica
// opened the circuit do not each have to fail.
func TestBreakerFailureReadsFleetCircuit(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 2, clock, nil)
	attemptOn(t, bs[1], answered) // reads
	inFlight := make([]breaker.Pass, 3)
	for i := range inFlight {
		p, err := bs[1].Allow(scope)
		if err != nil {
			t.Fatalf("Allow = %v; want a pass", err)
		}
		inFlight[i] = p
	}
	openFleet(t, bs[:1], clock)
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for _, p := range inFlight {
		p.Done(timedOut, context.DeadlineExceeded)
	}
	if st := bs[1].State(scope); st.Phase != breaker.Open {
		t.Errorf("State after a failure, before any Allow = %+v; want the fleet's, open", st)
	}
	oe := refusal(t, bs[1])
	if oe.Last == nil || oe.Last.Error() != "status 503" {
		t.Errorf("refusal after a failure = %v; want the fleet's, with \"status 503\"", oe)
	}
	if st := bs[1].State(scope); st.Opens != 1 || st.Phase != breaker.Open {
		t.Errorf("State = %+v; want the fleet's one opening", st)
	}
}

// TestBreakerRefusalTellsHangFromErrors checks that the fleet's refusals
// unwrap to a failure that matches context.DeadlineExceeded on every
// replica when the failure that opened the circuit was a deadline's, as
// breaker.Circuit's do.
func TestBreakerRefusalTellsHangFromErrors(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 2, clock, nil)
	for _, b := range bs {
		attemptOn(t, b, answered)
	}
	clock.Advance(time.Second) // no success for StallFor: two timeouts open it
	for range breaker.DefaultStalls {
		attemptOn(t, bs[0], timedOut)
	}
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for i, b := range bs {
		if err := refusal(t, b); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("replica %d: refusal %v does not match context.DeadlineExceeded", i, err)
		}
	}
}

// TestBreakerOneProbePerOpenTime checks that once the open time is over,
// one replica of the whole fleet probes: of 8 replicas' Allow calls, made
// at once, exactly one is a probe, and the others are refused until it
// settles. A failed probe opens the circuit again for twice as long, up to
// MaxOpenFor, for every replica, and again one replica probes.
func TestBreakerOneProbePerOpenTime(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 8, clock, nil)
	until := openFleet(t, bs, clock)
	wantOpenFor := []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 12 * time.Second}
	for round, openFor := range wantOpenFor {
		clock.Advance(until.Sub(clock.Now()))
		var probes []breaker.Pass
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 3 { // each replica asks three times, from three goroutines
			for _, b := range bs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := b.Allow(scope)
					if err != nil {
						return
					}
					mu.Lock()
					probes = append(probes, p)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		if len(probes) != 1 || !probes[0].Probe() {
			t.Fatalf("round %d: 24 Allow calls across 8 replicas after the open time let %d attempts through; want 1 probe", round, len(probes))
		}
		clock.Advance(redisretry.DefaultBreakerRefresh)
		for i, b := range bs {
			if oe := refusal(t, b); !oe.Until.IsZero() {
				t.Errorf("round %d: replica %d refusal while the probe is out = %+v; want Until zero (half-open)", round, i, oe)
			}
		}
		probes[0].Done(timedOut, context.DeadlineExceeded)
		until = clock.Now().Add(openFor)
		// The prober knows the new open time from its probe's answer, the
		// others from their next read, Refresh after they last asked.
		clock.Advance(redisretry.DefaultBreakerRefresh)
		for i, b := range bs {
			if oe := refusal(t, b); !oe.Until.Equal(until) {
				t.Errorf("round %d: replica %d refusal after the failed probe = %+v; want Until %v", round, i, oe, until)
			}
			if st := b.State(scope); st.Phase != breaker.Open || st.OpenFor != openFor || !st.Until.Equal(until) || st.Opens != uint64(round+2) {
				t.Errorf("round %d: replica %d State after a failed probe = %+v; want open for %v until %v, %d openings", round, i, st, openFor, until, round+2)
			}
		}
	}
}

// probeRound advances the clock to until and has every replica of bs ask
// once: it fails t unless exactly one gets a probe, which it returns.
func probeRound(t *testing.T, bs []*redisretry.Breaker, clock *faketime.Clock, until time.Time) (breaker.Pass, int) {
	t.Helper()
	clock.Advance(until.Sub(clock.Now()))
	var probe breaker.Pass
	prober := -1
	for i, b := range bs {
		p, err := b.Allow(scope)
		if err != nil {
			continue
		}
		if !p.Probe() || prober >= 0 {
			t.Fatalf("replica %d: Allow after the open time = a pass (probe %t), replica %d probing already; want one probe for the fleet", i, p.Probe(), prober)
		}
		probe, prober = p, i
	}
	if prober < 0 {
		t.Fatal("no replica probed after the open time")
	}
	return probe, prober
}

// TestBreakerProbeSuccessClosesFleet checks that a successful probe closes
// the circuit for every replica within Refresh: the prober at once, the
// others at their first Allow once Refresh has passed since they last
// asked. The opener's own circuit closes with it: one failure right after
// does not open the fleet's circuit again, and Failures more do.
func TestBreakerProbeSuccessClosesFleet(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 8, clock, nil)
	probe, prober := probeRound(t, bs, clock, openFleet(t, bs, clock))
	if prober != 0 {
		t.Fatalf("replica %d probed; want the first to ask, 0, the opener", prober)
	}
	probe.Done(answered, nil)
	attemptOn(t, bs[0], status503)
	clock.Advance(redisretry.DefaultBreakerRefresh - time.Millisecond)
	for _, b := range bs[1:] {
		refusal(t, b) // they asked at the end of the open time
	}
	clock.Advance(time.Millisecond)
	for i, b := range bs {
		p, err := b.Allow(scope)
		if err != nil || p.Probe() {
			t.Fatalf("replica %d: Allow Refresh after the probe succeeded = %v (probe %t); want a pass", i, err, p.Probe())
		}
		p.Done(status503, nil)
		if st := b.State(scope); st.Phase != breaker.Closed || st.Opens != 1 {
			t.Errorf("replica %d: State after the fleet closed and one failure = %+v; want closed, 1 opening", i, st)
		}
	}
	// The opener counted two failures since; Failures - 2 more open the
	// fleet's circuit again.
	for range breaker.DefaultFailures - 2 {
		attemptOn(t, bs[0], status503)
	}
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for i, b := range bs {
		if oe := refusal(t, b); !oe.Until.Equal(clock.Now().Add(breaker.DefaultOpenFor - redisretry.DefaultBreakerRefresh)) {
			t.Errorf("replica %d: refusal after %d failures in a row = %+v; want open again for OpenFor", i, breaker.DefaultFailures, oe)
		}
	}
}

// TestBreakerIgnoresOutcomesFromBeforeAChange checks that the outcomes of
// attempts let through before the fleet's circuit changed phase do not
// count: attempts a replica sent before the circuit opened, which fail
// only after a probe closed it, do not open it again.
func TestBreakerIgnoresOutcomesFromBeforeAChange(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 2, clock, nil)
	attemptOn(t, bs[1], answered)
	var inFlight []breaker.Pass
	for range breaker.DefaultFailures {
		p, err := bs[1].Allow(scope)
		if err != nil {
			t.Fatalf("Allow = %v; want a pass", err)
		}
		inFlight = append(inFlight, p)
	}
	probe, _ := probeRound(t, bs[:1], clock, openFleet(t, bs[:1], clock))
	probe.Done(answered, nil)
	clock.Advance(redisretry.DefaultBreakerRefresh)
	attemptOn(t, bs[1], answered) // reads: closed, in a new generation
	for _, p := range inFlight {
		p.Done(status503, nil)
	}
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for i, b := range bs {
		attemptOn(t, b, answered)
		if st := b.State(scope); st.Phase != breaker.Closed || st.Opens != 1 {
			t.Errorf("replica %d: State after %d failures of attempts sent before the circuit opened = %+v; want closed, 1 opening", i, len(inFlight), st)
		}
	}
}

// TestBreakerProbeLeaseExpires checks that when the replica holding the
// probe lease vanishes without settling its probe, the others keep
// refusing until the lease (Local's ProbeLease) expires, then one of them
// probes; the vanished probe's outcome, should it come after the circuit
// has moved on, is ignored.
func TestBreakerProbeLeaseExpires(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	const lease = 2 * time.Second
	bs := breakerFleet(t, srv, 3, clock, func() *breaker.Circuit { return &breaker.Circuit{ProbeLease: lease} })
	until := openFleet(t, bs, clock)
	vanished, prober := probeRound(t, bs, clock, until)
	others := append(append([]*redisretry.Breaker(nil), bs[:prober]...), bs[prober+1:]...)
	for clock.Now().Before(until.Add(lease - redisretry.DefaultBreakerRefresh)) {
		clock.Advance(redisretry.DefaultBreakerRefresh)
		for _, b := range others {
			refusal(t, b)
		}
	}
	probe, _ := probeRound(t, others, clock, until.Add(lease))
	probe.Done(status503, nil)
	vanished.Done(answered, nil)
	if st := bs[prober].State(scope); st.Phase != breaker.Open || st.Opens != 2 {
		t.Errorf("State after the new probe failed and the vanished one succeeded = %+v; want open, 2 openings", st)
	}
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for i, b := range bs {
		if oe := refusal(t, b); !oe.Until.Equal(until.Add(lease).Add(2 * breaker.DefaultOpenFor)) {
			t.Errorf("replica %d: refusal = %+v; want open for twice OpenFor after the new probe", i, oe)
		}
	}
}

// TestBreakerThrottledProbeFreesLease checks that a probe that ends with a
// Throttle, or is dropped, releases the lease at once, without opening or
// closing the circuit: a replica probes at its next ask, without waiting
// for the lease to expire.
func TestBreakerThrottledProbeFreesLease(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	bs := breakerFleet(t, srv, 2, clock, nil)
	probe, _ := probeRound(t, bs, clock, openFleet(t, bs, clock))
	probe.Done(status429, nil)
	clock.Advance(redisretry.DefaultBreakerRefresh)
	probe, _ = probeRound(t, bs, clock, clock.Now())
	probe.Drop()
	clock.Advance(redisretry.DefaultBreakerRefresh)
	probe, _ = probeRound(t, bs, clock, clock.Now())
	if st := bs[0].State(scope); st.Opens != 1 || st.Phase != breaker.HalfOpen {
		t.Errorf("State after a throttled probe and a dropped one = %+v; want half-open, 1 opening", st)
	}
	probe.Done(answered, nil)
}

// TestBreakerHappyPathMakesNoRoundTrip checks that while the circuit is
// closed, attempts and their successes make no round trip to Redis: a
// replica reads the fleet's circuit once per Refresh while it sends, and
// 1,000 attempts within one Refresh make none. Allow and a successful Done
// allocate nothing.
func TestBreakerHappyPathMakesNoRoundTrip(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	b := breakerFleet(t, srv, 1, clock, nil)[0]
	attemptOn(t, b, answered) // reads, and loads the script
	resetStats(t, adm)
	for range 1000 {
		attemptOn(t, b, answered)
	}
	if n := scriptCalls(t, adm); n != 0 {
		t.Errorf("1,000 successful attempts within Refresh made %d script calls; want 0", n)
	}
	for range 10000 { // 10 s at 1,000 attempts a second
		clock.Advance(time.Millisecond)
		attemptOn(t, b, answered)
	}
	// A busy scope reads the clock for one attempt in a few (8 at 1,000 a
	// second), so each read comes a few milliseconds after Refresh.
	most := int64(10 * time.Second / redisretry.DefaultBreakerRefresh)
	least := int64(10 * time.Second / (redisretry.DefaultBreakerRefresh + 20*time.Millisecond))
	if got := scriptCalls(t, adm); got < least || got > most {
		t.Errorf("10,000 successful attempts over 10 s made %d script calls; want %d to %d, one per Refresh", got, least, most)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow(scope)
		p.Done(answered, nil)
	})
	if allocs != 0 {
		t.Errorf("Allow and a successful Done on a closed circuit: %v allocations; want 0", allocs)
	}
}

// TestBreakerFallsBackToLocalWhenRedisDown checks that when Redis is down
// a replica decides with its Local circuit, counting fallbacks: its own
// failures open it and its refusals are Local's, it probes on its own once
// Local's open time is over, and a success closes it.
func TestBreakerFallsBackToLocalWhenRedisDown(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	s := &redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: 50 * time.Millisecond,
		Backoff: 100 * time.Millisecond, Now: clock.Now}
	b := s.Breaker(&breaker.Circuit{Now: clock.Now, Rand: func() float64 { return 0.5 }, Trips: fiveXX})
	attemptOn(t, b, answered)
	srv.Kill()
	clock.Advance(redisretry.DefaultBreakerRefresh)
	for range breaker.DefaultFailures {
		attemptOn(t, b, status503)
	}
	if n := b.Fallbacks(scope); n == 0 {
		t.Errorf("Fallbacks after the circuit opened with Redis down = 0; want > 0")
	}
	until := clock.Now().Add(breaker.DefaultOpenFor)
	if oe := refusal(t, b); !oe.Until.Equal(until) || oe.Last == nil || oe.Last.Error() != "status 503" {
		t.Errorf("refusal with Redis down = %+v; want Local's, until %v, with \"status 503\"", oe, until)
	}
	if st := b.State(scope); st.Phase != breaker.Open || !st.Until.Equal(until) {
		t.Errorf("State with Redis down = %+v; want Local's, open until %v", st, until)
	}
	clock.Advance(breaker.DefaultOpenFor)
	p, err := b.Allow(scope)
	if err != nil || !p.Probe() {
		t.Fatalf("Allow after Local's open time with Redis down = %v (probe %t); want Local's probe", err, p.Probe())
	}
	refusal(t, b) // one probe at a time
	p.Done(answered, nil)
	attemptOn(t, b, answered)
	if st := b.State(scope); st.Phase != breaker.Closed {
		t.Errorf("State after Local's probe succeeded = %+v; want closed", st)
	}
}

// TestBreakerCallsWithinTimeoutOnStalledRedis checks that on a Redis that
// does not answer no Allow or Done waits longer than the Store's Timeout
// (and slack): the reads after Refresh, the opening of Local's circuit and
// the Allow calls while it is open each wait once at most, when the
// Store's circuit lets them ask, then Local decides.
func TestBreakerCallsWithinTimeoutOnStalledRedis(t *testing.T) {
	srv := startRedis(t)
	adm := srv.client(t, nil)
	clock := faketime.New()
	s := &redisretry.Store{Client: srv.client(t, nil), Prefix: uniquePrefix(t), Timeout: 50 * time.Millisecond,
		Backoff: 100 * time.Millisecond, Now: clock.Now}
	b := s.Breaker(&breaker.Circuit{Now: clock.Now, Rand: func() float64 { return 0.5 }, Trips: fiveXX})
	attemptOn(t, b, answered)
	if err := adm.ClientPause(context.Background(), 2*time.Second).Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	timed := func(what string, f func()) {
		t.Helper()
		start := time.Now()
		f()
		if d, bound := time.Since(start), callBound(s); d > bound {
			t.Errorf("%s on a stalled Redis took %v; want at most %v", what, d, bound)
		}
	}
	for i := range breaker.DefaultFailures + 3 {
		clock.Advance(s.Backoff) // each time, the Store's circuit lets one call ask
		var p breaker.Pass
		var err error
		timed("Allow", func() { p, err = b.Allow(scope) })
		if i < breaker.DefaultFailures {
			if err != nil {
				t.Fatalf("Allow %d on a stalled Redis = %v; want Local's pass", i, err)
			}
			timed("Done of a failure", func() { p.Done(status503, nil) })
		} else if err == nil {
			t.Errorf("Allow %d on a stalled Redis, Local open = a pass; want Local's refusal", i)
		}
	}
	if n := b.Fallbacks(scope); n < breaker.DefaultFailures {
		t.Errorf("Fallbacks on a stalled Redis = %d; want at least %d", n, breaker.DefaultFailures)
	}
}

// TestBreakerFleetUnderConcurrency runs four replicas of four goroutines
// each against a server that fails for 3 s of a shared clock, which the
// goroutines move on, 8 s in all: no two probes are ever out at once, no open time
// sees two probes, and every replica lets attempts through once the server
// has recovered. Run with -race.
func TestBreakerFleetUnderConcurrency(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	t0 := clock.Now()
	bs := breakerFleet(t, srv, 4, clock, func() *breaker.Circuit {
		return &breaker.Circuit{Rand: func() float64 { return 0.5 }, Trips: fiveXX}
	})
	failing := func(at time.Time) bool { d := at.Sub(t0); return d >= time.Second && d < 4*time.Second }
	var (
		out    atomic.Int64 // probes out now, across the fleet
		mu     sync.Mutex
		byGen  = map[uint64]int{} // probes handed out per generation of the fleet's circuit
		probes int
	)
	var wg sync.WaitGroup
	for _, b := range bs {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// 16 goroutines × 2,500 steps of 200 µs: the clock ends 8 s
				// on, however they interleave.
				for range 2500 {
					clock.Advance(200 * time.Microsecond)
					p, err := b.Allow(scope)
					if err != nil {
						continue
					}
					if p.Probe() {
						if n := out.Add(1); n > 1 {
							t.Errorf("%d probes out at once across the fleet; want 1 at most", n)
						}
						mu.Lock()
						byGen[p.Ticket().Gen]++
						probes++
						mu.Unlock()
					}
					o := answered
					if failing(clock.Now()) {
						o = status503
					}
					if p.Probe() {
						out.Add(-1)
					}
					p.Done(o, nil)
				}
			}()
		}
	}
	wg.Wait()
	for gen, n := range byGen {
		if n > 1 {
			t.Errorf("%d probes in generation %d of the fleet's circuit; want 1", n, gen)
		}
	}
	if probes == 0 {
		t.Error("no probe in the run; want the circuit to have opened and probed")
	}
	for i, b := range bs {
		if n := b.Fallbacks(scope); n != 0 {
			t.Errorf("replica %d: Fallbacks = %d; want 0 (every probe the fleet's)", i, n)
		}
	}
	t.Logf("%d probes in %d generations; the fleet's circuit: %+v", probes, len(byGen), bs[0].State(scope))
	// Every replica closes within Refresh of the probe that succeeds.
	deadline := clock.Now().Add(breaker.DefaultOpenFor * 8)
	for i, b := range bs {
		for {
			p, err := b.Allow(scope)
			if err == nil {
				p.Done(answered, nil)
				if !p.Probe() {
					break
				}
				continue
			}
			if clock.Now().After(deadline) {
				t.Fatalf("replica %d still refuses %v after the server recovered: %v", i, clock.Now().Sub(t0), err)
			}
			clock.Advance(10 * time.Millisecond)
		}
	}
}

// TestBreakerWithoutStoreIsLocal checks that a Breaker without a Store is
// its Local circuit, counting fallbacks: it opens after Failures and
// refuses.
func TestBreakerWithoutStoreIsLocal(t *testing.T) {
	b := &redisretry.Breaker{Local: &breaker.Circuit{Trips: fiveXX}}
	for range breaker.DefaultFailures {
		attemptOn(t, b, status503)
	}
	if oe := refusal(t, b); oe.Last == nil || oe.Last.Error() != "status 503" {
		t.Errorf("refusal without a Store = %+v; want Local's, with \"status 503\"", oe)
	}
	if st := b.State(scope); st.Phase != breaker.Open {
		t.Errorf("State without a Store = %+v; want Local's, open", st)
	}
	if n := b.Fallbacks(scope); n == 0 {
		t.Error("Fallbacks without a Store = 0; want > 0")
	}
}

// TestBreakerSuccessResetsFailures checks that failures count in a row, as
// in process: a success between them starts the count again, whichever
// attempt it ends, even on a busy scope whose successes go mostly
// unnoted, and even for attempts sent before the failures.
func TestBreakerSuccessResetsFailures(t *testing.T) {
	srv := startRedis(t)
	clock := faketime.New()
	b := breakerFleet(t, srv, 1, clock, nil)[0]
	for range 100 { // at one instant: Allow reads the clock for one call in 16
		attemptOn(t, b, answered)
	}
	passes := make([]breaker.Pass, 50)
	for i := range passes {
		p, err := b.Allow(scope)
		if err != nil {
			t.Fatalf("Allow = %v; want a pass", err)
		}
		passes[i] = p
	}
	for i, p := range passes {
		if i%5 == 4 {
			p.Done(answered, nil)
		} else {
			p.Done(status503, nil)
		}
	}
	if st := b.State(scope); st.Phase != breaker.Closed || st.Opens != 0 {
		t.Fatalf("State after 10 runs of %d failures, each ended by a success = %+v; want closed", breaker.DefaultFailures-1, st)
	}
	for range breaker.DefaultFailures {
		attemptOn(t, b, status503)
	}
	if st := b.State(scope); st.Phase != breaker.Open {
		t.Errorf("State after %d failures in a row = %+v; want open", breaker.DefaultFailures, st)
	}
}

// clusterBreakerOpeningShared is TestCluster's check of a Breaker on a
// Redis Cluster: on scopes served by different nodes, one replica's
// failures open the circuit and the other replica refuses, with no call
// failing, and each scope's key is on the node that serves its slot.
func clusterBreakerOpeningShared(t *testing.T, c *redisCluster, scopes []string, owner map[string]string) {
	clock := faketime.New()
	rs := newClusterReplicas(t, c, 2, clock)
	local := func() *breaker.Circuit {
		return &breaker.Circuit{Now: clock.Now, Rand: func() float64 { return 0.5 }, Trips: fiveXX}
	}
	a, b := rs[0].store.Breaker(local()), rs[1].store.Breaker(local())
	for _, sc := range scopes {
		for range breaker.DefaultFailures {
			p, err := a.Allow(sc)
			if err != nil {
				t.Fatalf("Allow(%q) = %v; want a pass", sc, err)
			}
			p.Done(status503, nil)
		}
		if _, err := b.Allow(sc); !errors.Is(err, breaker.ErrOpen) {
			t.Errorf("Allow(%q) (node %s) on the other replica after the opening = %v; want ErrOpen", sc, owner[sc], err)
		}
		if n := a.Fallbacks(sc) + b.Fallbacks(sc); n != 0 {
			t.Errorf("Fallbacks(%q) = %d on a healthy cluster; want 0", sc, n)
		}
	}
	checkNoFailure(t, rs)
	checkKeysOnOwners(t, c, owner, func(scope string) string { return rs[0].store.Prefix + "{" + scope + "}:breaker" })
}
