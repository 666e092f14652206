package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/quota"
	"github.com/retrytransport/retrytransport/ratelimit"
)

// The limits SNS puts on an HTTP/S delivery policy (docs/sns.md).
const (
	snsMaxRetries   = 100
	snsMaxDelay     = 3600 // seconds, for minDelayTarget and maxDelayTarget
	snsMaxRetryTime = 3600 * time.Second
)

// snsJitter is the Schedule.Jitter of the SNS presets and of LoadSNS. SNS
// says that it jitters its delivery retries but gives neither the amount
// nor the form. A tenth of each delay's distance above minDelayTarget
// keeps the messages that failed together from being retried together,
// keeps every delay within 10% of the policy's, and so keeps the durations
// SNS publishes for its policies (23 days, 6 hours) about right, which a
// full jitter would halve.
const snsJitter = 0.1

// SNSAWSManaged returns the delivery policy of Amazon SNS for AWS-managed
// endpoints (Amazon SQS, AWS Lambda, Amazon Data Firehose; docs/sns.md): 3
// immediate retries, 2 after 1s, 10 backing off exponentially from 1s to
// 20s, then 100,000 after 20s each, 100,015 retries over about 23 days (see
// backoff.Schedule for the delays). As in every SNS policy, MaxAttempts is
// the retry count plus the first attempt, 100,016.
//
// The SNS presets and [LoadSNS] share these settings, so that a transport
// retries as SNS delivers:
//
//   - Backoff is the backoff.Schedule of the policy, with Jitter 0.1: SNS
//     jitters its retries without saying by how much, and a tenth keeps the
//     published durations.
//   - MaxDelay is maxDelayTarget, or DefaultMaxDelay if that is longer, so
//     that no delay of the schedule is cut.
//   - Quota is quota.None: SNS retries a delivery until its policy is spent,
//     whatever happens to other deliveries, and a retry quota would end a
//     long policy after a few hundred failures.
//   - RetryNonIdempotent is set: SNS delivers with POST and retries every
//     failed delivery, at least once being its promise; endpoints must
//     cope with duplicates.
//
// The policy is far outside the limits SNS puts on its customers' policies
// (100 retries, one hour), so LoadSNS would reject it as a document.
func SNSAWSManaged() Policy {
	return snsPolicy(backoff.Schedule{
		MinDelay:           time.Second,
		MaxDelay:           20 * time.Second,
		NumRetries:         100_015,
		NumNoDelayRetries:  3,
		NumMinDelayRetries: 2,
		NumMaxDelayRetries: 100_000,
		BackoffFunction:    backoff.CurveExponential,
	}, 0)
}

// SNSCustomerManaged returns the delivery policy of Amazon SNS for
// customer-managed endpoints (SMTP, SMS, mobile push; docs/sns.md): 2 retries
// after 10s, 10 backing off exponentially from 10s to 600s, then 38 after
// 600s each, 50 retries over about 6.8 hours, so MaxAttempts is 51; its
// MaxDelay is 600s. Its other settings are [SNSAWSManaged]'s. Its
// retries take 24,444.2s without jitter, more than the hour SNS allows an
// HTTP/S policy, so LoadSNS would reject it as a document.
func SNSCustomerManaged() Policy {
	return snsPolicy(backoff.Schedule{
		MinDelay:           10 * time.Second,
		MaxDelay:           600 * time.Second,
		NumRetries:         50,
		NumMinDelayRetries: 2,
		NumMaxDelayRetries: 38,
		BackoffFunction:    backoff.CurveExponential,
	}, 0)
}

// snsPolicy returns the Policy of the SNS retry schedule s, throttled to
// rate deliveries per second if rate is positive.
func snsPolicy(s backoff.Schedule, rate int) Policy {
	s.Jitter = snsJitter
	p := Policy{
		// numRetries 0 means no retry: Schedule would read it as its
		// default of 3, but MaxAttempts 1 never asks it.
		MaxAttempts:        s.NumRetries + 1,
		Backoff:            s,
		MaxDelay:           max(s.MaxDelay, DefaultMaxDelay),
		Quota:              quota.None,
		RetryNonIdempotent: true,
	}
	if rate > 0 {
		p.RateLimit = &ratelimit.Fixed{Rate: float64(rate), Burst: 1}
	}
	return p
}

// LoadSNS reads an Amazon SNS delivery policy for an HTTP/S endpoint, the
// JSON document SNS takes as the DeliveryPolicy of a subscription or a
// topic, exactly as AWS documents it (docs/sns.md), and returns the
// Policy that retries the way SNS delivers under it. Only HTTP/S policies
// can be set by SNS's customers, so LoadSNS applies the HTTP/S limits; the
// other endpoints' policies are [SNSAWSManaged] and [SNSCustomerManaged].
//
// # Forms
//
// A subscription's policy, with every member optional:
//
//	{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 60,
//	   "numRetries": 50, "numNoDelayRetries": 3, "numMinDelayRetries": 2,
//	   "numMaxDelayRetries": 35, "backoffFunction": "exponential"},
//	 "throttlePolicy": {"maxReceivesPerSecond": 10},
//	 "requestPolicy": {"headerContentType": "application/json"}}
//
// or a topic's, whose "http" member holds defaultHealthyRetryPolicy,
// defaultThrottlePolicy and defaultRequestPolicy in the same forms, and
// disableSubscriptionOverrides, a boolean. The members SNS adds when it
// reports an effective policy are accepted with the values it gives them:
// sicklyRetryPolicy (or defaultSicklyRetryPolicy) null, guaranteed false.
// requestPolicy and disableSubscriptionOverrides say nothing about retries:
// they are checked (headerContentType is a string) and ignored. A null
// member is the same as a missing one; any other member is an error.
//
// # Ranges
//
// Delays are whole seconds and counts whole numbers. A missing member takes
// SNS's default:
//
//	member               range                              default
//	minDelayTarget       1..maxDelayTarget                  20
//	maxDelayTarget       minDelayTarget..3600               20
//	numRetries           0..100                             3
//	numNoDelayRetries,
//	numMinDelayRetries,
//	numMaxDelayRetries   >= 0, together at most numRetries  0
//	backoffFunction      linear, arithmetic, exponential,   linear
//	                     geometric (in any case)
//	maxReceivesPerSecond >= 1                               no throttling
//
// and the delays of all retries together, without jitter
// (backoff.Schedule.Total), may not exceed 3,600s. Each error is a
// *[FieldError] naming the path, the value and the range, such as
//
//	policy: healthyRetryPolicy.numRetries = 101; want 0..100
//
// and LoadSNS reports every one it finds, joined with errors.Join.
//
// # Result
//
// Backoff is the backoff.Schedule of the policy and MaxAttempts is
// numRetries + 1; a throttle policy becomes a new RateLimit,
// ratelimit.Fixed{Rate: maxReceivesPerSecond, Burst: 1}, which paces each
// scope (each host, by default) where SNS paces each subscription. The
// other settings are those of the SNS presets (see [SNSAWSManaged]).
func LoadSNS(r io.Reader) (Policy, error) {
	raw, err := readDocument(r)
	if err != nil {
		return Policy{}, err
	}
	d := &decoder{}
	p := d.sns(raw)
	if err := d.err(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// sns decodes a delivery policy document.
func (d *decoder) sns(raw json.RawMessage) Policy {
	s := backoff.Schedule{MinDelay: 20 * time.Second, MaxDelay: 20 * time.Second, NumRetries: 3}
	rate := 0
	retry := func(v value) { s = v.snsRetry() }
	throttle := func(v value) {
		v.d.object(v.path, v.raw, "a throttle policy object",
			field{"maxReceivesPerSecond", func(v value) { rate = int(v.int(1, math.MaxInt, ">= 1")) }})
	}
	request := func(v value) {
		v.d.object(v.path, v.raw, "a request policy object",
			field{"headerContentType", func(v value) { v.string("a content type string") }})
	}
	sickly := func(v value) { v.fail("null: SNS documents no sickly retry policy") }
	ms, ok := d.members("", raw, "a delivery policy object")
	if !ok {
		return Policy{}
	}
	topic := false
	for _, m := range ms {
		topic = topic || m.name == "http"
	}
	if !topic {
		d.apply("", ms, []field{
			{"healthyRetryPolicy", retry},
			{"sicklyRetryPolicy", sickly},
			{"throttlePolicy", throttle},
			{"requestPolicy", request},
			{"guaranteed", func(v value) {
				if v.bool() {
					v.fail("false")
				}
			}},
		})
		return snsPolicy(s, rate)
	}
	d.apply("", ms, []field{{"http", func(v value) {
		v.d.object(v.path, v.raw, "a topic's HTTP/S delivery policy object",
			field{"defaultHealthyRetryPolicy", retry},
			field{"defaultSicklyRetryPolicy", sickly},
			field{"defaultThrottlePolicy", throttle},
			field{"defaultRequestPolicy", request},
			field{"disableSubscriptionOverrides", func(v value) { v.bool() }})
	}}})
	return snsPolicy(s, rate)
}

// snsRetry decodes and checks a healthy retry policy. A member of the wrong
// type is reported alone: the checks that involve it are skipped.
func (v value) snsRetry() backoff.Schedule {
	lo, hi, n := 20, 20, 3
	var counts [3]int
	curve := backoff.CurveLinear
	errs := len(v.d.errs)
	typed := [...]bool{true, true, true} // lo, hi and n decoded, or defaulted
	integer := func(dst *int, ok *bool, lo, hi int64, want string) func(value) {
		return func(v value) {
			x, good := v.integer(lo, hi, want)
			*dst, *ok = int(x), good
		}
	}
	var counted bool // the counts' checks need nothing more
	v.d.object(v.path, v.raw, "a retry policy object",
		field{"minDelayTarget", integer(&lo, &typed[0], math.MinInt32, math.MaxInt32, "whole seconds")},
		field{"maxDelayTarget", integer(&hi, &typed[1], math.MinInt32, math.MaxInt32, "whole seconds")},
		field{"numRetries", integer(&n, &typed[2], 0, snsMaxRetries, "0..100")},
		field{"numNoDelayRetries", integer(&counts[0], &counted, 0, math.MaxInt32, ">= 0")},
		field{"numMinDelayRetries", integer(&counts[1], &counted, 0, math.MaxInt32, ">= 0")},
		field{"numMaxDelayRetries", integer(&counts[2], &counted, 0, math.MaxInt32, ">= 0")},
		field{"backoffFunction", func(v value) { curve = v.curve() }})

	bad := func(name string, got int, want string) {
		v.d.fail(join(v.path, name), strconv.Itoa(got), want)
	}
	hiOK := hi >= 1 && hi <= snsMaxDelay
	if typed[1] && !hiOK {
		bad("maxDelayTarget", hi, fmt.Sprintf("%d..%d (minDelayTarget..3600)", max(lo, 1), snsMaxDelay))
	}
	if typed[0] && (lo < 1 || (hiOK && lo > hi)) {
		bad("minDelayTarget", lo, fmt.Sprintf("1..%d (1..maxDelayTarget)", min(max(hi, 1), snsMaxDelay)))
	}
	if sum := counts[0] + counts[1] + counts[2]; typed[2] && sum > n {
		bad("numNoDelayRetries+numMinDelayRetries+numMaxDelayRetries", sum, fmt.Sprintf("0..%d (numRetries)", n))
	}
	s := backoff.Schedule{
		MinDelay:           time.Duration(lo) * time.Second,
		MaxDelay:           time.Duration(hi) * time.Second,
		NumRetries:         n,
		NumNoDelayRetries:  counts[0],
		NumMinDelayRetries: counts[1],
		NumMaxDelayRetries: counts[2],
		BackoffFunction:    curve,
	}
	// The total is meaningful only for a policy within the other limits.
	if len(v.d.errs) == errs && n > 0 {
		if total := s.Total(); total > snsMaxRetryTime {
			v.d.fail(v.path+" (total retry time)", seconds3(total), "at most 3600s for an HTTP/S endpoint")
		}
	}
	return s
}

// seconds3 formats d in seconds with up to three decimals: "24444.2s".
func seconds3(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}
