package redisretry

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// This file is the replica's side of the pacing by a published quota
// (published.lua): what RecordQuota keeps until the next call to Redis,
// and what a replica knows of the pacing from the last answer.

// maxQuotaNotes is the most published quotas of a scope a replica keeps
// between two calls to Redis; beyond it the oldest are dropped, since the
// newest tell the most. A closed-loop replica hears of one or two per
// call, one per worker.
const maxQuotaNotes = 8

// RecordQuota records the outcome k of an attempt sent to scope, as Record
// does, with the quota its response publishes: remaining requests left in
// the server's current window, which resets after reset
// (retryafter.ParseQuota reads both; the transport calls it in place of
// Record for every response that carries the fields, see
// [ratelimit.QuotaRecorder]). The quota costs no round trip of its own: it
// goes to Redis with the replica's next call for the scope, the
// throttle's own round trip when k is a throttle, else the next Reserve,
// which applies it to the scope's one published pacing for the whole
// fleet (see Published quotas on [Adaptive]). Both are recorded in Local
// too, in one call, so that it paces by the quota when Redis does not
// answer.
//
// As for ratelimit.Adaptive.RecordQuotaAt, a reset of 0 or less is
// ignored, a negative remaining counts as 0, and no quota is recorded when
// Local is in reference mode, whose algorithm is the SDKs'; the outcome is
// recorded all the same.
func (a *Adaptive) RecordQuota(scope string, k classify.Kind, remaining int64, reset time.Duration) {
	now := a.store().now()
	l := a.local()
	l.RecordQuotaAt(now, scope, k, remaining, reset)
	if l.Reference || !(reset > 0) {
		a.record(now, l, scope, k, nil)
		return
	}
	a.record(now, l, scope, k, &quotaNote{max(remaining, 0), now.Add(reset)})
}

// quotaNote is one published quota as a replica heard of it: remaining
// left until reset, an instant of the replica's clock.
type quotaNote struct {
	remaining int64
	reset     time.Time
}

// quotaNotes are the published quotas of a scope that the replica has
// heard of since its last call to Redis, oldest first, at most
// maxQuotaNotes. The zero value is empty.
type quotaNotes struct {
	n    int
	note [maxQuotaNotes]quotaNote
}

// add appends a quota, dropping the oldest if q is full.
func (q *quotaNotes) add(remaining int64, reset time.Time) {
	if q.n == maxQuotaNotes {
		copy(q.note[:], q.note[1:])
		q.n--
	}
	q.note[q.n] = quotaNote{remaining, reset}
	q.n++
}

// putBack puts before q the quotas of old, which a call that failed was
// to report, so that the next call reports them, keeping the newest
// maxQuotaNotes.
func (q *quotaNotes) putBack(old quotaNotes) {
	merged := old
	for _, n := range q.note[:q.n] {
		merged.add(n.remaining, n.reset)
	}
	*q = merged
}

// appendArgs appends to v the script's arguments for the quotas of q, a
// nil q meaning none: their count, then each one's remaining count and the
// µs from now to its reset. Quotas whose reset has come are left out, as
// the script would ignore them.
func (q *quotaNotes) appendArgs(v []any, now time.Time) []any {
	at := len(v)
	v = append(v, 0)
	if q == nil {
		return v
	}
	k := 0
	for _, n := range q.note[:q.n] {
		if d := n.reset.Sub(now).Microseconds(); d > 0 {
			v = append(v, n.remaining, d)
			k++
		}
	}
	v[at] = k
	return v
}

// paced reports whether a Reserve of st at now must ask Redis for its
// places in the published quota's queue: the last answer said the quota
// paces the scope until after now, or the replica has heard of a quota
// that Redis has not.
func (st *adaptiveScope) paced(now time.Time) bool {
	return st.notes.n > 0 || now.Before(st.ans.pacedUntil(st.checked))
}

// pacedUntil returns the instant of the replica's clock until which ans,
// which came at now, says the published quota paces the scope; zero if it
// does not.
func (ans *adaptiveAnswer) pacedUntil(now time.Time) time.Time {
	if !ans.paced {
		return time.Time{}
	}
	return now.Add(micros(ans.pubReset - ans.scriptClock))
}

// pubWait returns the wait, in µs, of the i-th slot the answer handed out
// (or of the first it refused, for i at or past those) in the published
// quota's queue: 0 unless the quota paces the scope.
func (ans *adaptiveAnswer) pubWait(i int) float64 {
	if len(ans.pubWaits) == 0 {
		return 0
	}
	return ans.pubWaits[min(i, len(ans.pubWaits)-1)]
}

// quotaState adds to s, a state as of ans, which came at checked, the
// published quota's pacing as of now, if it paces the scope then.
func (ans *adaptiveAnswer) quotaState(s *ratelimit.AdaptiveState, checked, now time.Time) {
	if until := ans.pacedUntil(checked); now.Before(until) {
		s.QuotaRemaining, s.QuotaRate, s.QuotaReset = ans.quota, ans.pubRate, until
	}
}

var _ ratelimit.QuotaRecorder = (*Adaptive)(nil)
