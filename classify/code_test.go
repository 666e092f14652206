package classify_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

// codeBodies are error documents and what CodeFromBody finds in them. The
// fuzz targets use them as seeds.
var codeBodies = []struct {
	body string
	want string
}{
	// JSON __type, plain, namespaced, with a suffix.
	{`{"__type":"ThrottlingException"}`, "ThrottlingException"},
	{`{"__type":"ThrottlingException","message":"Rate exceeded"}`, "ThrottlingException"},
	{`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"m"}`, "ProvisionedThroughputExceededException"},
	{`{"__type":"Throttling:http://internal.amazon.com/coral/com.amazon.coral.availability/"}`, "Throttling"},
	{`{"__type":"aws.protocoltests.restjson#FooError:http://internal.amazon.com/coral/com.amazon.coral.validate/"}`, "FooError"},
	// JSON code and Code, and the order of the keys.
	{`{"code":"Throttling","message":"m"}`, "Throttling"},
	{`{"Code":"SlowDown","Message":"m"}`, "SlowDown"},
	{`{"error":{"code":"Throttling","message":"m"}}`, "Throttling"},
	{`{"code":"A","__type":"B"}`, "B"},
	{`{"Code":"A","code":"B"}`, "B"},
	{`{"code":null,"Code":"SlowDown"}`, "SlowDown"},
	{`{"code":404}`, ""},
	{`{"field":"code","code":"Throttling"}`, "Throttling"},
	// Whitespace.
	{`{ "__type" : "SlowDown" }`, "SlowDown"},
	{"{\n\t\"__type\"\t:\r\n \"SlowDown\"\n}", "SlowDown"},
	{"  \r\n\t{\"code\":\"Throttling\"}\n\n", "Throttling"},
	{`{"code" "Throttling"}`, ""},
	// Strings with escapes are skipped, and so are keys inside them.
	{`{"__type":"Slow\"Down"}`, ""},
	{`{"__type":"Slow\\Down","code":"Throttling"}`, "Throttling"},
	{`{"message":"a \"code\":\"SlowDown\" b"}`, ""},
	{`{"code":"Thrott`, ""},
	// XML <Code>.
	{`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`, "SlowDown"},
	{"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>", "Throttling"},
	{"<Response><Errors><Error><Code>RequestLimitExceeded</Code></Error></Errors></Response>", "RequestLimitExceeded"},
	{"\n  <Error><Code>\n  SlowDown\n</Code></Error>", "SlowDown"},
	{`<Error><Code>SlowDown`, ""},
	{`<Error><Message>no code</Message></Error>`, ""},
	{`<html><body><h1>502 Bad Gateway</h1></body></html>`, ""},
	// No error document.
	{``, ""},
	{" \n\t ", ""},
	{`{"message":"Internal server error"}`, ""},
	{`{}`, ""},
	{`[]`, ""},
	{`Service Unavailable`, ""},
	{`OK`, ""},
}

func TestCodeFromBody(t *testing.T) {
	for _, tt := range codeBodies {
		if got := classify.CodeFromBody([]byte(tt.body)); got != tt.want {
			t.Errorf("CodeFromBody(%q) = %q; want %q", tt.body, got, tt.want)
		}
	}
}

func TestCodeFindsBodyCodes(t *testing.T) {
	for _, tt := range codeBodies {
		if got := classify.Code(newResp(t, 400, tt.body)); got != tt.want {
			t.Errorf("Code(400, %q) = %q; want %q", tt.body, got, tt.want)
		}
	}
}

func TestCodeFromErrorTypeHeader(t *testing.T) {
	tests := []struct {
		header string
		want   string
	}{
		{"ThrottlingException", "ThrottlingException"},
		{"ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/", "ThrottlingException"},
		{" SlowDown ", "SlowDown"},
		{"SlowDown :detail", "SlowDown"},
		{":detail", ""},
	}
	for _, tt := range tests {
		resp := newResp(t, 400, "", "x-amzn-ErrorType", tt.header)
		if got := classify.Code(resp); got != tt.want {
			t.Errorf("Code(x-amzn-ErrorType: %q) = %q; want %q", tt.header, got, tt.want)
		}
	}
}

func TestCodeHeaderWinsOverBody(t *testing.T) {
	body := &countingBody{data: []byte(`{"__type":"ValidationException"}`)}
	resp := newResp(t, 400, "", "X-Amzn-Errortype", "ThrottlingException:http://internal")
	resp.Body = body
	if got, want := classify.Code(resp), "ThrottlingException"; got != want {
		t.Errorf("Code(header ThrottlingException, body ValidationException) = %q; want %q", got, want)
	}
	if body.read != 0 {
		t.Errorf("Code(header ThrottlingException) read %d body bytes; want 0", body.read)
	}
}

func TestCodeNilAndNoBody(t *testing.T) {
	resp := newResp(t, 503, "")
	resp.Body = nil
	if got := classify.Code(resp); got != "" || resp.Body != nil {
		t.Errorf("Code(nil Body) = %q, Body %v; want \"\", nil", got, resp.Body)
	}
	resp.Body = http.NoBody
	if got := classify.Code(resp); got != "" || resp.Body != http.NoBody {
		t.Errorf("Code(http.NoBody) = %q, Body %v; want \"\", http.NoBody", got, resp.Body)
	}
	if got := classify.Status(resp); got.Kind != classify.Transient {
		t.Errorf("Status(503, http.NoBody) = %v; want transient", got.Kind)
	}
}

func TestCodeBeyondMaxPeekIsNotFound(t *testing.T) {
	// doc returns a document of exactly n bytes whose last byte is the
	// closing quote of the code.
	const code = `"__type":"SlowDown"`
	doc := func(n int) string {
		head := `{"message":"`
		tail := `",` + code
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	tests := []struct {
		body string
		want string
		kind classify.Kind // of a 503 with this body
	}{
		{doc(classify.MaxPeek), "SlowDown", classify.Throttle}, // the closing quote is the last peeked byte
		{doc(classify.MaxPeek + 1), "", classify.Transient},    // the closing quote is one byte too far
		{doc(classify.MaxPeek + 1000), "", classify.Transient}, // well beyond
		{doc(classify.MaxPeek+1) + "\n", "", classify.Transient},
		{`{"message":"short","__type":"SlowDown"}`, "SlowDown", classify.Throttle},
	}
	for _, tt := range tests {
		if got := classify.Code(newResp(t, 503, tt.body)); got != tt.want {
			t.Errorf("Code(%d-byte body ending %q) = %q; want %q", len(tt.body), tt.body[len(tt.body)-20:], got, tt.want)
		}
		if got := classify.Status(newResp(t, 503, tt.body)).Kind; got != tt.kind {
			t.Errorf("Status(503, %d-byte body ending %q) = %v; want %v", len(tt.body), tt.body[len(tt.body)-20:], got, tt.kind)
		}
	}
}

func TestCodeReadsAtMostMaxPeekBytes(t *testing.T) {
	for _, n := range []int{0, 1, classify.MaxPeek - 1, classify.MaxPeek, classify.MaxPeek + 1, 1 << 20} {
		body := &countingBody{data: bytes.Repeat([]byte("a"), n)}
		resp := newResp(t, 503, "")
		resp.Body = body
		classify.Code(resp)
		if want := min(n, classify.MaxPeek); body.read != want {
			t.Errorf("Code(%d-byte body) read %d bytes of the original body; want %d", n, body.read, want)
		}
	}
}

// bodyOfSize returns n bytes that differ from position to position, so that
// a reordered or duplicated chunk shows.
func bodyOfSize(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26 + i/26%7)
	}
	if n > 0 {
		copy(b, `{"__type":"SlowDown"}`[:min(n, 21)])
	}
	return b
}

func TestCodeAndStatusRestoreBody(t *testing.T) {
	sizes := []int{0, 1, 21, classify.MaxPeek - 1, classify.MaxPeek, classify.MaxPeek + 1, 2 * classify.MaxPeek, 1 << 20}
	peekers := []struct {
		name string
		fn   func(*http.Response)
	}{
		{"Code", func(r *http.Response) { classify.Code(r) }},
		{"Status", func(r *http.Response) { classify.Status(r) }},
		{"Code twice", func(r *http.Response) { classify.Code(r); classify.Code(r) }},
	}
	for _, p := range peekers {
		for _, n := range sizes {
			want := bodyOfSize(n)
			resp := newResp(t, 503, "")
			resp.Body = io.NopCloser(bytes.NewReader(want))
			p.fn(resp)
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Errorf("%s(%d-byte body), then ReadAll(Body) error = %v; want nil", p.name, n, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s(%d-byte body), then ReadAll(Body) = %d bytes, differing from the original %d", p.name, n, len(got), len(want))
			}
		}
	}
}

func TestCodeRestoredBodyPassesReaderTests(t *testing.T) {
	for _, n := range []int{1, classify.MaxPeek - 1, classify.MaxPeek, 3*classify.MaxPeek + 7} {
		want := bodyOfSize(n)
		resp := newResp(t, 503, "")
		resp.Body = io.NopCloser(bytes.NewReader(want))
		classify.Code(resp)
		if err := iotest.TestReader(resp.Body, want); err != nil {
			t.Errorf("Code(%d-byte body): restored body: %v", n, err)
		}
	}
}

// TestCodeRestoredBodyReturnsReadError: a body that fails, whether with
// an error of its own or with io.ErrUnexpectedEOF, net/http's error for a
// body whose connection was cut short of its Content-Length or in the
// middle of a chunk, and whether the error comes after the last bytes or
// with them, gives the caller every byte and then the same error, again
// on every later Read; never a clean io.EOF.
func TestCodeRestoredBodyReturnsReadError(t *testing.T) {
	errBoom := errors.New("connection lost mid-body")
	for _, readErr := range []error{errBoom, io.ErrUnexpectedEOF} {
		for _, withData := range []bool{false, true} {
			for _, n := range []int{0, 1, 100, classify.MaxPeek - 1, classify.MaxPeek, classify.MaxPeek + 1, 64 << 10} {
				want := bodyOfSize(n)
				resp := newResp(t, 503, "")
				resp.Body = &countingBody{data: want, err: readErr, errWithData: withData}
				classify.Code(resp)
				got, err := io.ReadAll(resp.Body)
				if !bytes.Equal(got, want) {
					t.Errorf("Code(body failing with %q after %d bytes), then ReadAll(Body) = %d bytes, differing from the %d sent", readErr, n, len(got), len(want))
				}
				if err != readErr {
					t.Errorf("Code(body failing with %q after %d bytes), then ReadAll(Body) error = %v; want %v", readErr, n, err, readErr)
				}
				// The error stays: a second read reports it again, not EOF.
				if m, err := resp.Body.Read(make([]byte, 8)); m != 0 || err != readErr {
					t.Errorf("Code(body failing with %q after %d bytes), then Read after the error = %d, %v; want 0, %v", readErr, n, m, err, readErr)
				}
			}
		}
	}
}

// TestStatusOfCutErrorDocument: a failure response whose body was cut is
// classified by what arrived: its status, and an error code only if the
// code arrived whole before the cut. A code cut in the middle is no code.
func TestStatusOfCutErrorDocument(t *testing.T) {
	tests := []struct {
		name   string
		status int
		sent   string
		want   classify.Kind
	}{
		{"503NoCode", 503, `<Error><Message>unavaila`, classify.Transient},
		{"503ThrottlingCode", 503, `<Error><Code>SlowDown</Code><Mess`, classify.Throttle},
		{"503CodeCut", 503, `<Error><Code>SlowDo`, classify.Transient},
		{"400NoCode", 400, `{"message":"Invalid param`, classify.Fatal},
		{"400ThrottlingCode", 400, `{"__type":"ThrottlingException","mess`, classify.Throttle},
		{"400CodeCut", 400, `{"__type":"Throttl`, classify.Fatal},
		{"403TransientCode", 403, `{"code":"RequestTimeout","message":"sl`, classify.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := newResp(t, tt.status, "")
			resp.Body = &countingBody{data: []byte(tt.sent), err: io.ErrUnexpectedEOF}
			if got := classify.Status(resp).Kind; got != tt.want {
				t.Errorf("Status(%d, body %q cut) = %v; want %v", tt.status, tt.sent, got, tt.want)
			}
			got, err := io.ReadAll(resp.Body)
			if string(got) != tt.sent || err != io.ErrUnexpectedEOF {
				t.Errorf("Status(%d, body %q cut), then ReadAll(Body) = %q, %v; want %q, %v", tt.status, tt.sent, got, err, tt.sent, io.ErrUnexpectedEOF)
			}
		})
	}
}

func TestCodeRestoredBodyCloseClosesOriginal(t *testing.T) {
	for _, n := range []int{0, 10, classify.MaxPeek + 10} {
		body := &countingBody{data: bodyOfSize(n)}
		resp := newResp(t, 503, "")
		resp.Body = body
		classify.Code(resp)
		if body.closes != 0 {
			t.Errorf("Code(%d-byte body) closed the original body %d times; want 0", n, body.closes)
		}
		if err := resp.Body.Close(); err != nil {
			t.Errorf("Code(%d-byte body), then Close() = %v; want nil", n, err)
		}
		if body.closes != 1 {
			t.Errorf("Code(%d-byte body), then Close() closed the original %d times; want 1", n, body.closes)
		}
	}
}

func TestThrottlingAndTransientCodesAreAWSs(t *testing.T) {
	got, want := classify.ThrottlingCodes(), slices.Clone(awsThrottlingCodes)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ThrottlingCodes() mismatch with docs/aws.md (-want +got):\n%s", diff)
	}
	got, want = classify.TransientCodes(), slices.Clone(awsTransientCodes)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TransientCodes() mismatch with docs/aws.md (-want +got):\n%s", diff)
	}
}

func TestThrottlingAndTransientCodesReturnCopies(t *testing.T) {
	th := classify.ThrottlingCodes()
	for i := range th {
		th[i] = "Changed"
	}
	tr := classify.TransientCodes()
	for i := range tr {
		tr[i] = "Changed"
	}
	if got := classify.ThrottlingCodes(); slices.Contains(got, "Changed") {
		t.Errorf("ThrottlingCodes() = %q after changing an earlier result; want the original codes", got)
	}
	if got := classify.TransientCodes(); slices.Contains(got, "Changed") {
		t.Errorf("TransientCodes() = %q after changing an earlier result; want the original codes", got)
	}
	resp := newResp(t, 400, `{"__type":"SlowDown"}`)
	if got := classify.Status(resp).Kind; got != classify.Throttle {
		t.Errorf("Status(400, SlowDown) = %v after changing ThrottlingCodes()' result; want throttle", got)
	}
}

// AWS SDKs sanitize the error-type header as they do the body's __type
// (aws-sdk-go-v2 restjson.SanitizeErrorCode): cut at the first ':', then
// keep what follows the first '#'.
func TestCodeErrorTypeHeaderNamespaceIsStripped(t *testing.T) {
	for _, header := range []string{
		"aws.protocoltests.restjson#ThrottlingException",
		"aws.protocoltests.restjson#ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/",
	} {
		resp := newResp(t, 400, "", "x-amzn-ErrorType", header)
		if got, want := classify.Code(resp), "ThrottlingException"; got != want {
			t.Errorf("Code(x-amzn-ErrorType: %q) = %q; want %q", header, got, want)
		}
		resp = newResp(t, 400, "", "x-amzn-ErrorType", header)
		if got := classify.Status(resp).Kind; got != classify.Throttle {
			t.Errorf("Status(400, x-amzn-ErrorType: %q) = %v; want throttle", header, got)
		}
	}
}

// The suffix is cut at the first ':' before the namespace is looked for, so
// a '#' inside the suffix (a URL fragment) is not taken for the namespace.
func TestCodeFromBodySuffixIsCutBeforeNamespace(t *testing.T) {
	body := `{"__type":"ns#ThrottlingException:http://internal.amazon.com/x#y"}`
	if got, want := classify.CodeFromBody([]byte(body)), "ThrottlingException"; got != want {
		t.Errorf("CodeFromBody(%q) = %q; want %q", body, got, want)
	}
}
