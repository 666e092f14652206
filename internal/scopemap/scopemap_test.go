package scopemap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// keys returns m's keys from the most to the least recently used.
func keys[V any](m *Map[V]) []string {
	var ks []string
	for e := m.root.next; e != &m.root; e = e.next {
		ks = append(ks, e.key)
	}
	return ks
}

func TestZeroMapIsEmpty(t *testing.T) {
	var m Map[int]
	if p := m.Get("a"); p != nil {
		t.Errorf("Get(a) on the zero Map = %v; want nil", p)
	}
	if p := m.Peek("a"); p != nil {
		t.Errorf("Peek(a) on the zero Map = %v; want nil", p)
	}
	if n := len(m.m); n != 0 {
		t.Errorf("the zero Map stores %d values; want 0", n)
	}
}

func TestAddStoresZeroValue(t *testing.T) {
	var m Map[int]
	*m.Add("a", 10) = 1
	p := m.Add("b", 10)
	if *p != 0 {
		t.Errorf("Add(b) = %d; want 0", *p)
	}
	if got := m.Get("a"); got == nil || *got != 1 {
		t.Errorf("Get(a) = %v; want 1", got)
	}
}

func TestAddEvictsLeastRecentlyUsed(t *testing.T) {
	var m Map[int]
	for _, k := range []string{"a", "b", "c"} {
		m.Add(k, 3)
	}
	m.Get("a")  // a is now the most recently used
	m.Peek("b") // peeking does not count as a use
	m.Add("d", 3)
	if diff := cmp.Diff([]string{"d", "a", "c"}, keys(&m)); diff != "" {
		t.Errorf("keys after Add(d) at limit 3 mismatch (-want +got):\n%s", diff)
	}
	if m.Peek("b") != nil {
		t.Error("Peek(b) after eviction != nil; want b evicted")
	}
}

func TestAddShrinksToLimit(t *testing.T) {
	var m Map[int]
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Add(k, 10)
	}
	m.Add("e", 2)
	if diff := cmp.Diff([]string{"e", "d"}, keys(&m)); diff != "" {
		t.Errorf("keys after Add(e) at limit 2 mismatch (-want +got):\n%s", diff)
	}
	m.Add("f", 0)
	if diff := cmp.Diff([]string{"f"}, keys(&m)); diff != "" {
		t.Errorf("keys after Add(f) at limit 0 mismatch (-want +got):\n%s", diff)
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	var m Map[int]
	m.Add("a", 2)
	m.Add("b", 2)
	if n := testing.AllocsPerRun(100, func() { m.Get("a"); m.Get("b") }); n != 0 {
		t.Errorf("Get allocates %v times per run; want 0", n)
	}
}
