package retrytransport_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/breaker"
	"github.com/retrytransport/retrytransport/concurrency"
	"github.com/retrytransport/retrytransport/policy"
)

// The happy path: the first attempt succeeds. Each benchmark runs the bare
// pooled transport and the retrying Transport over it against the same
// loopback server, so their ratio is measured in one run
// (make bench; compare with benchstat or by eye).

func benchServer(b *testing.B) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchClients(b *testing.B) map[string]*http.Client {
	b.Helper()
	bare := cleanhttp.DefaultPooledTransport()
	wrapped := cleanhttp.DefaultPooledTransport()
	b.Cleanup(bare.CloseIdleConnections)
	b.Cleanup(wrapped.CloseIdleConnections)
	return map[string]*http.Client{
		"bare":           {Transport: bare},
		"retrytransport": {Transport: retrytransport.New(wrapped)},
	}
}

func benchDo(b *testing.B, c *http.Client, newReq func() *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Do(newReq())
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkHappyPath(b *testing.B) {
	srv := benchServer(b)
	payload := bytes.Repeat([]byte("x"), 1024)
	reqs := map[string]func() *http.Request{
		"GET": func() *http.Request { r, _ := http.NewRequest("GET", srv.URL, nil); return r },
		"PUT1KiB": func() *http.Request {
			r, _ := http.NewRequest("PUT", srv.URL, bytes.NewReader(payload)) // sets GetBody
			return r
		},
		"POST1KiB": func() *http.Request {
			r, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(payload))
			return r
		},
	}
	for _, op := range []string{"GET", "PUT1KiB", "POST1KiB"} {
		clients := benchClients(b)
		for _, name := range []string{"bare", "retrytransport"} {
			b.Run(op+"/"+name, func(b *testing.B) { benchDo(b, clients[name], reqs[op]) })
		}
	}
}

// stubTransport answers every request with one shared response, so that
// BenchmarkOverhead measures the retrying Transport's own cost per request,
// without the network's noise.
type stubTransport struct{ resp http.Response }

func (s *stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &s.resp, nil
}

func BenchmarkOverhead(b *testing.B) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	get, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	post, _ := http.NewRequest("POST", "http://api.example.com/", http.NoBody)
	// A request as SDKs send it, with headers the transport looks among
	// for an SDK's attempt mark.
	headers, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	headers.Header.Set("Accept", "application/json")
	headers.Header.Set("Authorization", "Bearer token")
	headers.Header.Set("User-Agent", "sdk/1.0")
	// A request with rules of its own, the same RequestPolicy reused.
	own := get.WithContext(retrytransport.WithRequestPolicy(context.Background(), retrytransport.NewRequestPolicy(policy.Policy{MaxAttempts: 5})))
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
		req  *http.Request
	}{
		{"GET/bare", stub, get},
		{"GET/retrytransport", retrytransport.New(stub), get},
		{"GET/retrytransport+finalobserver", retrytransport.New(stub, retrytransport.WithFinalObserver(func(retrytransport.Event) {})), get},
		{"GETHeaders/bare", stub, headers},
		{"GETHeaders/retrytransport", retrytransport.New(stub), headers},
		{"GET/retrytransport+breaker", retrytransport.New(stub, retrytransport.WithPolicy(withBreaker())), get},
		{"GET/retrytransport+concurrency", retrytransport.New(stub, retrytransport.WithPolicy(withConcurrency())), get},
		{"GET/retrytransport+requestpolicy", retrytransport.New(stub), own},
		{"POST/bare", stub, post},
		{"POST/retrytransport", retrytransport.New(stub), post},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.rt.RoundTrip(tc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHappyPathAllocatesNothing: a GET whose first attempt succeeds costs
// no allocation over the base transport, whatever else the transport
// learned to do; BenchmarkOverhead measures its time.
func TestHappyPathAllocatesNothing(t *testing.T) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	get, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	tr := retrytransport.New(stub)
	if n := testing.AllocsPerRun(1000, func() { tr.RoundTrip(get) }); n != 0 {
		t.Errorf("RoundTrip(GET) on the happy path: %v allocations; want 0", n)
	}
}

// BenchmarkOverheadHostPolicy is BenchmarkOverhead's GET through a
// Transport with an exact and a wildcard host policy, for hostnames with
// and without the trailing dot. Finding the policy must not allocate.
func BenchmarkOverheadHostPolicy(b *testing.B) {
	stub := &stubTransport{resp: http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}}
	tr := retrytransport.New(stub,
		retrytransport.WithHostPolicy("api.example.com", policy.Standard()),
		retrytransport.WithHostPolicy("*.example.com", policy.Standard()),
	)
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"GET/exact", "http://api.example.com/"},
		{"GET/exactFQDN", "http://api.example.com./"},
		{"GET/wildcardFQDN", "http://a.example.com./"},
		{"GET/default", "http://elsewhere.org/"},
	} {
		req, err := http.NewRequest("GET", tc.url, nil)
		if err != nil {
			b.Fatalf("http.NewRequest(GET, %q): %v", tc.url, err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// withBreaker is the Standard policy with a circuit breaker.
func withBreaker() policy.Policy {
	p := policy.Standard()
	p.Breaker = &breaker.Circuit{}
	return p
}

// withConcurrency is the Standard policy with an adaptive concurrency limit.
func withConcurrency() policy.Policy {
	p := policy.Standard()
	p.Concurrency = &concurrency.Adaptive{}
	return p
}
