package classify_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/retrytransport/retrytransport/classify"
)

func ExampleStandard() {
	req, _ := http.NewRequest("GET", "https://bucket.s3.amazonaws.com/key", nil)
	body := `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Header:     http.Header{"Content-Type": {"application/xml"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}

	out := classify.Standard(req, resp, nil)
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
