package breaker

// ScopesStored returns how many scopes c stores.
func ScopesStored(c *Circuit) int { return c.scopes.Len() }
