package classify

import "net/http"

// Default classifies one attempt by the rules of AWS standard retry mode
// (docs/aws.md), the classification a policy uses when it sets none. It
// is a Func: a transport error goes to Error, a response to Status. It is
// safe for concurrent use.
func Default(req *http.Request, resp *http.Response, err error) Outcome {
	if err != nil {
		return Error(req, err)
	}
	return Status(resp)
}
