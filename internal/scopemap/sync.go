package scopemap

import (
	"sync"
	"sync/atomic"
)

// Sync holds one value per scope for concurrent use, at most a given number
// at once, like [Map]; finding a stored scope takes no lock. The values
// carry their own locks if they need any: Sync only finds them.
//
// Get and Peek first look at the scope added last, which is one atomic
// load and a string comparison, and otherwise load from a sync.Map, whose
// hashing of the key costs some 20 ns: a client of one host, the common
// case, finds its scope without it. Get also marks the value used (an
// atomic flag in the entry, written only when not yet set), so goroutines
// using different scopes share no lock and write no shared memory. Add,
// for a scope not stored, takes a mutex that all scopes share, which Get
// and Peek never take.
//
// # Eviction
//
// At most limit values are stored at any moment: additions are serialised,
// and one that finds limit values stored first evicts one. Which one is the
// CLOCK approximation of least recently used. The stored scopes stand in a
// ring and a hand goes round it: each scope the hand passes that has been
// used since the hand last passed it (or since it was added) is spared and
// marked unused, and the first scope found unused is evicted. The new scope
// takes its place, just behind the hand, so a turn of the hand visits it
// last. Hence whenever the ring holds a scope not used since the hand last
// passed it, the scope evicted is one of those: a scope used between two
// passes of the hand is spared. If every scope was used since the hand last
// passed, the hand goes round once, marking them unused, and evicts the
// scope it started at. Adding a scope does not count as a use of it. An
// eviction moves the hand round the ring once at most, and over many
// evictions one place per eviction plus one per use, on average.
//
// A value that a goroutine found before its scope was evicted stays valid
// for that goroutine, but is no longer stored: what the goroutine changes
// in it is lost, and the scope, if seen again, gets a new value. An
// evicted value's memory is never reused.
//
// The zero value is empty and ready; it must not be copied after first use.
type Sync[V any] struct {
	m      sync.Map                     // scope string -> *syncEntry[V]
	newest atomic.Pointer[syncEntry[V]] // the entry added last, while stored; nil for none

	mu   sync.Mutex      // serialises additions and evictions; guards ring and hand
	ring []*syncEntry[V] // every stored entry, in the order the hand visits them
	hand int             // index in ring of the next entry the hand visits
}

// syncEntry is one scope's value and whether it was used lately. The flag
// comes first, on the cache line of the value's first fields (its lock,
// say), which the goroutines using the scope write anyway; at the end it
// could share a line with the next entry's value. The key, which only
// eviction reads, comes last.
type syncEntry[V any] struct {
	used atomic.Bool // used since the hand last passed it, or since it was added
	val  V
	key  string
}

// Get returns a pointer to key's value, marking it used, or nil if key is
// not stored. It takes no lock and does not allocate.
func (s *Sync[V]) Get(key string) *V {
	if e := s.newest.Load(); e != nil && e.key == key && e.used.Load() {
		return &e.val // the common case, without find's call
	}
	return s.get(key)
}

// get is Get beyond its common case.
func (s *Sync[V]) get(key string) *V {
	e := s.find(key)
	if e == nil {
		return nil
	}
	if !e.used.Load() {
		e.used.Store(true)
	}
	return &e.val
}

// Peek returns a pointer to key's value without marking it used, or nil if
// key is not stored. It takes no lock and does not allocate.
func (s *Sync[V]) Peek(key string) *V {
	if e := s.find(key); e != nil {
		return &e.val
	}
	return nil
}

// find returns key's entry, or nil if key is not stored.
func (s *Sync[V]) find(key string) *syncEntry[V] {
	if e := s.newest.Load(); e != nil && e.key == key {
		return e
	}
	if v, ok := s.m.Load(key); ok {
		return v.(*syncEntry[V])
	}
	return nil
}

// Add returns a pointer to key's value, storing a new one if key is not
// stored: a zero V, which init, unless nil, fills in before any other
// goroutine can see it. Init is called under the mutex that serialises
// additions, so it must not call s's methods; it is not called when key is
// stored already (another goroutine may have added it meanwhile), and the
// stored value is then marked used and returned. When limit values are
// stored, Add first evicts as [Sync] describes; a limit below 1 counts as
// 1. Adding a key allocates.
func (s *Sync[V]) Add(key string, limit int, init func(*V)) *V {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m.Load(key); ok {
		e := v.(*syncEntry[V])
		e.used.Store(true)
		return &e.val
	}
	limit = max(limit, 1)
	for len(s.ring) > limit { // only if limit went down
		s.removeLocked(s.victimLocked())
	}
	e := &syncEntry[V]{key: key}
	if init != nil {
		init(&e.val)
	}
	if len(s.ring) < limit {
		s.ring = append(s.ring, e)
	} else {
		// The new entry takes the evicted one's place in the ring, just
		// behind the hand, which visits it last.
		i := s.victimLocked()
		s.forgetLocked(s.ring[i])
		s.ring[i] = e
		s.hand = i + 1
	}
	s.m.Store(key, e)
	s.newest.Store(e)
	return &e.val
}

// Len returns how many values are stored.
func (s *Sync[V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ring)
}

// victimLocked moves the hand round the ring, sparing and marking unused
// the entries used since it last passed them, and returns the index of the
// first one unused; after a whole turn without one, that of the one it is
// at. The ring must not be empty. The caller holds s.mu.
func (s *Sync[V]) victimLocked() int {
	for spared := 0; ; spared++ {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		// Goroutines may mark entries used as fast as the hand passes
		// them; a whole turn bounds the search.
		if spared < len(s.ring) && s.ring[s.hand].used.Swap(false) {
			s.hand++
			continue
		}
		return s.hand
	}
}

// removeLocked evicts the entry at index i of the ring; the last entry
// takes its place. The caller holds s.mu.
func (s *Sync[V]) removeLocked(i int) {
	s.forgetLocked(s.ring[i])
	last := len(s.ring) - 1
	s.ring[i], s.ring[last] = s.ring[last], nil
	s.ring = s.ring[:last]
}

// forgetLocked makes e, which is stored, unfindable; the caller then takes
// it out of the ring. The caller holds s.mu.
func (s *Sync[V]) forgetLocked(e *syncEntry[V]) {
	if s.newest.Load() == e {
		s.newest.Store(nil)
	}
	s.m.Delete(e.key)
}
