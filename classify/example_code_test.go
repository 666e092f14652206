package classify_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/retrytransport/retrytransport/classify"
)

// Code reads a service's error code from a response, here the "__type" of
// a JSON error document (with its namespace), and leaves the body whole
// for the caller. A 400 with a throttling code is a Throttle, not Fatal.
func ExampleCode() {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`
	resp := &http.Response{
		StatusCode: http.StatusBadRequest,
		Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}

	code := classify.Code(resp)
	fmt.Println(code, slices.Contains(classify.ThrottlingCodes(), code))
	out := classify.Status(resp)
	fmt.Println(out.Kind, out.Reason, out.Unprocessed)

	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b) == body)
	// Output:
	// ThrottlingException true
	// throttle error code ThrottlingException true
	// true
}

// CodeFromBody is the body half of Code, for bytes already read: a JSON
// "__type" or "code" member, or an XML <Code> element.
func ExampleCodeFromBody() {
	for _, b := range []string{
		`{"__type":"ThrottlingException"}`,
		`{"code":"RequestLimitExceeded","message":"slow down"}`,
		`<Error><Code>SlowDown</Code></Error>`,
		`{"message":"no code here"}`,
	} {
		fmt.Printf("%q\n", classify.CodeFromBody([]byte(b)))
	}
	// Output:
	// "ThrottlingException"
	// "RequestLimitExceeded"
	// "SlowDown"
	// ""
}
