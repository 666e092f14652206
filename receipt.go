package retrytransport

import (
	"time"

	"github.com/retrytransport/retrytransport/classify"
	"github.com/retrytransport/retrytransport/quota"
)

// receipt is a charge to a retry quota (Policy.Quota or Policy.Budget):
// the quota, the scope whose bucket paid, the tokens taken, and the wait
// the quota asked for before the retry. Like a ratelimit.Reservation, it
// knows how to undo itself. The zero receipt is a charge of nothing, and
// undoing it does nothing.
type receipt struct {
	q     quota.Quota
	scope string
	cost  int
	wait  time.Duration
}

// refund gives the cost back for a retry or hedge that was sent and
// succeeded, and clears r.
func (r *receipt) refund() {
	if r.cost > 0 {
		r.q.Refund(r.scope, r.cost)
	}
	*r = receipt{}
}

// cancel gives the cost back for a retry or hedge that is not sent, and
// clears r: through Cancel, for a quota whose Refund is for retries that
// were sent (quota.Canceler), else through Refund.
func (r *receipt) cancel() {
	if r.cost > 0 {
		if c, ok := r.q.(quota.Canceler); ok {
			c.Cancel(r.scope, r.cost)
		} else {
			r.q.Refund(r.scope, r.cost)
		}
	}
	*r = receipt{}
}

// payment is what the retry quotas were paid for one retry or hedge: a
// receipt of Policy.Quota, in the scope the copy goes to, and one of
// Policy.Budget, in the request's own scope.
type payment struct{ quota, budget receipt }

// refund refunds both receipts, for a retry or hedge that succeeded.
func (p *payment) refund() {
	p.quota.refund()
	p.budget.refund()
}

// cancel cancels both receipts, for a retry or hedge that is not sent.
func (p *payment) cancel() {
	p.quota.cancel()
	p.budget.cancel()
}

// pay takes from the retry quotas what a retry or hedge sent to scope
// after an outcome of kind k costs: Quota's cost in scope, so that a dead
// primary does not drain a healthy secondary's bucket, unless charge is
// false, and Budget's in home, the request's own scope, since it bounds
// what the caller's requests cost in all. It returns the receipts and the
// longest wait the quotas ask for (their refills run at the same time; a
// negative wait counts as none), each receipt keeping its own. When a
// quota refuses, nothing is kept, and refused says which: quota.ErrExceeded
// for Quota, quota.ErrOverBudget for Budget, by the field, whatever the
// value's type.
func (cp *compiled) pay(k classify.Kind, scope, home string, charge bool) (pay payment, wait time.Duration, refused error) {
	if cp.quota != nil && charge {
		cost, w, ok := cp.quota.Acquire(scope, k)
		if !ok {
			return payment{}, 0, quota.ErrExceeded
		}
		pay.quota, wait = receipt{cp.quota, scope, cost, w}, w
	}
	if cp.budget != nil {
		cost, w, ok := cp.budget.Acquire(home, k)
		if !ok {
			pay.cancel()
			return payment{}, 0, quota.ErrOverBudget
		}
		pay.budget, wait = receipt{cp.budget, home, cost, w}, max(wait, w)
	}
	return pay, max(wait, 0), nil
}
