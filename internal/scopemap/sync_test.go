package scopemap

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stored returns the keys s stores, sorted.
func stored[V any](s *Sync[V]) []string {
	var ks []string
	s.m.Range(func(k, _ any) bool {
		ks = append(ks, k.(string))
		return true
	})
	slices.Sort(ks)
	return ks
}

// addAll adds keys to s in order, with limit.
func addAll[V any](s *Sync[V], limit int, keys ...string) {
	for _, k := range keys {
		s.Add(k, limit, nil)
	}
}

func TestSyncZeroIsEmpty(t *testing.T) {
	var s Sync[int]
	if p := s.Get("a"); p != nil {
		t.Errorf("Get(a) on the zero Sync = %v; want nil", p)
	}
	if p := s.Peek("a"); p != nil {
		t.Errorf("Peek(a) on the zero Sync = %v; want nil", p)
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len() of the zero Sync = %d; want 0", n)
	}
}

func TestSyncAddInitsOnlyNewValues(t *testing.T) {
	var s Sync[int]
	calls := 0
	init := func(v *int) { calls++; *v = calls }
	a := s.Add("a", 10, init)
	again := s.Add("a", 10, init)
	b := s.Add("b", 10, nil)
	if *a != 1 || again != a || *b != 0 || calls != 1 {
		t.Errorf("Add(a, init), Add(a, init), Add(b, nil) = %d, same %t, %d with %d init calls; want 1, same true, 0 with 1", *a, again == a, *b, calls)
	}
	if got := s.Get("a"); got != a {
		t.Errorf("Get(a) = %p; want %p, the value Add returned", got, a)
	}
}

func TestSyncEvictsOneUnusedSinceTheHandPassed(t *testing.T) {
	var s Sync[int]
	addAll(&s, 3, "a", "b", "c")
	s.Get("a")  // the hand spares a
	s.Peek("b") // peeking is not a use
	s.Add("d", 3, nil)
	if diff := cmp.Diff([]string{"a", "c", "d"}, stored(&s)); diff != "" {
		t.Errorf("stored after Add(d) at limit 3 mismatch (-want +got):\n%s", diff)
	}
	// The hand goes on from b's place, which d took: c is next, and d,
	// the newest, is visited last. a was marked unused when spared.
	s.Add("e", 3, nil)
	if diff := cmp.Diff([]string{"a", "d", "e"}, stored(&s)); diff != "" {
		t.Errorf("stored after Add(e) at limit 3 mismatch (-want +got):\n%s", diff)
	}
	s.Add("f", 3, nil)
	if diff := cmp.Diff([]string{"d", "e", "f"}, stored(&s)); diff != "" {
		t.Errorf("stored after Add(f) at limit 3 mismatch (-want +got):\n%s", diff)
	}
}

// A scope in steady use outlives any number of scopes used once.
func TestSyncKeepsScopeInUse(t *testing.T) {
	var s Sync[int]
	s.Add("busy", 4, nil)
	for i := range 100 {
		s.Get("busy")
		s.Add(fmt.Sprint("once", i), 4, nil)
		if s.Peek("busy") == nil {
			t.Fatalf("busy evicted by the %dth scope used once", i+1)
		}
	}
}

func TestSyncAllUsedEvictsWhereTheHandStarted(t *testing.T) {
	var s Sync[int]
	addAll(&s, 3, "a", "b", "c")
	for _, k := range []string{"c", "b", "a"} {
		s.Get(k)
	}
	s.Add("d", 3, nil)
	if diff := cmp.Diff([]string{"b", "c", "d"}, stored(&s)); diff != "" {
		t.Errorf("stored after Add(d) with every scope used mismatch (-want +got):\n%s", diff)
	}
}

func TestSyncAddShrinksToLimit(t *testing.T) {
	var s Sync[int]
	addAll(&s, 10, "a", "b", "c", "d")
	s.Add("e", 2, nil)
	if got := stored(&s); len(got) != 2 || !slices.Contains(got, "e") {
		t.Errorf("stored after Add(e) at limit 2 = %v; want 2 keys, e among them", got)
	}
	s.Add("f", 0, nil)
	if diff := cmp.Diff([]string{"f"}, stored(&s)); diff != "" {
		t.Errorf("stored after Add(f) at limit 0 mismatch (-want +got):\n%s", diff)
	}
	if n := s.Len(); n != 1 {
		t.Errorf("Len() after Add(f) at limit 0 = %d; want 1", n)
	}
}

// Get and Peek find exactly the stored scopes, the one added last among
// them, and each with the value Add returned for it.
func TestSyncFindsOnlyStoredScopes(t *testing.T) {
	var s Sync[int]
	added := map[string]*int{}
	keys := []string{"a", "b", "c", "d", "e"}
	for i, k := range keys {
		limit := 3
		if i == len(keys)-1 {
			limit = 1 // shrinks: the scope added before is evicted too
		}
		added[k] = s.Add(k, limit, func(v *int) { *v = i })
		in := stored(&s)
		for _, q := range keys {
			want := (*int)(nil)
			if slices.Contains(in, q) {
				want = added[q]
			}
			if got := s.Peek(q); got != want {
				t.Errorf("after Add(%s, %d): Peek(%s) = %p; want %p (stored: %v)", k, limit, q, got, want, in)
			}
			if got := s.Get(q); got != want {
				t.Errorf("after Add(%s, %d): Get(%s) = %p; want %p (stored: %v)", k, limit, q, got, want, in)
			}
		}
	}
}

func TestSyncGetDoesNotAllocate(t *testing.T) {
	var s Sync[int]
	addAll(&s, 2, "a", "b")
	keys := []string{"a", "b", "c"}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			s.Get(k)
			s.Peek(k)
		}
	}); n != 0 {
		t.Errorf("Get and Peek allocate %v times per run; want 0", n)
	}
}

// TestSyncConcurrentUseKeepsBound runs goroutines that use and add 64
// scopes with room for 8, and checks from another that no more than 8 are
// ever stored, that a value is always the one its scope was added with,
// and that the map holds what the ring does once they are done. Run it
// under the race detector.
func TestSyncConcurrentUseKeepsBound(t *testing.T) {
	const limit, scopes = 8, 64
	var s Sync[string]
	keys := make([]string, scopes)
	for i := range keys {
		keys[i] = fmt.Sprint("scope", i)
	}
	var (
		users sync.WaitGroup
		done  = make(chan struct{})
		watch = make(chan int)
	)
	go func() { // the watcher
		most := 0
		for {
			select {
			case <-done:
				watch <- most
				return
			default:
				most = max(most, s.Len())
			}
		}
	}()
	for g := range 8 {
		users.Add(1)
		go func() {
			defer users.Done()
			for i := range 5000 {
				k := keys[(g*7+i*(g+1))%scopes]
				v := s.Get(k)
				if v == nil {
					v = s.Add(k, limit, func(v *string) { *v = k })
				}
				if *v != k {
					t.Errorf("value of %s = %q; want %q", k, *v, k)
					return
				}
			}
		}()
	}
	users.Wait()
	close(done)
	if most := <-watch; most > limit {
		t.Errorf("most scopes stored at once with limit %d = %d; want at most %d", limit, most, limit)
	}
	// The ring and the map hold the same entries.
	var ring []string
	for _, e := range s.ring {
		if v, _ := s.m.Load(e.key); v != e {
			t.Errorf("ring entry %s is not the map's", e.key)
		}
		ring = append(ring, e.key)
	}
	slices.Sort(ring)
	if diff := cmp.Diff(ring, stored(&s)); len(ring) != limit || diff != "" {
		t.Errorf("after the goroutines: %d scopes in the ring; want %d; map mismatch (-ring +map):\n%s", len(ring), limit, diff)
	}
}
