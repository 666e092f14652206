package retrytransport_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
)

// TestScopeIgnoresTrailingDot: a fully qualified name with its trailing
// dot names the same server, so it shares the quota bucket and statistics
// of the name without it, with or without a port.
func TestScopeIgnoresTrailingDot(t *testing.T) {
	s := &script{steps: []step{{status: 503}, {status: 200}}}
	tr, _ := newTransport(t, s, policy.Standard())
	for _, u := range []string{"http://api.example.com/", "http://api.example.com./", "http://api.example.com.:8080/", "http://api.example.com:8080/"} {
		s.mu.Lock()
		s.calls = 0
		s.mu.Unlock()
		if n := attemptsFor(t, tr, s, u); n != 2 {
			t.Fatalf("GET %s: %d attempts; want 2", u, n)
		}
	}
	var got []string
	for _, st := range tr.Snapshot() {
		got = append(got, st.Scope)
	}
	if diff := cmp.Diff([]string{"api.example.com", "api.example.com:8080"}, got); diff != "" {
		t.Errorf("Snapshot() scopes mismatch (-want +got):\n%s", diff)
	}
}
