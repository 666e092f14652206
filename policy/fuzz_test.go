package policy_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
)

// checkRoundTrip fails t unless p, a policy a loader returned, passes
// Validate and comes back equal from Load(MarshalJSON(p)); a p with a
// Classify must instead make MarshalJSON fail on it.
func checkRoundTrip(t *testing.T, input []byte, p policy.Policy) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("loader(%q) returned a policy that fails Validate: %v", input, err)
	}
	b, err := p.MarshalJSON()
	if p.Classify != nil {
		if err == nil || !strings.Contains(err.Error(), "classify") {
			t.Fatalf("MarshalJSON of loader(%q) with a Classify = %s, %v; want an error naming classify", input, b, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("MarshalJSON of loader(%q) error = %v; want nil", input, err)
	}
	q, err := policy.Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Load(MarshalJSON(loader(%q))) = Load(%s) error = %v; want nil", input, b, err)
	}
	if diff := cmp.Diff(p, q, policyOpts); diff != "" {
		t.Fatalf("Load(MarshalJSON(loader(%q))) mismatch (-want +got):\n%s", input, diff)
	}
}

// checkError fails t unless err reads as this package's errors do: each
// starts with "policy: ", a syntax error is at a line and column of input,
// and a suggestion is offered in the message.
func checkError(t *testing.T, input []byte, err error) {
	t.Helper()
	for _, e := range unwrapAll(err) {
		if !strings.HasPrefix(e.Error(), "policy: ") {
			t.Fatalf("loader(%q) error %q does not start with \"policy: \"", input, e)
		}
		var se *policy.SyntaxError
		if errors.As(e, &se) {
			lines := bytes.Split(input, []byte("\n"))
			if se.Line < 1 || se.Line > len(lines) || se.Column < 1 || se.Column > len(lines[se.Line-1])+1 {
				t.Fatalf("loader(%q) error %q: line %d, column %d is not in the input", input, e, se.Line, se.Column)
			}
		}
		var fe *policy.FieldError
		if errors.As(e, &fe) && fe.Suggestion != "" && !strings.Contains(e.Error(), strconv.Quote(fe.Suggestion)) {
			t.Fatalf("loader(%q) error %q does not say its Suggestion %q", input, e, fe.Suggestion)
		}
	}
}

func FuzzLoad(f *testing.F) {
	for _, doc := range []string{
		fullDocument, `{}`, ``, `null`, `{"preset": "sns-aws-managed", "maxAttempts": 2}`,
		`{"backoff": {"type": "jittered", "strategy": {"type": "capped", "strategy": {"type": "schedule", "numRetries": 3}}}}`,
		`{"serverDelay": {"headers": "all"}, "quota": {}, "limiter": {"beta": 0.5}, "rateLimit": {"rate": 0.5}}`,
		`{"serverDelay": {"headers": ["retry-after", "RateLimit"], "bound": "5s"}, "maxTotalTime": "1s", "backoff": {"type": "constant", "interval": "600ms"}, "maxAttempts": 3}`,
		`{"serverDelay": {"headers": "NONE"}, "quota": "none", "limiter": {}}`,
		`{"serverDelay": {"headers": [], "bound": "-1s", "x": 1}, "quota": "off", "limiter": []}`,
		`{"serverDelay": {}, "quota": {"wait": true}, "limiter": {"reference": true, "maxWait": "1s"}}`,
		`{"maxAttempts": -3, "backoff": {"type": "fulljitterx"}, "bogus": 1}`, `{"maxAttempts": 1, "maxAttempts": 2}`, `{} {}`,
		`{"classifier": {"throttlingStatuses": [420], "transientCodes": ["Busy"]}}`,
		`{"quota": {"type": "budget", "ratio": -1, "minPerSecond": 0.5, "window": "1s", "maxScopes": 2}, "budget": {"ratio": 0.1}}`,
		`{"quota": {"capacity": 5, "retryCost": 1, "refillPerSecond": 0.5}, "budget": {"ratio": -1, "minPerSecond": 0.5, "window": "1s", "maxScopes": 2}}`,
		`{"adaptive": true, "disableQuota": true, "delayHeaders": "all", "ignoreDelayHeaders": true, "serverDelayBound": "5s", "endpoints": ["h"], "locationMode": "secondaryOnly", "failoverMethods": []}`,
		`{"failover": {"endpoints": ["h", "h:443", "https://h:8443", "[::1]:80"], "mode": "secondaryOnly", "methods": []}, "hedge": {"delay": "50ms", "quantile": 0.95, "minDelay": "10ms", "maxHedges": 2}}`,
		`{"failover": {"endpoints": ["h"], "mode": "PRIMARYONLY", "methods": ["GET", "PUT"]}, "hedge": {"quantile": 0.5}}`,
		`{"failover": {"endpoints": [], "mode": "SecondaryThenPrimary"}, "hedge": {}}`,
		`{"failover": {"mode": "SecondaryOnly"}, "hedge": {"maxHedges": 2}}`,
		`{"failover": {"endpoints": ["ftp://h", "h/path", "h:99999", "user@h", ""], "mode": "nearest", "methods": ["GET /"]}, "hedge": {"quantile": 1, "delay": "-1s", "x": 1}, "budget": {"type": "budget"}, "quota": {"type": "bucket"}}`,
		`{"maxTotalTime": "30s", "maxTotalWait": "20s", "terminationBuffer": "1s", "penalty": {"codes": ["ServerBusy"], "statuses": [503, 429], "delay": "10s", "for": "10s"}}`,
		`{"maxTotalWait": "1ns", "penalty": {"codes": [], "statuses": [], "delay": "1s"}}`,
		`{"terminationBuffer": "5s", "penalty": {"statuses": [100, 599], "for": "1h"}}`,
		`{"penalty": {"codes": ["x"], "statuses": [], "delay": "1s"}}`,
		`{"maxTotalTime": "1s", "terminationBuffer": "1s", "maxTotalWait": "-1s", "penalty": {"delay": "1s"}}`,
		`{"penalty": {"codes": ["", 7], "statuses": [99, 600, "503", 1.5], "delay": -1, "for": "x", "extra": 1}}`,
		`{"penalty": {"codes": "ServerBusy", "statuses": 503}, "terminationBuffer": 1}`,
		`{"penalty": []}`,
		"{\n  \"maxAttempts\": }", "{\"maxAttempts\": 3,\n}", `{"maxAttempts": 3`, "{}\r\n\r\n{}", "\n\n", `{"a": "\x01"}`,
		`{"preset": "AzureBackground", "maxAttempt": 1, "backoff": {"type": "full_jitter", "bas": "1s"}}`,
		`{"quota": {"type": "budgett"}, "failover": {"endpoints": ["h"], "mode": "primary-only"}, "serverDelay": {"headers": ["RetryAfter"]}, "limitr": {}}`,
		`{"backoff": {"type": "schedule", "backoffFunction": "exponentail"}}`,
		`{"breaker": {}, "concurrency": {"type": "adaptive"}}`,
		`{"breaker": {"failures": 3, "stalls": 1, "stallFor": "100ms", "trips": ["timeout"], "openFor": "5s", "maxOpenFor": "1m", "probes": 2, "probeLease": "2s", "maxScopes": 7}}`,
		`{"breaker": {"trips": ["Transient", "transient"]}, "concurrency": {"type": "fixed", "max": 8, "maxWait": "10ms", "maxScopes": 3}}`,
		`{"breaker": {"trips": ["timeout", "TRANSIENT"]}, "concurrency": {"type": "Adaptive", "initial": 10, "min": 2, "max": 200, "tolerance": 1.5, "backoff": 0.75, "maxWait": "5ms", "maxScopes": 50}}`,
		`{"breaker": {"trips": [], "failure": -1, "openFor": 1}, "concurrency": {"type": "fxed", "max": -1}}`,
		`{"breaker": {"trips": ["throttle", 5]}, "concurrency": {"type": "adaptive", "tolerance": 1, "backoff": 1, "limit": 3}}`,
		`{"breaker": "on", "concurrency": {"adaptive": {}, "fixed": {"max": 8}}}`,
		`{"concurrency": {"max": 8}}`,
	} {
		f.Add([]byte(doc))
	}
	for _, name := range policy.PresetNames() {
		p, _ := policy.Preset(name)
		b, _ := p.MarshalJSON()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Load(bytes.NewReader(data))
		if err != nil {
			checkError(t, data, err)
			return
		}
		checkRoundTrip(t, data, p)
	})
}

func FuzzLoadSNS(f *testing.F) {
	for _, doc := range []string{
		snsExample, `{}`, `{"http": {"defaultHealthyRetryPolicy": {"numRetries": 0}}}`,
		`{"healthyRetryPolicy": {"minDelayTarget": 36, "maxDelayTarget": 36, "numRetries": 100, "backoffFunction": "geometric"}}`,
		`{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 3600, "numRetries": 2, "backoffFunction": "arithmetic"}, "guaranteed": false}`,
		`{"healthyRetryPolicy": {"numRetries": 101, "minDelayTarget": 0}, "throttlePolicy": {"maxReceivesPerSecond": 0}}`,
		`{"sicklyRetryPolicy": null, "requestPolicy": {"headerContentType": "text/plain"}}`, `[]`,
		"{\"healthyRetryPolicy\": {\n\t\"numRetries\": 3,\n}}", `{"healthyRetryPolicy": {"numRetry": 3, "backoffFunction": "Geometic"}}`, `{}]`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.LoadSNS(bytes.NewReader(data))
		if err != nil {
			checkError(t, data, err)
			return
		}
		s, ok := p.Backoff.(backoff.Schedule)
		if !ok || p.MaxAttempts < 1 || p.MaxAttempts > 101 || p.Quota != quota.None {
			t.Fatalf("LoadSNS(%q) = %+v; want a Schedule, 1..101 attempts and no quota", data, p)
		}
		if p.MaxAttempts > 1 && s.Total() > time.Hour {
			t.Fatalf("LoadSNS(%q): Total() = %v; want at most 1h", data, s.Total())
		}
		checkRoundTrip(t, data, p)
	})
}

func FuzzLoadMap(f *testing.F) {
	for _, doc := range []string{
		mapDocument, `{}`, `{"hosts": {"*.a.com": {"preset": "none"}, "A.com": {}}}`, `{"hosts": {"a.com": {}, "A.COM": {}}}`,
		"{\"hosts\": {\n  \"a.com\": {}\n  \"b.com\": {}}}", `{"defaults": {}, "hosts": {"a.com": {"maxAttempt": 2}}}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := policy.LoadMap(bytes.NewReader(data))
		if err != nil {
			checkError(t, data, err)
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("LoadMap(%q) returned a Map that fails Validate: %v", data, err)
		}
		checkRoundTrip(t, data, m.Default)
		for pattern, p := range m.Hosts {
			checkRoundTrip(t, data, p)
			_ = m.Lookup(strings.TrimPrefix(pattern, "*"))
		}
	})
}

func FuzzFromEnv(f *testing.F) {
	f.Add("standard", "3", "", "")
	f.Add("", "", "adaptive", "10")
	f.Add("off", "5", "legacy", "x")
	f.Add("fast", "0", "", "-1")
	f.Add(" Adaptive ", " 1 ", "STANDARD", "99999999999999999999")
	f.Fuzz(func(t *testing.T, mode, attempts, awsMode, awsAttempts string) {
		vars := map[string]string{"RETRYTRANSPORT_RETRY_MODE": mode, "RETRYTRANSPORT_MAX_ATTEMPTS": attempts, "AWS_RETRY_MODE": awsMode, "AWS_MAX_ATTEMPTS": awsAttempts}
		for _, base := range []policy.Policy{policy.Standard(), policy.None(), policy.Adaptive()} {
			got, err := policy.FromEnv(base, env(vars))
			if err != nil {
				checkError(t, []byte(mode+"|"+attempts+"|"+awsMode+"|"+awsAttempts), err)
				if diff := cmp.Diff(base, got, policyOpts); diff != "" {
					t.Fatalf("FromEnv(%q) with an error changed p (-want +got):\n%s", vars, diff)
				}
				continue
			}
			if got.MaxAttempts < 1 {
				t.Fatalf("FromEnv(%q).MaxAttempts = %d; want >= 1", vars, got.MaxAttempts)
			}
			checkRoundTrip(t, []byte(mode+"|"+attempts+"|"+awsMode+"|"+awsAttempts), got)
		}
	})
}

func FuzzFromEnviron(f *testing.F) {
	f.Add("RETRYTRANSPORT_RETRY_MODE=adaptive", "AWS_MAX_ATTEMPTS=4")
	f.Add("RETRYTRANSPORT_MAX_ATTEMPT=5", "retrytransport_retry_mode=off")
	f.Add("RETRYTRANSPORT_TIMEOUT=1s", "RETRYTRANSPORT_MAX_ATTEMPTS=0")
	f.Add("=C:=C:\\", "RETRYTRANSPORT_")
	f.Add("RETRYTRANSPORT_BREAKER=on", "RETRYTRANSPORT_CONCURRENCY=fixed:8")
	f.Add("RETRYTRANSPORT_BREAKER_FAILURES=3", "RETRYTRANSPORT_BREAKER=ON")
	f.Add("RETRYTRANSPORT_CONCURRENCY=adaptive", "RETRYTRANSPORT_CONCURRENCY_MAX_WAIT=10ms")
	f.Add("RETRYTRANSPORT_BREAKER_OPEN_FOR=-1s", "RETRYTRANSPORT_CONCURRENCY=fixd:0")
	f.Fuzz(func(t *testing.T, a, b string) {
		environ := []string{a, b}
		got, err := policy.FromEnviron(policy.Standard(), environ)
		if err != nil {
			checkError(t, []byte(a+"|"+b), err)
			if diff := cmp.Diff(policy.Standard(), got, policyOpts); diff != "" {
				t.Fatalf("FromEnviron(%q) with an error changed p (-want +got):\n%s", environ, diff)
			}
			return
		}
		if got.MaxAttempts < 1 {
			t.Fatalf("FromEnviron(%q).MaxAttempts = %d; want >= 1", environ, got.MaxAttempts)
		}
		checkRoundTrip(t, []byte(a+"|"+b), got)
	})
}
