package retrytransport

import (
	"strconv"
	"testing"
	"time"
)

// The behaviour table is bounded by dropping idle scopes only: a scope
// whose penalty still runs survives any number of new scopes, while the
// statistics table would have evicted it with its counters.
func TestBehaviourTableKeepsLivePenalty(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	var tb behaviourTable
	tb.get("busy", clock).penalise(now, time.Hour)
	for i := range 2 * maxBehaviourScopes {
		tb.get("s"+strconv.Itoa(i), clock)
	}
	if got := tb.get("busy", clock).penalised(now.Add(time.Minute), time.Second); got != time.Second {
		t.Errorf("penalised(busy) after %d new scopes = %v; want 1s: a running penalty is never dropped", 2*maxBehaviourScopes, got)
	}
	if n := tb.n.Load(); n > maxBehaviourScopes+maxBehaviourScopes/16+1 {
		t.Errorf("behaviour table holds %d scopes; want at most %d: idle scopes are swept", n, maxBehaviourScopes+maxBehaviourScopes/16+1)
	}
}
