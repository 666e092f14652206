package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

func ExampleLoad() {
	doc := `{
	  "preset": "standard",
	  "maxAttempts": 5,
	  "backoff": {"type": "fullJitter", "base": "200ms", "max": "5s"},
	  "serverDelay": {"headers": ["Retry-After"], "bound": "5s"},
	  "maxTotalTime": "30s",
	  "quota": {"capacity": 100}
	}`
	p, err := policy.Load(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", p.MaxAttempts)
	fmt.Printf("backoff: %+v\n", p.Backoff)
	fmt.Println("headers:", p.ServerDelay.Headers, "bound:", p.ServerDelay.Bound)
	fmt.Println("budget:", p.MaxTotalTime)
	fmt.Println("quota capacity:", p.Quota.(*quota.Bucket).Capacity)

	_, err = policy.Load(strings.NewReader(`{"maxAttempts": -3, "backoff": {"type": "fulljitterx"}}`))
	fmt.Println(err)
	// Output:
	// attempts: 5
	// backoff: {Base:200ms Max:5s Rand:<nil>}
	// headers: Retry-After bound: 5s
	// budget: 30s
	// quota capacity: 100
	// policy: maxAttempts = -3; want an integer >= 1, or 0 for the default
	// policy: backoff.type = "fulljitterx"; did you mean "fullJitter"?
}

// A document that is not well-formed JSON is reported at the line and
// column of the first byte that makes it so; a misspelt member or name is
// reported with the name it was probably meant to be.
func ExampleLoad_errors() {
	doc := `{
	  "preset": "standard",
	  "maxAttempts": 5,
	}`
	_, err := policy.Load(strings.NewReader(doc))
	fmt.Println(err)

	var se *policy.SyntaxError
	if errors.As(err, &se) {
		fmt.Println(se.Line, se.Column)
	}

	_, err = policy.Load(strings.NewReader(`{"preset": "AzureBackground", "maxAttempt": 5}`))
	fmt.Println(err)
	// Output:
	// policy: line 4, column 2: invalid JSON: invalid character '}' looking for beginning of object key string
	// 4 2
	// policy: preset = "AzureBackground"; did you mean "azure-background"?
	// policy: maxAttempt: unknown field; did you mean "maxAttempts"?
}

func ExampleLoad_failover() {
	// A read-only secondary takes the retries of reads, a slow read gets a
	// hedged copy, and a retry budget beside the bucket quota holds
	// retries to a tenth of the requests.
	doc := `{
	  "budget": {"ratio": 0.1, "minPerSecond": 1},
	  "failover": {"endpoints": ["https://secondary.example.com"], "mode": "primaryThenSecondary"},
	  "hedge": {"quantile": 0.95, "delay": "200ms", "minDelay": "20ms"}
	}`
	p, err := policy.Load(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("budget ratio:", p.Budget.(*quota.Budget).Ratio)
	fmt.Println("failover:", p.Failover.Endpoints, p.Failover.Mode)
	fmt.Printf("hedge: %+v\n", *p.Hedge)

	_, err = policy.Load(strings.NewReader(`{"failover": {"endpoints": ["ftp://secondary.example.com"]}, "hedge": {"quantile": 1}}`))
	fmt.Println(err)

	// A budget counts requests, in the request's own scope: it has its own
	// member, and a member of an earlier schema says where it went.
	_, err = policy.Load(strings.NewReader(`{"quota": {"type": "budget", "ratio": 0.2}, "endpoints": ["b.example.com"]}`))
	fmt.Println(err)
	// Output:
	// budget ratio: 0.1
	// failover: [https://secondary.example.com] PrimaryThenSecondary
	// hedge: {Delay:200ms Quantile:0.95 MinDelay:20ms MaxHedges:0}
	// policy: failover.endpoints[0] = "ftp://secondary.example.com"; want "host", "host:port" or "scheme://host:port", with scheme http or https, a port 1..65535, an IPv6 address in brackets and no path or user (scheme "ftp" is not http or https)
	// policy: hedge.quantile = 1; want a number 0 <= q < 1 (0: delay alone)
	// policy: quota.type = "budget"; want a quota object without "type"; a budget counts requests and goes in "budget": {...}
	// policy: endpoints: moved; write "failover": {"endpoints": [...]}
}

func ExampleLoad_penalty() {
	// At most 30 s of waiting in all, as Cosmos DB's clients cap it; and,
	// as Service Bus's clients do, no retry with less than a second left
	// of the request's time, and 10 s more on each delay for 10 s after a
	// ServerBusy error.
	doc := `{
	  "maxAttempts": 4,
	  "maxTotalTime": "1m",
	  "maxTotalWait": "30s",
	  "terminationBuffer": "1s",
	  "penalty": {"codes": ["ServerBusy"], "statuses": [503], "delay": "10s", "for": "10s"}
	}`
	p, err := policy.Load(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wait:", p.MaxTotalWait, "buffer:", p.TerminationBuffer)
	fmt.Printf("penalty: %+v\n", *p.Penalty)

	_, err = policy.Load(strings.NewReader(`{"maxTotalWait": "-30s", "penalty": {"statuses": [99], "codes": [""], "after": "10s"}}`))
	fmt.Println(err)
	// Output:
	// wait: 30s buffer: 1s
	// penalty: {Codes:[ServerBusy] Statuses:[503] Delay:10s For:10s}
	// policy: maxTotalWait = "-30s"; want a duration string >= 0, such as "1.5s"
	// policy: penalty.statuses[0] = 99; want an HTTP status 100..599
	// policy: penalty.codes[0] = ""; want a non-empty error code
	// policy: penalty.after: unknown field; want one of codes, statuses, delay, for
}

func ExamplePolicy_MarshalJSON() {
	b, err := policy.AzureInteractive().MarshalJSON()
	fmt.Println(string(b), err)
	// Output:
	// {"maxAttempts":4,"backoff":{"type":"constant","interval":"500ms","fastFirstRetry":true},"maxTotalTime":"2s"} <nil>
}

func ExampleLoadSNS() {
	// The example delivery policy of the SNS guide.
	doc := `{
	  "healthyRetryPolicy": {
	    "minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50,
	    "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35,
	    "backoffFunction": "exponential"
	  },
	  "throttlePolicy": {"maxReceivesPerSecond": 10},
	  "requestPolicy": {"headerContentType": "application/json"}
	}`
	p, err := policy.LoadSNS(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", p.MaxAttempts, "max delay:", p.MaxDelay, "quota off:", p.Quota == quota.None)
	fmt.Println("rate:", p.RateLimit.(*ratelimit.Fixed).Rate, "per second")
	// The jitter takes up to a tenth of each delay's distance above
	// minDelayTarget off it; a draw of 0 takes nothing.
	s := p.Backoff.(backoff.Schedule)
	s.Rand = func() float64 { return 0 }
	for _, n := range []int{1, 4, 6, 10, 15, 16, 50} {
		fmt.Printf("retry %d waits up to %v\n", n, s.Delay(n).Round(10*time.Millisecond))
	}

	_, err = policy.LoadSNS(strings.NewReader(`{"healthyRetryPolicy": {"numRetries": 101}}`))
	fmt.Println(err)
	// Output:
	// attempts: 51 max delay: 1m0s quota off: true
	// rate: 10 per second
	// retry 1 waits up to 0s
	// retry 4 waits up to 1s
	// retry 6 waits up to 1s
	// retry 10 waits up to 6.17s
	// retry 15 waits up to 1m0s
	// retry 16 waits up to 1m0s
	// retry 50 waits up to 1m0s
	// policy: healthyRetryPolicy.numRetries = 101; want 0..100
}

func ExampleFromEnv() {
	// In a program: policy.FromEnv(policy.Standard(), os.Getenv).
	vars := map[string]string{"AWS_RETRY_MODE": "adaptive", "AWS_MAX_ATTEMPTS": "5", "RETRYTRANSPORT_MAX_ATTEMPTS": "4"}
	p, err := policy.FromEnv(policy.Standard(), func(name string) string { return vars[name] })
	_, adaptive := p.Limiter.(*ratelimit.Adaptive)
	fmt.Println(adaptive, p.MaxAttempts, err)

	_, err = policy.FromEnv(policy.Standard(), func(name string) string {
		if name == "RETRYTRANSPORT_RETRY_MODE" {
			return "fast"
		}
		return ""
	})
	fmt.Println(err)
	// Output:
	// true 4 <nil>
	// policy: RETRYTRANSPORT_RETRY_MODE = "fast"; want standard, adaptive, legacy or off
}

// FromEnviron sees every variable, so it can report one of this package's
// prefix that FromEnv would never read.
func ExampleFromEnviron() {
	// In a program: policy.FromEnviron(policy.Standard(), os.Environ()).
	environ := []string{"HOME=/home/gopher", "AWS_RETRY_MODE=adaptive", "RETRYTRANSPORT_MAX_ATTEMPT=5"}
	_, err := policy.FromEnviron(policy.Standard(), environ)
	fmt.Println(err)
	// Output:
	// policy: RETRYTRANSPORT_MAX_ATTEMPT: unknown variable; did you mean "RETRYTRANSPORT_MAX_ATTEMPTS"?
}

func ExamplePreset() {
	p, err := policy.Preset("Azure-Background")
	fmt.Println(p.MaxAttempts, p.MaxTotalTime, err)

	_, err = policy.Preset("AzureBackground")
	fmt.Println(err)

	_, err = policy.Preset("fast")
	fmt.Println(err)
	// Output:
	// 6 1m0s <nil>
	// policy: preset = "AzureBackground"; did you mean "azure-background"?
	// policy: preset = "fast"; want one of standard, adaptive, none, standard-v2, kotlin-standard, kotlin-adaptive, sns-aws-managed, sns-customer-managed, azure-storage-exponential, azure-storage-linear, azure-storage-interactive, azure-storage-background, azure-interactive, azure-background, azure-cosmos-db, azure-service-bus, azure-search, azure-active-directory
}

func ExampleLoadMap() {
	doc := `{
	  "default": {"preset": "standard"},
	  "hosts": {
	    "api.example.com": {"maxAttempts": 5},
	    "*.example.com": {"preset": "none"}
	  }
	}`
	m, err := policy.LoadMap(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, host := range []string{"api.example.com", "www.example.com", "example.com"} {
		fmt.Println(host, m.Lookup(host).MaxAttempts)
	}
	// Output:
	// api.example.com 5
	// www.example.com 1
	// example.com 3
}
