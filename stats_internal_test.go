package retrytransport

import "testing"

// A scope's counters, once evicted, are not found again, also when they
// were the scope added last, which lookups try before the map: the scope,
// seen again, counts from zero in counters of its own.
func TestEvictedNewestScopeCountsAfresh(t *testing.T) {
	var s statsTable
	cp := new(compiled)
	old := s.get("a.example", cp)
	old.attempts.Add(1)
	if !s.evictBatch() { // one scope stored: it goes
		t.Fatal("evictBatch() with one scope stored = false; want it evicted")
	}
	again := s.get("a.example", cp)
	if again == old {
		t.Fatal("get(a.example) after its eviction returned its evicted counters; want new ones")
	}
	if n := again.attempts.Load(); n != 0 {
		t.Errorf("attempts of a.example after its eviction = %d; want 0", n)
	}
	if s.get("a.example", cp) != again {
		t.Error("get(a.example) twice after its eviction gave two sets of counters; want the stored one")
	}
}
