package redisretry

// Records returns how many scopes' records q, a and f keep: the tests'
// view of the bound that Store.MaxScopes sets.
func Records(q *Quota, a *Adaptive, f *Fixed) (quota, adaptive, fixed int) {
	q.mu.Lock()
	quota = len(q.scopes)
	q.mu.Unlock()
	a.mu.Lock()
	adaptive = len(a.scopes)
	a.mu.Unlock()
	f.mu.Lock()
	fixed = len(f.scopes)
	f.mu.Unlock()
	return quota, adaptive, fixed
}
