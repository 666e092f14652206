package classify

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A Classifier with extra codes finds the code once: the body is wrapped
// by one peek, not by a peek of a peek.
func TestClassifierPeeksOnce(t *testing.T) {
	orig := io.NopCloser(strings.NewReader(`<Error><Code>SlowDown</Code></Error>`))
	resp := &http.Response{StatusCode: 503, Header: http.Header{}, Body: orig}
	req, _ := http.NewRequest("GET", "http://x.example/", nil)
	o := Classifier{TransientCodes: []string{"Other"}}.Classify(req, resp, nil)
	if o.Kind != Throttle {
		t.Errorf("Classify(503 SlowDown) = %v; want throttle", o.Kind)
	}
	pb, ok := resp.Body.(*peekedBody)
	if !ok || pb.closer != orig {
		t.Errorf("resp.Body = %T wrapping %T; want one *peekedBody around the original", resp.Body, pb)
	}
}
