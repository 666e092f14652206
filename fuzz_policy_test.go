package retrytransport_test

// Fuzzing: policies loaded from any JSON send requests without panicking
// or hanging.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// A policy that Load or LoadMap accepts must work in a Transport: whatever
// its numbers (huge durations and counts, tiny windows, hedges, endpoints,
// penalties), no request through it panics or hangs, and each ends with a
// response or an error, never both or neither. The base transport answers
// from a script, and the clock's Sleep returns at once, so a request ends
// within its context's deadline however long the policy would wait.

// roundTripDeadline bounds each request of FuzzPolicyRoundTrip; a request
// still running hangDeadline later has hung.
const (
	roundTripDeadline = 200 * time.Millisecond
	hangDeadline      = 10 * time.Second
)

// fuzzEdgeDocuments are policy and map documents at the edges of what Load
// and LoadMap accept. In a document, FuzzPolicyRoundTrip replaces $n with
// its number n and $d with n as a duration, so that the fuzzer tries
// numbers without having to spell them; each document comes with a seed
// n.
var fuzzEdgeDocuments = []struct {
	doc string
	n   int64
}{
	{`{}`, 0},
	{`{"maxAttempts": 1}`, 0},
	{`{"maxAttempts": $n}`, 1 << 20},
	{`{"maxAttempts": 50, "backoff": {"type": "constant", "interval": "2562047h47m16.854775807s"}}`, 0},
	{`{"maxAttempts": 5, "backoff": {"type": "constant", "interval": "$d"}, "maxTotalWait": "$d"}`, int64(time.Second)},
	{`{"maxAttempts": 4, "maxDelay": "2562047h47m16.854775807s", "serverDelay": {"bound": "2562047h"}, "maxTotalTime": "2562047h"}`, 0},
	{`{"maxAttempts": 4, "maxDelay": "$d", "serverDelay": {"bound": "$d"}}`, int64(time.Minute)},
	{`{"maxAttempts": 4, "maxTotalWait": "1ns", "terminationBuffer": "2562047h"}`, 0},
	{`{"maxAttempts": 4, "maxTotalTime": "$d", "terminationBuffer": "$d"}`, int64(time.Second)},
	{`{"maxAttempts": 4, "attemptTimeout": "1ns", "readTimeout": "1ns", "maxDrain": 1}`, 0},
	{`{"maxAttempts": 4, "attemptTimeout": "$d", "readTimeout": "$d", "maxDrain": $n}`, int64(time.Millisecond)},
	{`{"maxAttempts": 4, "serverDelay": {"headers": "none"}, "retryNonIdempotent": true, "maxBodyBuffer": 1}`, 0},
	{`{"maxAttempts": 6, "serverDelay": {"headers": "all"}, "throttleBackoff": {"type": "decorrelated", "base": "1ns", "max": "1ns"}}`, 0},
	{`{"maxAttempts": 6, "throttleBackoff": {"type": "exponential", "minBackoff": "$d", "maxBackoff": "$d", "deltaBackoff": "$d"}}`, int64(time.Second)},
	{`{"maxAttempts": 5, "backoff": {"type": "schedule", "numRetries": 4, "numNoDelayRetries": 4}}`, 0},
	{`{"maxAttempts": 5, "backoff": {"type": "schedule", "minDelay": "$d", "maxDelay": "$d", "numRetries": $n, "backoffFunction": "exponential"}}`, 3},
	{`{"maxAttempts": 5, "quota": {"capacity": 9223372036854775807, "retryCost": 9223372036854775807, "timeoutCost": 0, "successIncrement": 9223372036854775807}}`, 0},
	{`{"maxAttempts": 5, "quota": {"capacity": 1, "retryCost": 5, "wait": true, "refillPerSecond": 1e-300}}`, 0},
	{`{"maxAttempts": 5, "quota": {"capacity": $n, "retryCost": $n, "wait": true, "refillPerSecond": 1}, "backoff": {"type": "constant", "interval": "$d"}}`, 5},
	{`{"maxAttempts": 5, "quota": "none", "budget": {"ratio": 0.5}}`, 0},
	{`{"maxAttempts": 5, "budget": {"ratio": 1e308, "minPerSecond": -1, "window": "1s", "maxScopes": 1}}`, 0},
	{`{"maxAttempts": 5, "budget": {"ratio": 0.5, "window": "$d", "maxScopes": $n}}`, 10},
	{`{"budget": {"window": "1ns"}}`, 0},
	{`{"maxAttempts": 5, "budget": {"window": "5ns"}}`, 0},
	{`{"maxAttempts": 5, "limiter": {"maxWait": "1ns", "failFast": true, "maxScopes": 1}}`, 0},
	{`{"maxAttempts": 5, "limiter": {"beta": 0.999, "scale": 1e-300, "minFillRate": 1e-300, "smoothing": 1}}`, 0},
	{`{"maxAttempts": 5, "limiter": {"maxWait": "$d", "maxScopes": $n}}`, int64(time.Second)},
	{`{"maxAttempts": 2, "limiter": {"throttleRetries": 100}, "maxDelay": "$d"}`, int64(time.Hour)},
	{`{"maxAttempts": 5, "rateLimit": {"rate": 1e-300, "burst": 1, "maxWait": "2562047h"}}`, 0},
	{`{"maxAttempts": 5, "rateLimit": {"rate": 1e300, "burst": 9223372036854775807, "failFast": true}}`, 0},
	{`{"maxAttempts": 5, "rateLimit": {"rate": $n, "burst": $n, "maxWait": "$d"}}`, 1},
	{`{"maxAttempts": 5, "breaker": {"failures": 1, "stalls": 1, "stallFor": "1ns", "openFor": "1ns", "maxOpenFor": "1ns", "probes": 1, "probeLease": "1ns", "maxScopes": 1}}`, 0},
	{`{"maxAttempts": 5, "breaker": {"trips": ["timeout"], "failures": $n, "openFor": "$d"}, "concurrency": {"type": "fixed", "max": $n, "maxWait": "$d"}}`, 2},
	{`{"maxAttempts": 5, "concurrency": {"type": "adaptive", "initial": 1, "min": 1, "max": 1, "maxWait": "1ns", "maxScopes": 1}}`, 0},
	{`{"maxAttempts": 5, "concurrency": {"type": "adaptive", "initial": $n, "tolerance": 1e300, "backoff": 1e-300, "maxWait": "$d"}}`, 100},
	{`{"maxAttempts": 5, "hedge": {"delay": "1ns", "maxHedges": 3}}`, 0},
	{`{"maxAttempts": 5, "hedge": {"delay": "1ns", "maxHedges": 9223372036854775807}}`, 0},
	{`{"maxAttempts": 5, "hedge": {"delay": "$d", "maxHedges": $n}}`, 2},
	{`{"maxAttempts": 5, "hedge": {"quantile": 0.5, "minDelay": "$d"}}`, 1},
	{`{"maxAttempts": 6, "failover": {"endpoints": ["b.example.com", "https://[::1]:8443", "10.0.0.1:65535"], "mode": "secondaryThenPrimary", "methods": ["GET", "PUT", "POST"]}}`, 0},
	{`{"maxAttempts": 6, "failover": {"endpoints": ["b.example.com"], "mode": "secondaryOnly"}, "hedge": {"delay": "1ns", "maxHedges": 2}}`, 0},
	{`{"maxAttempts": 5, "penalty": {"statuses": [503, 429], "codes": ["ThrottlingException"], "delay": "2562047h", "for": "2562047h"}}`, 0},
	{`{"maxAttempts": 5, "penalty": {"statuses": [503], "delay": "$d", "for": "$d"}}`, int64(10 * time.Second)},
	{`{"maxAttempts": 5, "maxTotalWait": "1m", "penalty": {"statuses": [503], "delay": "2562047h", "for": "1h"}}`, 0},
	{`{"maxAttempts": 5, "classifier": {"throttlingStatuses": [503], "fatalStatuses": [429], "throttlingCodes": ["ThrottlingException"]}}`, 0},
	{`{"maxAttempts": 5, "attemptHeader": "X-Attempt", "ignoreSDKAttempts": true}`, 0},
	{`{"default": {"maxAttempts": $n}, "hosts": {"*.example.com": {"preset": "none"}, "127.0.0.1": {"maxAttempts": 4, "hedge": {"delay": "1ns"}}, "api.example.com": {"preset": "adaptive"}}}`, 2},
}

// fuzzScripts are seed scripts of the base transport's answers, one byte
// per call (see scriptedBase).
var fuzzScripts = [][]byte{
	{0},
	{1, 2, 3, 4, 5, 6, 0},
	{8, 9, 10, 11, 3, 3, 6, 6, 1},
	{1 + 7*30, 2 + 7*16, 4, 1 + 7*36},
}

// FuzzPolicyRoundTrip loads a policy (or a Map) from JSON, with $n and $d
// standing for n (see fuzzEdgeDocuments), and sends a few requests through a Transport that uses it, against a base transport that
// answers from script, with a clock whose Sleep returns at once. It checks
// that no request panics or hangs and that each returns a response or an
// error.
func FuzzPolicyRoundTrip(f *testing.F) {
	for _, name := range policy.PresetNames() {
		f.Add([]byte(`{"preset": "`+name+`", "maxAttempts": $n}`), fuzzScripts[1], int64(4))
		p, err := policy.Preset(name)
		if err != nil {
			f.Fatalf("Preset(%q): %v", name, err)
		}
		if b, err := p.MarshalJSON(); err == nil {
			f.Add(b, fuzzScripts[1], int64(0))
		}
	}
	for i, e := range fuzzEdgeDocuments {
		f.Add([]byte(e.doc), fuzzScripts[i%len(fuzzScripts)], e.n)
	}
	f.Fuzz(func(t *testing.T, doc, script []byte, n int64) {
		if len(doc) > 4<<10 || len(script) > 64 {
			return
		}
		doc = bytes.ReplaceAll(doc, []byte("$n"), strconv.AppendInt(nil, n, 10))
		doc = bytes.ReplaceAll(doc, []byte("$d"), []byte(time.Duration(n).String()))
		var opt retrytransport.Option
		if p, err := policy.Load(bytes.NewReader(doc)); err == nil {
			if p.Validate() != nil {
				return
			}
			opt = retrytransport.WithPolicy(p)
		} else if m, err := policy.LoadMap(bytes.NewReader(doc)); err == nil {
			opt = retrytransport.WithPolicyMap(m)
		} else {
			return
		}
		if len(script) == 0 {
			script = []byte{0}
		}
		clock := faketime.NewAt(time.Now())
		base := &scriptedBase{script: script, now: clock.Now}
		tr := retrytransport.New(base, opt, retrytransport.WithClock(clock.Now, clock.Sleep),
			retrytransport.WithObserver(func(retrytransport.Event) {}),
			retrytransport.WithFinalObserver(func(retrytransport.Event) {}))
		for _, r := range fuzzRequests {
			roundTripOnce(t, tr, r, doc, script)
		}
	})
}

// fuzzRequest is a request FuzzPolicyRoundTrip sends: method, URL, a body
// ("" for none), whether the body can be replayed, and an Idempotency-Key.
type fuzzRequest struct {
	method, url, body string
	oneShot           bool // the body has no GetBody
	key               string
}

var fuzzRequests = []fuzzRequest{
	{method: "GET", url: "http://api.example.com/a"},
	{method: "PUT", url: "http://api.example.com/b", body: "payload"},
	{method: "POST", url: "http://a.example.com/c", body: "payload"},
	{method: "HEAD", url: "http://127.0.0.1:8080/"},
	{method: "PATCH", url: "http://b.example.com./d", body: "payload", oneShot: true, key: "k1"},
	{method: "GET", url: "http://api.example.com/a"},
}

// roundTripOnce sends r through tr within roundTripDeadline, and fails t if
// RoundTrip panics, runs past hangDeadline, or breaks its contract.
func roundTripOnce(t *testing.T, tr *retrytransport.Transport, r fuzzRequest, doc, script []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), roundTripDeadline)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
		if r.oneShot {
			body = io.NopCloser(body)
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		t.Fatalf("http.NewRequest(%q, %q): %v", r.method, r.url, err)
	}
	if r.key != "" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	type result struct {
		resp  *http.Response
		err   error
		panic any
		stack string
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if v := recover(); v != nil {
				buf := make([]byte, 64<<10)
				res.panic, res.stack = v, string(buf[:runtime.Stack(buf, false)])
			}
			done <- res
		}()
		res.resp, res.err = tr.RoundTrip(req)
	}()
	hang := time.NewTimer(hangDeadline)
	defer hang.Stop()
	select {
	case res := <-done:
		if res.panic != nil {
			t.Fatalf("%s %s with policy %s, script %v: RoundTrip panicked: %v\n%s", r.method, r.url, doc, script, res.panic, res.stack)
		}
		if (res.resp == nil) == (res.err == nil) {
			t.Fatalf("%s %s with policy %s, script %v: RoundTrip = %v, %v; want a response or an error", r.method, r.url, doc, script, res.resp, res.err)
		}
		if res.resp != nil {
			if res.resp.Body == nil {
				t.Fatalf("%s %s with policy %s, script %v: response has a nil Body", r.method, r.url, doc, script)
			}
			io.Copy(io.Discard, res.resp.Body)
			res.resp.Body.Close()
		}
	case <-hang.C:
		buf := make([]byte, 1<<20)
		t.Fatalf("%s %s with policy %s, script %v: RoundTrip still running after %v; goroutines:\n%s", r.method, r.url, doc, script, hangDeadline, buf[:runtime.Stack(buf, true)])
	}
}

// scriptedBase is a base transport that answers from script, one byte per
// call, in turn: the byte's value modulo 7 picks the answer, and the rest
// a parameter p.
//
//	0 200
//	1 503, with a delay header chosen by p (see delayHeader)
//	2 429, with a delay header chosen by p
//	3 a refused connection (a dial error: the request was not sent)
//	4 500 with a throttling error code in its body
//	5 404
//	6 io.ErrUnexpectedEOF (the request may have been processed)
//
// It honours the request's context and reads and closes its body, as
// http.Transport does. It is safe for concurrent use (hedges).
type scriptedBase struct {
	script []byte
	now    func() time.Time

	mu    sync.Mutex
	calls int
}

func (b *scriptedBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	c := b.script[b.calls%len(b.script)]
	b.calls++
	b.mu.Unlock()
	kind, p := c%7, int(c/7)
	resp := func(status int, h http.Header, body string) *http.Response {
		return &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}
	}
	switch kind {
	case 1:
		return resp(503, b.delayHeader(p), "unavailable"), nil
	case 2:
		return resp(429, b.delayHeader(p), "slow down"), nil
	case 3:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case 4:
		return resp(500, http.Header{"Content-Type": {"application/json"}}, `{"__type":"ThrottlingException"}`), nil
	case 5:
		return resp(404, http.Header{}, "not found"), nil
	case 6:
		return nil, fmt.Errorf("read: %w", io.ErrUnexpectedEOF)
	}
	return resp(200, http.Header{}, "ok"), nil
}

// delayHeader returns the header of a throttle or an unavailable
// response: by p modulo 5, Retry-After in seconds or as a date,
// retry-after-ms, x-ms-retry-after-ms, or none. The delay is p/5 in
// seconds, or in hundreds of milliseconds.
func (b *scriptedBase) delayHeader(p int) http.Header {
	n := p / 5
	switch p % 5 {
	case 0:
		return http.Header{"Retry-After": {strconv.Itoa(n)}}
	case 1:
		return http.Header{"Retry-After": {b.now().Add(time.Duration(n) * time.Second).UTC().Format(http.TimeFormat)}}
	case 2:
		return http.Header{"Retry-After-Ms": {strconv.Itoa(n * 100)}}
	case 3:
		return http.Header{"X-Ms-Retry-After-Ms": {strconv.Itoa(n * 100)}}
	}
	return http.Header{}
}
