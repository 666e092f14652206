// Package scopemap holds one value per scope with a bound on how many are
// kept: [Map], exactly least recently used and for an owner that serialises
// its calls, as package quota's Budget does; [Sync], for concurrent use
// without a lock shared by all scopes, for the per-scope state of package
// ratelimit's Adaptive and Fixed.
package scopemap

// Map holds one value per scope, at most a given number at once, and
// evicts the least recently used scope to make room for a new one. Lookup,
// insertion and eviction cost O(1): the entries also form a circular list in
// order of use. The zero value is empty and ready; it must not be copied
// after first use, and it is not safe for concurrent use: its owner
// serialises the calls.
type Map[V any] struct {
	m    map[string]*entry[V]
	root entry[V] // sentinel: root.next is the most recently used entry, root.prev the least
}

// entry is one scope's value and its place in the order of use.
type entry[V any] struct {
	val        V
	key        string
	prev, next *entry[V]
}

// Get returns a pointer to key's value, marking it the most recently used,
// or nil if key is not stored. It does not allocate.
func (s *Map[V]) Get(key string) *V {
	e := s.m[key]
	if e == nil {
		return nil
	}
	if s.root.next != e {
		e.unlink()
		s.pushFront(e)
	}
	return &e.val
}

// Peek returns a pointer to key's value without marking it used, or nil if
// key is not stored.
func (s *Map[V]) Peek(key string) *V {
	if e := s.m[key]; e != nil {
		return &e.val
	}
	return nil
}

// Add stores a zero value for key, which must not be stored, and returns a
// pointer to it, the most recently used. When limit values are stored
// already it first evicts the least recently used ones, reusing an evicted
// entry's memory; a limit below 1 counts as 1.
func (s *Map[V]) Add(key string, limit int) *V {
	if s.m == nil {
		s.m = make(map[string]*entry[V])
		s.root.next, s.root.prev = &s.root, &s.root
	}
	var e *entry[V]
	for len(s.m) > 0 && len(s.m) >= limit {
		e = s.root.prev
		e.unlink()
		delete(s.m, e.key)
	}
	if e == nil {
		e = new(entry[V])
	}
	*e = entry[V]{key: key}
	s.m[key] = e
	s.pushFront(e)
	return &e.val
}

func (s *Map[V]) pushFront(e *entry[V]) {
	e.prev, e.next = &s.root, s.root.next
	e.prev.next, e.next.prev = e, e
}

func (e *entry[V]) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
