package classify

import "net/http"

// Standard is the default classification of AWS standard retry mode
// (docs/aws.md), usable as a Func: a transport error goes to Error, a
// response to Status. It is safe for concurrent use.
func Standard(req *http.Request, resp *http.Response, err error) Outcome {
	if err != nil {
		return Error(req, err)
	}
	return Status(resp)
}
