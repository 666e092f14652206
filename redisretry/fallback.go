package redisretry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// fallbacks counts, per scope, the decisions made from local state. It
// holds at most a given number of scopes: a new scope beyond that first
// drops a sixteenth of the others, whose counts start again from zero. The
// zero value is ready.
type fallbacks struct {
	mu sync.Mutex
	n  map[string]uint64 // guarded by mu
}

// add counts one fallback of scope, keeping at most limit scopes.
func (f *fallbacks) add(scope string, limit int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = make(map[string]uint64)
	}
	if _, ok := f.n[scope]; !ok && len(f.n) >= limit {
		dropSome(f.n)
	}
	f.n[scope]++
}

// get returns the fallbacks counted for scope.
func (f *fallbacks) get(scope string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[scope]
}

// record returns scope's record in *m, creating the map and the record
// as needed, and first dropping some records (see dropSome) if limit of
// them are stored.
func record[V any](m *map[string]*V, scope string, limit int) *V {
	if r := (*m)[scope]; r != nil {
		return r
	}
	if *m == nil {
		*m = make(map[string]*V)
	}
	if len(*m) >= limit {
		dropSome(*m)
	}
	r := new(V)
	(*m)[scope] = r
	return r
}

// dropSome deletes a sixteenth of m's entries, at least one, in the map's
// own order: so a stream of new keys costs one pass per len(m)/16 of them.
func dropSome[K comparable, V any](m map[K]V) {
	k := max(1, len(m)/16)
	for key := range m {
		if k == 0 {
			return
		}
		delete(m, key)
		k--
	}
}

// fallback records that a decision for scope was made locally because of
// err, counting it in f and logging it (see failed).
func (s *Store) fallback(f *fallbacks, scope string, err error) {
	f.add(scope, s.maxScopes())
	s.logMu.Lock()
	s.unlogged++
	s.logMu.Unlock()
	s.failed(err, false)
}

// failed logs err at Warn level, with the fallbacks since the last such
// line, unless one was logged less than LogInterval ago. opened reports
// that err has just opened the circuit. errOpen is logged as the error
// that opened the circuit.
func (s *Store) failed(err error, opened bool) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	now := s.now()
	if opened {
		s.downSince, s.downErr = now, err
	}
	if s.Logger == nil || (!s.lastWarn.IsZero() && now.Sub(s.lastWarn) < s.logInterval()) {
		return
	}
	if errors.Is(err, errOpen) && s.downErr != nil {
		err = s.downErr
	}
	s.Logger.LogAttrs(context.Background(), slog.LevelWarn,
		"redisretry: Redis did not answer in time; deciding from local state",
		slog.Any("error", err), slog.Uint64("fallbacks", s.unlogged),
		slog.Duration("backoff", s.backoff()))
	s.lastWarn, s.unlogged, s.warned = now, 0, true
}

// recovered logs at Info level that Redis answers again, if a Warn line
// was logged since it failed and no Info line less than LogInterval ago.
func (s *Store) recovered() {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	now := s.now()
	if s.Logger == nil || !s.warned || (!s.lastInfo.IsZero() && now.Sub(s.lastInfo) < s.logInterval()) {
		return
	}
	s.Logger.LogAttrs(context.Background(), slog.LevelInfo,
		"redisretry: Redis answers again; deciding from shared state",
		slog.Duration("down", now.Sub(s.downSince)))
	s.lastInfo, s.warned = now, false
}

func (s *Store) logInterval() time.Duration { return positive(s.LogInterval, DefaultLogInterval) }
