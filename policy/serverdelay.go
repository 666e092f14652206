package policy

import (
	"fmt"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// ServerDelay says which response headers may set the wait before a retry,
// and how far their delay is trusted. A server's delay replaces the
// backoff for that retry and is never shortened by jitter; one longer than
// Policy.MaxDelay is not slept at all.
//
// The zero ServerDelay trusts every header retryafter knows, as given.
type ServerDelay struct {
	// Headers is the set of response headers trusted to carry a delay
	// (Retry-After, retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after,
	// X-RateLimit-Reset, the IETF RateLimit fields); the first one present,
	// in retryafter.ParseSources' order, counts. Zero means
	// retryafter.DefaultSources (all of them); retryafter.None trusts none,
	// so that every retry waits its backoff. Validate rejects None together
	// with other headers, which New treats as those headers alone.
	Headers retryafter.Source

	// Bound, when positive, bounds a server's delay by the backoff: the
	// wait is max(backoff, min(server, backoff + Bound)), as the newer AWS
	// SDKs treat x-amz-retry-after (docs/aws.md, with 5 s). Zero means the
	// server's delay is used as given. Validate rejects a negative value,
	// which New treats as zero.
	Bound time.Duration
}

// normalised returns d as the transport uses it: zero Headers as
// retryafter.DefaultSources, retryafter.None mixed with other headers as
// those headers, and a negative Bound as zero.
func (d ServerDelay) normalised() ServerDelay {
	switch h := d.Headers; {
	case h == 0:
		d.Headers = retryafter.DefaultSources
	case h&retryafter.None != 0 && h != retryafter.None:
		d.Headers = h &^ retryafter.None
	}
	d.Bound = max(d.Bound, 0)
	return d
}

// validate reports d's settings that are out of range.
func (d ServerDelay) validate() []error {
	var errs []error
	if h := d.Headers; h&retryafter.None != 0 && h != retryafter.None {
		errs = append(errs, fmt.Errorf("policy: ServerDelay.Headers = %v; want retryafter.None alone, or a set of headers without it", h))
	}
	if d.Bound < 0 {
		errs = append(errs, fmt.Errorf("policy: ServerDelay.Bound = %v; want >= 0 (0: the server's delay as given)", d.Bound))
	}
	return errs
}
