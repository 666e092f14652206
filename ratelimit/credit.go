package ratelimit

// credit paces a scope's queue of reservations: the scope hands out places
// 1, 2, 3, ... in the order reservations are taken (the latest is last),
// and credit accrues at rate places per second; place n may send once the
// credit, due, reaches it. A new rate moves every waiting place at once,
// since the credit still to come accrues at it. Credit is held up to
// capacity places beyond the latest one taken, so a client that sends
// below its rate saves up a little of it. Both the CUBIC bucket (cubic) and
// the published quota (published) pace a scope's places this way; a send
// waits for the later of the two.
//
// # Places given back
//
// A reservation whose attempt will not be sent gives its place back. The
// latest place just leaves the queue. A place in the middle gives its
// credit to the places behind it, which move up one, and the places ahead
// of it keep their turns: they are recorded in skipped, so that a place n
// waits for one more credit for each place given back behind it. Crediting
// the whole queue instead, as a bare counter does, made the first waiting
// place due at once for each place given back: when a decrease moved every
// turn later and the callers whose deadline it passed gave up together,
// their places went out as a burst of sends into the server that had just
// throttled, and each throttle decreased the rate again (an open loop at
// twice the capacity collapsed to the least fill rate within 0.3 s).
//
// The zero value credits nothing and holds no credit.
type credit struct {
	rate     float64  // places credited per second
	capacity float64  // most places credited beyond the latest one taken
	due      float64  // the credit: place n may send once due reaches n plus the places given back behind it
	refilled float64  // instant due was computed for
	skipped  []uint64 // places given back while waiting, ascending, until every place ahead of them is due
}

// refill credits rate per second from the last refill to t, up to capacity
// beyond last, the latest place taken. A t before the last refill changes
// nothing.
func (q *credit) refill(t float64, last uint64) {
	if t > q.refilled {
		q.due = min(q.due+(t-q.refilled)*q.rate, float64(last)+q.capacity)
		q.refilled = t
	}
	q.prune()
}

// owed returns how much credit place n still waits for: 0 or less once it
// may send.
func (q *credit) owed(n uint64) float64 {
	return float64(n) + float64(q.behind(n)) - q.due
}

// behind returns how many places were given back behind place n.
func (q *credit) behind(n uint64) int {
	k := len(q.skipped)
	for k > 0 && q.skipped[k-1] > n {
		k--
	}
	return len(q.skipped) - k
}

// balance returns the credit held beyond last, the latest place taken: the
// tokens of a bucket, negative while places wait.
func (q *credit) balance(last uint64) float64 { return q.due - float64(last) }

// setBalance makes the credit held beyond last b.
func (q *credit) setBalance(last uint64, b float64) { q.due = float64(last) + b }

// giveBack returns place n, which will not be sent, of a queue whose latest
// place is last, and reports whether it was the latest, which just leaves
// the queue (the caller then takes one off last). Another place gives its
// credit to the places behind it, up to capacity beyond last; if it was
// still waiting, the places ahead of it keep their turns (see skipped).
func (q *credit) giveBack(n, last uint64) (latest bool) {
	if n == last && n > 0 {
		q.due = min(q.due, float64(last-1)+q.capacity)
		return true
	}
	if q.owed(n) > dueSlack {
		q.skip(n)
	}
	q.due = min(q.due+1, float64(last)+q.capacity)
	return false
}

// skip records place n, given back while it waited.
func (q *credit) skip(n uint64) {
	i := len(q.skipped)
	for i > 0 && q.skipped[i-1] > n {
		i--
	}
	q.skipped = append(q.skipped, 0)
	copy(q.skipped[i+1:], q.skipped[i:])
	q.skipped[i] = n
}

// prune forgets the places given back that every place ahead of has come
// due: they no longer move any turn.
func (q *credit) prune() {
	for len(q.skipped) > 0 && float64(q.skipped[0]-1)+float64(len(q.skipped)) <= q.due+dueSlack {
		q.skipped = q.skipped[1:]
	}
	if len(q.skipped) == 0 {
		q.skipped = nil
	}
}
