package classify_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/retrytransport/retrytransport/classify"
)

// Status classifies a response by its status code; where the status alone
// does not decide (400, 403, 502, 503), an error code in the body does.
func ExampleStatus() {
	for _, r := range []struct {
		status int
		body   string
	}{
		{200, ""},
		{404, ""},
		{429, ""},
		{500, ""},
		{503, ""},
		{503, `<Error><Code>SlowDown</Code></Error>`},
		{400, `{"__type":"ValidationException"}`},
	} {
		resp := &http.Response{StatusCode: r.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(r.body))}
		o := classify.Status(resp)
		fmt.Printf("%d %-9s retryable=%-5t %q\n", r.status, o.Kind, o.Retryable(), o.Reason)
	}
	// Output:
	// 200 success   retryable=false ""
	// 404 fatal     retryable=false "status not retryable"
	// 429 throttle  retryable=true  "status 429"
	// 500 transient retryable=true  "status 500"
	// 503 transient retryable=true  "status 503"
	// 503 throttle  retryable=true  "error code SlowDown"
	// 400 fatal     retryable=false "status not retryable"
}
