package scopemap

// scopeMap holds one value per scope, at most a given number at once, and
// evicts the least recently used scope to make room for a new one. Lookup,
// insertion and eviction cost O(1): the entries also form a circular list in
// order of use. The zero value is empty and ready; it must not be copied
// after first use, and its owner serialises the calls.
type scopeMap[V any] struct {
	m    map[string]*scopeEntry[V]
	root scopeEntry[V] // sentinel: root.next is the most recently used entry, root.prev the least
}

// scopeEntry is one scope's value and its place in the order of use.
type scopeEntry[V any] struct {
	val        V
	key        string
	prev, next *scopeEntry[V]
}

// get returns a pointer to key's value, marking it the most recently used,
// or nil if key is not stored. It does not allocate.
func (s *scopeMap[V]) get(key string) *V {
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

// peek returns a pointer to key's value without marking it used, or nil.
func (s *scopeMap[V]) peek(key string) *V {
	if e := s.m[key]; e != nil {
		return &e.val
	}
	return nil
}

// add stores a zero value for key, which must not be stored, and returns a
// pointer to it. When limit values are stored already it first evicts the
// least recently used ones, reusing an evicted entry's memory.
func (s *scopeMap[V]) add(key string, limit int) *V {
	if s.m == nil {
		s.m = make(map[string]*scopeEntry[V])
		s.root.next, s.root.prev = &s.root, &s.root
	}
	var e *scopeEntry[V]
	for len(s.m) > 0 && len(s.m) >= limit {
		e = s.root.prev
		e.unlink()
		delete(s.m, e.key)
	}
	if e == nil {
		e = new(scopeEntry[V])
	}
	*e = scopeEntry[V]{key: key}
	s.m[key] = e
	s.pushFront(e)
	return &e.val
}

func (s *scopeMap[V]) pushFront(e *scopeEntry[V]) {
	e.prev, e.next = &s.root, s.root.next
	e.prev.next, e.next.prev = e, e
}

func (e *scopeEntry[V]) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
