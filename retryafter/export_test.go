package retryafter

// Bridges from the tests in package retryafter_test to the unexported
// parsers, so that each can be tested and fuzzed on its own.
var (
	ParseUint      = parseUint
	ParseFixed     = parseFixed
	ParseMillis    = parseMillis
	ParseXReset    = parseXReset
	ParseRateLimit = parseRateLimit
)
