package policy_test

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/policy"
	"github.com/retrytransport/retrytransport/retryafter"
)

func TestValidateServerDelay(t *testing.T) {
	tests := []struct {
		name string
		sd   policy.ServerDelay
		want string // the whole message of the only error; "" for none
	}{
		{"Zero", policy.ServerDelay{}, ""},
		{"None", policy.ServerDelay{Headers: retryafter.None}, ""},
		{"NoneWithBound", policy.ServerDelay{Headers: retryafter.None, Bound: time.Second}, ""},
		{"All", policy.ServerDelay{Headers: retryafter.AllSources, Bound: time.Hour}, ""},
		{"One", policy.ServerDelay{Headers: retryafter.MSRetryAfterMS}, ""},
		{"NoneAndOne", policy.ServerDelay{Headers: retryafter.None | retryafter.RetryAfter}, "policy: ServerDelay.Headers = Retry-After|0x8000; want retryafter.None alone, or a set of headers without it"},
		{"NoneAndAll", policy.ServerDelay{Headers: retryafter.None | retryafter.AllSources}, "policy: ServerDelay.Headers = Retry-After|retry-after-ms|x-ms-retry-after-ms|x-amz-retry-after|X-RateLimit-Reset|RateLimit|0x8000; want retryafter.None alone, or a set of headers without it"},
		{"NegativeBound", policy.ServerDelay{Bound: -time.Millisecond}, "policy: ServerDelay.Bound = -1ms; want >= 0 (0: the server's delay as given)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policy.Policy{ServerDelay: tt.sd}.Validate()
			if got := errorString(err); got != tt.want {
				t.Errorf("Policy{ServerDelay: %+v}.Validate() = %s; want %s", tt.sd, orNil(got), orNil(tt.want))
			}
		})
	}
}

// TestWithDefaultsResolvesServerDelay: zero Headers are every header,
// None stays none, None with others is the others, and a negative Bound
// is zero.
func TestWithDefaultsResolvesServerDelay(t *testing.T) {
	tests := []struct{ in, want policy.ServerDelay }{
		{policy.ServerDelay{}, policy.ServerDelay{Headers: retryafter.DefaultSources}},
		{policy.ServerDelay{Bound: -time.Second}, policy.ServerDelay{Headers: retryafter.DefaultSources}},
		{policy.ServerDelay{Headers: retryafter.None, Bound: time.Second}, policy.ServerDelay{Headers: retryafter.None, Bound: time.Second}},
		{policy.ServerDelay{Headers: retryafter.None | retryafter.AmzRetryAfter}, policy.ServerDelay{Headers: retryafter.AmzRetryAfter}},
		{policy.ServerDelay{Headers: retryafter.RetryAfter, Bound: 5 * time.Second}, policy.ServerDelay{Headers: retryafter.RetryAfter, Bound: 5 * time.Second}},
	}
	for _, tt := range tests {
		if got := (policy.Policy{ServerDelay: tt.in}).WithDefaults().ServerDelay; got != tt.want {
			t.Errorf("Policy{ServerDelay: %+v}.WithDefaults().ServerDelay = %+v; want %+v", tt.in, got, tt.want)
		}
	}
}
