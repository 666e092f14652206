package ratelimit

// AdaptiveScopes returns how many scopes a stores, for the tests of its
// bound.
func AdaptiveScopes(a *Adaptive) int { return a.scopes.Len() }

// FixedScopes returns how many scopes f stores, for the tests of its bound.
func FixedScopes(f *Fixed) int { return f.scopes.Len() }
