package retrytransport

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/retrytransport/retrytransport/classify"
)

// Event tells an observer what the Transport decided after one attempt
// whose outcome was retryable: either that it will retry after Delay, or,
// when Stop is non-nil, that it will not and why. Attempts whose outcome is
// Success or Fatal produce no Event. A retry that was announced and then
// could not be sent (its send token refused, MaxTotalTime spent, its body
// not replayable after all) is followed by a second Event for the same
// attempt, with Stop set.
type Event struct {
	// Request is the caller's request. Treat it as read-only.
	Request *http.Request
	// Scope is the key of the request's retry quota bucket: the URL's
	// host:port unless the policy's Scope function says otherwise.
	Scope string
	// Attempt is the attempt that just ended; 1 is the first.
	Attempt int
	// Outcome is how that attempt was classified.
	Outcome classify.Outcome
	// StatusCode is the attempt's response status, or 0 if it got none.
	StatusCode int
	// Err is the attempt's transport error, or nil if it got a response.
	Err error
	// Delay is the wait before the next attempt; zero when Stop is set.
	Delay time.Duration
	// ServerDelay reports that Delay came from the server (Retry-After)
	// rather than from the backoff strategy.
	ServerDelay bool
	// Quota is the retry quota level of the request's scope after this
	// decision, in tokens; -1 when the policy has no quota.
	Quota float64
	// Stop is nil when a retry follows; otherwise why it does not, an
	// error that errors.Is matches to one of: ErrExhausted (the last
	// allowed attempt), ErrNotRetryable (not idempotent and maybe
	// processed, or a body that cannot be replayed), ErrServerDelay (the
	// server asked for a longer wait than MaxDelay), ErrDeadline (the wait
	// would pass the context's deadline), ErrBudget (or MaxTotalTime),
	// ratelimit.ErrQuotaExceeded (the retry quota, the circuit breaker,
	// cannot pay) or ratelimit.ErrRateLimited (a client-side rate limiter
	// refused to wait for the retry's send token); or the context's error,
	// when the caller cancelled while the retry waited.
	Stop error
}

// emit hands ev to the observer and the logger, if any.
func (t *Transport) emit(ev Event) {
	if t.observe != nil {
		t.observe(ev)
	}
	if t.logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", ev.Request.Method),
		slog.String("scope", ev.Scope),
		slog.Int("attempt", ev.Attempt),
		slog.String("outcome", ev.Outcome.Kind.String()),
		slog.String("reason", ev.Outcome.Reason),
	}
	if ev.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", ev.StatusCode))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	if ev.Quota >= 0 {
		attrs = append(attrs, slog.Float64("quota", ev.Quota))
	}
	ctx := ev.Request.Context()
	if ev.Stop == nil {
		attrs = append(attrs, slog.Duration("delay", ev.Delay))
		t.logger.LogAttrs(ctx, slog.LevelDebug, "retrytransport: retrying", attrs...)
		return
	}
	attrs = append(attrs, slog.String("stop", reasonText(ev.Stop)))
	t.logger.LogAttrs(ctx, slog.LevelInfo, "retrytransport: not retrying", attrs...)
}
