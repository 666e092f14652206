package retrytransport

import (
	"log/slog"
	"net/url"
)

// log writes ev to t.logger: retries at Debug, final events at Info,
// with the attributes eventAttrs lists, unless the logger is not enabled
// at that level.
func (t *Transport) log(ev Event) {
	level, msg := eventLevel(ev)
	ctx := ev.Request.Context()
	if t.logger.Enabled(ctx, level) {
		t.logger.LogAttrs(ctx, level, msg, eventAttrs(ev)...)
	}
}

// eventLevel returns the level and message of ev's log line: "retrying" at
// Debug, "recovered" and "gave up" at Info, and the stop of a request its
// SDK retries itself, which is not given up, at Debug.
func eventLevel(ev Event) (slog.Level, string) {
	switch {
	case ev.Final && ev.Stop == nil:
		return slog.LevelInfo, "retrytransport: recovered"
	case ev.Stop == ErrSDKRetries:
		return slog.LevelDebug, "retrytransport: left to the SDK's retries"
	case ev.Stop != nil:
		return slog.LevelInfo, "retrytransport: gave up"
	}
	return slog.LevelDebug, "retrytransport: retrying"
}

// eventAttrs returns the attributes of ev's log line: what was sent where,
// the attempt and its outcome, the wait, and why the request stopped; the
// fields that ev leaves at their zero value are left out.
func eventAttrs(ev Event) []slog.Attr {
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("method", ev.Request.Method),
		slog.String("url", redactedURL(ev.Request.URL)),
		slog.String("scope", ev.Scope))
	if ev.Final {
		attrs = append(attrs, slog.Int("attempts", ev.Attempt))
	} else {
		attrs = append(attrs, slog.Int("attempt", ev.Attempt))
	}
	if ev.Endpoint != "" && ev.Endpoint != ev.Request.URL.Host {
		attrs = append(attrs, slog.String("endpoint", ev.Endpoint))
	}
	if ev.Hedges > 0 {
		attrs = append(attrs, slog.Int("hedges", ev.Hedges))
	}
	if ev.Attempt > 0 {
		attrs = append(attrs, slog.String("outcome", ev.Outcome.Kind.String()))
	}
	if ev.Outcome.Reason != "" {
		attrs = append(attrs, slog.String("reason", ev.Outcome.Reason))
	}
	if ev.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", ev.StatusCode))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	if ev.Stop == nil && !ev.Final {
		attrs = append(attrs, slog.String("delay", ev.Delay.String()), slog.Bool("server_delay", ev.ServerDelay))
	}
	attrs = append(attrs, slog.String("waited", ev.Waited.String()))
	if ev.Quota >= 0 {
		attrs = append(attrs, slog.Float64("quota", ev.Quota))
	}
	if ev.Stop != nil {
		attrs = append(attrs, slog.String("stop", reasonText(ev.Stop)))
	}
	if ev.RequestPolicy {
		attrs = append(attrs, slog.Bool("request_policy", true))
	}
	return attrs
}

// redactedURL is u without its query, fragment and user information, which
// may hold secrets.
func redactedURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, Opaque: u.Opaque}
	return r.String()
}
