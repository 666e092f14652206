package retryafter

import (
	"time"
)

// Canonical names (as [http.CanonicalHeaderKey] writes them) of the fields
// that carry a delay in milliseconds. Looking them up in an [http.Header]
// map with these constants finds the field whatever case the server used,
// because net/http canonicalises received names, and does not allocate.
const (
	// headerRetryAfterMS is retry-after-ms, sent by Azure OpenAI and
	// other Azure services next to Retry-After.
	headerRetryAfterMS = "Retry-After-Ms"
	// headerMSRetryAfterMS is x-ms-retry-after-ms, sent by Azure Cosmos DB
	// (formerly DocumentDB) with its 429 responses (docs/azure.md).
	headerMSRetryAfterMS = "X-Ms-Retry-After-Ms"
	// headerAmzRetryAfter is x-amz-retry-after, sent by AWS services
	// (docs/aws.md).
	headerAmzRetryAfter = "X-Amz-Retry-After"
)

// parseMillis parses one value of a milliseconds field: optional
// whitespace, then one or more ASCII digits, a whole number of
// milliseconds. Signs, fractions, exponents and units make it malformed,
// and it reports false. A number too large to represent saturates at
// [MaxDelay] and reports true, as delay-seconds does in [ParseValue].
//
// It does not allocate.
func parseMillis(v string) (time.Duration, bool) {
	n, ok := parseUint(trimOWS(v))
	if !ok {
		return 0, false
	}
	return scale(n, time.Millisecond), true
}
