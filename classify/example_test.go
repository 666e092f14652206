package classify_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/retrytransport/retrytransport/classify"
)

func ExampleDefault() {
	req, _ := http.NewRequest("GET", "https://bucket.s3.amazonaws.com/key", nil)
	body := `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Header:     http.Header{"Content-Type": {"application/xml"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}

	out := classify.Default(req, resp, nil)
	fmt.Println(out.Kind, out.Reason, out.Unprocessed, out.Retryable())

	// The body is still whole for the caller.
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(len(b) == len(body))
	// Output:
	// throttle error code SlowDown true true
	// true
}

func ExampleIsIdempotent() {
	get, _ := http.NewRequest("GET", "https://example.com/orders/1", nil)
	post, _ := http.NewRequest("POST", "https://example.com/orders", strings.NewReader(`{"item":1}`))
	fmt.Println(classify.IsIdempotent(get), classify.IsIdempotent(post))

	post.Header.Set("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
	fmt.Println(classify.IsIdempotent(post))
	// Output:
	// true false
	// true
}

// A Classifier adds an API's own codes and statuses to the default rules.
func ExampleClassifier() {
	c := classify.Classifier{
		ThrottlingCodes: []string{"RateLimited"}, // this API's throttling code, in any 4xx
		FatalStatuses:   []int{500},              // this API's 500s never heal
	}
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	for _, r := range []struct {
		status int
		body   string
	}{{422, `{"code":"RateLimited"}`}, {500, ""}, {503, ""}} {
		resp := &http.Response{StatusCode: r.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(r.body))}
		o := c.Classify(req, resp, nil)
		fmt.Println(r.status, o.Kind, o.Reason)
	}
	// Output:
	// 422 throttle error code RateLimited
	// 500 fatal status not retryable
	// 503 transient status 503
}
