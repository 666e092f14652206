package classify_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

// malformedRequest is an Outcome that Error gives a request net/http refuses
// to send.
func malformedRequest(reason string) classify.Outcome {
	return classify.Outcome{Kind: classify.Fatal, Reason: "malformed request: " + reason}
}

// errBroken stands in for the transport error of a malformed request: Error
// must judge by the request, whatever error net/http reported.
var errBroken = io.ErrUnexpectedEOF

// malformedRequests changes a well-formed request into one net/http refuses
// to send, one way per rule of Error.
var malformedRequests = []struct {
	name   string
	modify func(r *http.Request)
	reason string
}{
	{"HeaderNameWithSpace", func(r *http.Request) { r.Header["Bad Name"] = []string{"x"} }, "invalid header field name"},
	{"HeaderNameEmpty", func(r *http.Request) { r.Header[""] = []string{"x"} }, "invalid header field name"},
	{"HeaderNameWithColon", func(r *http.Request) { r.Header["X:Y"] = []string{"x"} }, "invalid header field name"},
	{"HeaderNameWithNewline", func(r *http.Request) { r.Header["X\nY"] = []string{"x"} }, "invalid header field name"},
	{"HeaderNameNonASCII", func(r *http.Request) { r.Header["X-Café"] = []string{"x"} }, "invalid header field name"},
	{"HeaderNamePseudo", func(r *http.Request) { r.Header[":protocol"] = []string{"websocket"} }, "invalid header field name"},
	{"HeaderValueWithLF", func(r *http.Request) { r.Header.Set("X-Id", "a\nb") }, "invalid header field value"},
	{"HeaderValueWithCR", func(r *http.Request) { r.Header.Set("X-Id", "a\rb") }, "invalid header field value"},
	{"HeaderValueWithNUL", func(r *http.Request) { r.Header.Set("X-Id", "a\x00b") }, "invalid header field value"},
	{"HeaderValueWithDEL", func(r *http.Request) { r.Header.Set("X-Id", "a\x7fb") }, "invalid header field value"},
	{"HeaderSecondValueBad", func(r *http.Request) { r.Header["X-Id"] = []string{"ok", "b\x01"} }, "invalid header field value"},
	{"TrailerNameWithSpace", func(r *http.Request) { r.Trailer = http.Header{"Bad Name": {"x"}} }, "invalid trailer field name"},
	{"TrailerValueWithLF", func(r *http.Request) { r.Trailer = http.Header{"X-Sum": {"a\nb"}} }, "invalid trailer field value"},
	{"NilHeader", func(r *http.Request) { r.Header = nil }, "nil Header"},
	{"MethodWithSpace", func(r *http.Request) { r.Method = "GE T" }, "invalid method"},
	{"MethodWithNewline", func(r *http.Request) { r.Method = "GET\n" }, "invalid method"},
	{"MethodWithSeparator", func(r *http.Request) { r.Method = "GET/1" }, "invalid method"},
	{"MethodNonASCII", func(r *http.Request) { r.Method = "GÉT" }, "invalid method"},
	{"ControlCharacterInQuery", func(r *http.Request) { r.URL.RawQuery = "q=a\x01b" }, "control character in URL"},
	{"DELInQuery", func(r *http.Request) { r.URL.RawQuery = "q=\x7f" }, "control character in URL"},
	{"ControlCharacterInOpaque", func(r *http.Request) { r.URL.Opaque = "/a\nb" }, "control character in URL"},
	{"ContentLengthWithNilBody", func(r *http.Request) { r.ContentLength = 5 }, "ContentLength with nil Body"},
	{"UnknownContentLengthWithNilBody", func(r *http.Request) { r.ContentLength = -1 }, "ContentLength with nil Body"},
}

func TestErrorOfMalformedRequestIsFatal(t *testing.T) {
	for _, tt := range malformedRequests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, "GET")
			tt.modify(req)
			got := classify.Error(req, errBroken)
			if diff := cmp.Diff(malformedRequest(tt.reason), got); diff != "" {
				t.Errorf("Error(%s request, %v) mismatch (-want +got):\n%s", tt.name, errBroken, diff)
			}
		})
	}
}

// Requests at the edge of what net/http accepts: their transport errors are
// classified as before.
func TestErrorOfWellFormedEdgeRequestIsNotMalformed(t *testing.T) {
	tests := []struct {
		name   string
		url    string
		modify func(r *http.Request)
	}{
		{"HeaderValueWithTab", "https://example.com/", func(r *http.Request) { r.Header.Set("X-Id", "a\tb") }},
		{"HeaderValueWithSpaces", "https://example.com/", func(r *http.Request) { r.Header.Set("X-Id", " a b ") }},
		{"HeaderValueEmpty", "https://example.com/", func(r *http.Request) { r.Header.Set("X-Id", "") }},
		{"HeaderValueUTF8", "https://example.com/", func(r *http.Request) { r.Header.Set("X-Name", "Zoë café") }},
		{"HeaderNameEveryTokenByte", "https://example.com/", func(r *http.Request) { r.Header["!#$%&'*+-.^_`|~09AZaz"] = []string{"x"} }},
		{"HeaderNoValues", "https://example.com/", func(r *http.Request) { r.Header["X-Empty"] = nil }},
		{"TrailerWellFormed", "https://example.com/", func(r *http.Request) { r.Trailer = http.Header{"X-Sum": {"abc"}} }},
		{"EmptyMethodMeansGET", "https://example.com/", func(r *http.Request) { r.Method = "" }},
		{"ExtensionMethod", "https://example.com/", func(r *http.Request) { r.Method = "M-SEARCH" }},
		{"IPv6Host", "https://[2001:db8::1]:8443/x", func(*http.Request) {}},
		{"IPv6HostWithZone", "http://[fe80::1%25eth0]:8080/", func(*http.Request) {}},
		{"PercentEncodedPathAndQuery", "https://example.com/a%20b/%E2%82%AC?q=%0A%00&r=a+b", func(*http.Request) {}},
		{"PercentEncodedNewlineInPath", "https://example.com/a%0Ab", func(*http.Request) {}},
		{"ControlCharacterInPathIsEscaped", "https://example.com/", func(r *http.Request) { r.URL.Path = "/a\nb" }},
		{"EmptyQueryForced", "https://example.com/?", func(*http.Request) {}},
		{"HostHeaderWithPort", "https://example.com/", func(r *http.Request) { r.Host = "example.com:8443" }},
		{"HostHeaderIPv6WithPort", "https://example.com/", func(r *http.Request) { r.Host = "[::1]:8080" }},
		{"HostHeaderNonASCII", "https://example.com/", func(r *http.Request) { r.Host = "bücher.example" }},
		// net/http sends an invalid Host over HTTP/1 without a proxy, as an
		// empty one, which clients of Unix sockets rely on: not malformed.
		{"HostHeaderSocketPath", "http://example.com/", func(r *http.Request) { r.Host = "/var/run/app.sock" }},
		{"HostHeaderWithSpace", "http://example.com/", func(r *http.Request) { r.Host = "example.com evil" }},
		{"ContentLengthWithBody", "https://example.com/", func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader("hello")), 5
		}},
		{"UnknownContentLengthWithBody", "https://example.com/", func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader("hello")), -1
		}},
		{"ZeroContentLengthNilBody", "https://example.com/", func(r *http.Request) { r.ContentLength = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tt.url, nil)
			if err != nil {
				t.Fatalf("http.NewRequest(GET, %q) failed: %v", tt.url, err)
			}
			tt.modify(req)
			got := classify.Error(req, errBroken)
			if diff := cmp.Diff(transient, got, ignoreReason); diff != "" || strings.HasPrefix(got.Reason, "malformed") {
				t.Errorf("Error(%s request, %v) = %+v; want a transient connection error (-want +got):\n%s", tt.name, errBroken, got, diff)
			}
		})
	}
}

// Cancellation and an unusable URL are told first, as they were before
// requests were checked for being malformed.
func TestErrorOfMalformedRequestKeepsEarlierRules(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cancelled := newReq(t, "GET").WithContext(ctx)
	cancelled.Header.Set("X-Id", "a\nb")
	if got, want := classify.Error(cancelled, context.Canceled), (classify.Outcome{Kind: classify.Fatal, Reason: "canceled"}); got != want {
		t.Errorf("Error(cancelled request with a bad header, context.Canceled) = %+v; want %+v", got, want)
	}
	noHost := newReq(t, "GET")
	noHost.URL.Host = ""
	noHost.Header.Set("X-Id", "a\nb")
	if got, want := classify.Error(noHost, errBroken), (classify.Outcome{Kind: classify.Fatal, Reason: "invalid URL"}); got != want {
		t.Errorf("Error(request without a host and with a bad header, %v) = %+v; want %+v", errBroken, got, want)
	}
}

func TestErrorOfMalformedRequestAllocatesNothing(t *testing.T) {
	for _, tt := range malformedRequests {
		req := newReq(t, "GET")
		req.Header.Set("Accept", "*/*")
		tt.modify(req)
		allocs := testing.AllocsPerRun(100, func() {
			if o := classify.Error(req, errBroken); o.Kind != classify.Fatal {
				t.Fatalf("Error(%s request, %v) = %v; want fatal", tt.name, errBroken, o.Kind)
			}
		})
		if allocs != 0 {
			t.Errorf("Error(%s request, %v) allocates %v times per call; want 0", tt.name, errBroken, allocs)
		}
	}
}

// The tests below classify the errors net/http itself returns for malformed
// requests. Each is a plain errors.New or fmt.Errorf value, so the request
// is the only way to tell it from a broken connection.

// countingServer starts an HTTP/1.1 test server on 127.0.0.1 and returns
// it with the count of requests its handler saw.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestErrorOfRealMalformedRequestIsFatal(t *testing.T) {
	srv, hits := countingServer(t)
	direct := &http.Transport{}
	t.Cleanup(direct.CloseIdleConnections)

	tests := []struct {
		name   string
		tr     http.RoundTripper
		modify func(r *http.Request)
		reason string
	}{
		{"HeaderName", direct, func(r *http.Request) { r.Header["Bad Name"] = []string{"x"} }, "invalid header field name"},
		{"HeaderValue", direct, func(r *http.Request) { r.Header.Set("X-Id", "a\nb") }, "invalid header field value"},
		{"TrailerName", direct, func(r *http.Request) { r.Trailer = http.Header{"Bad Name": {"x"}} }, "invalid trailer field name"},
		{"TrailerValue", direct, func(r *http.Request) { r.Trailer = http.Header{"X-Sum": {"a\x00"}} }, "invalid trailer field value"},
		{"NilHeader", direct, func(r *http.Request) { r.Header = nil }, "nil Header"},
		{"Method", direct, func(r *http.Request) { r.Method = "GE T" }, "invalid method"},
		{"ControlCharacterInQuery", direct, func(r *http.Request) { r.URL.RawQuery = "q=\x01" }, "control character in URL"},
		{"ControlCharacterInOpaque", direct, func(r *http.Request) { r.URL.Opaque = "/a\x7fb" }, "control character in URL"},
		{"ContentLengthWithNilBody", direct, func(r *http.Request) { r.ContentLength = 5 }, "ContentLength with nil Body"},
		{"UnknownContentLengthWithNilBody", direct, func(r *http.Request) { r.ContentLength = -1 }, "ContentLength with nil Body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+"/resource", nil)
			if err != nil {
				t.Fatalf("http.NewRequest(GET, %s) failed: %v", srv.URL, err)
			}
			tt.modify(req)
			before := hits.Load()
			resp, err := tt.tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("RoundTrip(%s request) succeeded; want net/http to refuse it", tt.name)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("RoundTrip(%s request) reached the handler %d times; want 0", tt.name, n)
			}
			got := classify.Error(req, err)
			if diff := cmp.Diff(malformedRequest(tt.reason), got); diff != "" {
				t.Errorf("Error(%s request, %q) mismatch (-want +got):\n%s", tt.name, err, diff)
			}
		})
	}
}

// A well-formed request at the edge of the rules keeps its connection
// errors retryable: a refused connection and a server that hangs up.
func TestErrorOfRealConnectionErrorOfWellFormedRequestIsNotFatal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen failed: %v", err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	}))
	defer hangUp.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	edge := func(r *http.Request) {
		r.Method = "" // GET
		r.Host = "example.com:8443"
		r.Header.Set("X-Id", "a\tb")
	}
	tests := []struct {
		name string
		url  string
		want classify.Outcome
	}{
		{"ClosedListener", "http://" + closedAddr + "/a%20b?q=%0A", unprocessed},
		{"ServerHangsUp", hangUp.URL + "/a%20b?q=%0A", transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tt.url, nil)
			if err != nil {
				t.Fatalf("http.NewRequest(GET, %q) failed: %v", tt.url, err)
			}
			edge(req)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Skipf("RoundTrip(GET %s) succeeded; want a connection error", tt.url)
			}
			got := classify.Error(req, err)
			if diff := cmp.Diff(tt.want, got, ignoreReason); diff != "" {
				t.Errorf("Error(GET %s, %q) mismatch (-want +got):\n%s", tt.url, err, diff)
			}
		})
	}
}
