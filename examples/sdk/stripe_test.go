package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stripe/stripe-go/v85"

	"github.com/retrytransport/retrytransport/policy"
)

// newStripeFake starts a fake Stripe API that serves s: POST /v1/customers
// creates cus_123 with the posted email, and GET /v1/customers/cus_123
// returns it. Its throttle is a 429 rate_limit error with Retry-After: 1.
func newStripeFake(s *script) *httptest.Server {
	return api{
		unavailable: `{"error":{"type":"api_error","message":"The service is temporarily unavailable."}}`,
		throttle: reply{status: http.StatusTooManyRequests, header: retryAfter1,
			body: `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests hit the API too quickly."}}`},
		serve: func(r *http.Request, body []byte) reply {
			email := "ada@example.com"
			if r.Method == http.MethodPost {
				form, _ := url.ParseQuery(string(body))
				email = form.Get("email")
			}
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/v1/customers",
				r.Method == http.MethodGet && r.URL.Path == "/v1/customers/cus_123":
				return reply{status: http.StatusOK,
					body: fmt.Sprintf(`{"id":"cus_123","object":"customer","email":%q,"created":1767323045,"livemode":false}`, email)}
			}
			return reply{status: http.StatusNotFound, body: `{"error":{"type":"invalid_request_error","message":"Unrecognized request URL."}}`}
		},
		header: func(h http.Header, n int, _ string) {
			h.Set("Content-Type", "application/json")
			h.Set("Request-Id", fmt.Sprintf("req_%04d", n))
		},
	}.start(s)
}

// newStripeClient returns a Stripe client whose requests go through hc to
// srv, with stripe-go's own retries (MaxNetworkRetries) at maxRetries.
func newStripeClient(srv *httptest.Server, hc *http.Client, maxRetries int64) *stripe.Client {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(maxRetries),
		URL:               stripe.String(srv.URL),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient("sk_test_123", stripe.WithBackends(backends))
}

// stripeStatus returns the HTTP status of a Stripe API error.
func stripeStatus(err error) int {
	var se *stripe.Error
	if errors.As(err, &se) {
		return se.HTTPStatusCode
	}
	return 0
}

// checkOneIdempotencyKey checks that stripe-go put an Idempotency-Key on
// the POST, which our replays kept.
func checkOneIdempotencyKey(t *testing.T, hits []hit) {
	t.Helper()
	key := hits[0].Header.Get("Idempotency-Key")
	if key == "" {
		t.Errorf("hit 1 has no Idempotency-Key; stripe-go sets one on every POST")
	}
	for i, h := range hits {
		if got := h.Header.Get("Idempotency-Key"); got != key {
			t.Errorf("hit %d: Idempotency-Key = %q; want %q, as on hit 1", i+1, got, key)
		}
	}
}

func TestStripeScenarios(t *testing.T) {
	setup := calls(newStripeFake, func(_ *testing.T, srv *httptest.Server, rt http.RoundTripper) *stripe.Client {
		return newStripeClient(srv, &http.Client{Transport: rt}, 0)
	})
	runScenarios(t, []target{{
		name:       "Customers.Create",
		policy:     policy.Standard,
		replayable: true, // stripe-go's Idempotency-Key
		retryAfter: true,
		setup: setup(func(ctx context.Context, c *stripe.Client) error {
			cus, err := c.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com")})
			if err == nil && (cus.ID != "cus_123" || cus.Email != "ada@example.com") {
				return fmt.Errorf("Create = %s %s; want cus_123 ada@example.com", cus.ID, cus.Email)
			}
			return err
		}),
		status:    stripeStatus,
		checkHits: checkOneIdempotencyKey,
	}, {
		name:       "Customers.Retrieve",
		policy:     policy.Standard,
		replayable: true,
		retryAfter: true,
		setup: setup(func(ctx context.Context, c *stripe.Client) error {
			cus, err := c.V1Customers.Retrieve(ctx, "cus_123", nil)
			if err == nil && cus.ID != "cus_123" {
				return fmt.Errorf("Retrieve = %s; want cus_123", cus.ID)
			}
			return err
		}),
		status: stripeStatus,
	}})
}

// TestStripeOwnRetries shows what stripe-go's own retries (the default
// MaxNetworkRetries of 2) do on top of the Transport, which is why the
// example turns them off: a Stripe error body (a 503 included) is not
// retried by stripe-go, but a transport error is, so a server that keeps
// dropping the connection sees 3 x 3 attempts of one call. stripe-go's
// sleeps between them are turned off here.
func TestStripeOwnRetries(t *testing.T) {
	tests := []struct {
		name     string
		faults   []fault
		wantHits int
	}{
		{"persistent 503 with a Stripe error body", repeat(unavailable, 20), 3},
		{"persistent hang-up", repeat(hangUp, 20), 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(tt.faults...)
			srv := newStripeFake(s)
			defer srv.Close()
			r := newRig(t, policy.Standard())
			c := newStripeClient(srv, &http.Client{Transport: r.rt}, stripe.DefaultMaxNetworkRetries)
			c.V1Customers.B.(*stripe.BackendImplementation).SetNetworkRetriesSleep(false)

			_, err := c.V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com")})

			if err == nil {
				t.Errorf("Create succeeded; want an error")
			}
			if got := len(s.Hits()); got != tt.wantHits {
				t.Errorf("server saw %d hits; want %d", got, tt.wantHits)
			}
			checkOneIdempotencyKey(t, s.Hits())
		})
	}
}
