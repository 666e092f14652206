package classify

import (
	"net/http"
	"slices"
	"strconv"
)

// Rule classifies one attempt, or abstains by returning ok false so that
// the next rule, and in the end the default, decides. A Rule sees what a
// Func sees and has the same duties: it may read a bounded prefix of
// resp.Body but must leave the body readable from the start (Code does).
type Rule func(req *http.Request, resp *http.Response, err error) (o Outcome, ok bool)

// Classifier is Default extended with a caller's own rules, error codes
// and status codes, without re-implementing the default. Its zero value
// classifies exactly as Default. Use its Classify method as a Func, for
// example as policy.Policy.Classify:
//
//	Classify: classify.Classifier{ThrottlingCodes: []string{"Busy"}}.Classify
//
// The order is: Rules, first definite answer wins; then the extra status
// codes; then the extra error codes, found by Code in any response of 400
// or more; then Default. A Classifier is a plain value; do not modify its
// slices while it is in use.
type Classifier struct {
	// Rules are consulted first, in order.
	Rules []Rule
	// ThrottlingStatuses and TransientStatuses are extra status codes that
	// are a Throttle (the server did not process the request) or
	// Transient; FatalStatuses are never retried, even those Default
	// retries (a 500 from an API known to fail for good, say).
	ThrottlingStatuses, TransientStatuses, FatalStatuses []int
	// ThrottlingCodes and TransientCodes are extra service error codes, in
	// the forms Code reads, that make any response of 400 or more a
	// Throttle or Transient.
	ThrottlingCodes, TransientCodes []string
}

// Classify classifies one attempt as the Classifier says. It is a Func.
func (c Classifier) Classify(req *http.Request, resp *http.Response, err error) Outcome {
	for _, r := range c.Rules {
		if o, ok := r(req, resp, err); ok {
			return o
		}
	}
	if err != nil || resp == nil {
		return Default(req, resp, err)
	}
	s := resp.StatusCode
	switch {
	case slices.Contains(c.FatalStatuses, s):
		return Outcome{Kind: Fatal, Reason: "status not retryable"}
	case slices.Contains(c.ThrottlingStatuses, s):
		return Outcome{Kind: Throttle, Reason: "status " + strconv.Itoa(s), Unprocessed: true}
	case slices.Contains(c.TransientStatuses, s):
		return Outcome{Kind: Transient, Reason: "status " + strconv.Itoa(s)}
	}
	lc := lazyCode{resp: resp}
	if s >= 400 && (len(c.ThrottlingCodes) > 0 || len(c.TransientCodes) > 0) {
		switch code := lc.get(); {
		case code == "":
		case slices.Contains(c.ThrottlingCodes, code):
			return Outcome{Kind: Throttle, Reason: "error code " + code, Unprocessed: true}
		case slices.Contains(c.TransientCodes, code):
			return Outcome{Kind: Transient, Reason: "error code " + code}
		}
	}
	return verdicts(&lc) // Default, reusing the code already found

}
