package retrytransport_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/internal/faketime"
	"github.com/retrytransport/retrytransport/policy"
)

// countingBase counts the attempts a Transport hands to its base.
type countingBase struct {
	base  http.RoundTripper
	calls atomic.Int32
}

func (c *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.base.RoundTrip(req)
}

// A request net/http refuses to send (a client bug) is attempted once and
// ends with ErrNotRetryable: sending it again cannot succeed.
func TestMalformedRequestIsAttemptedOnce(t *testing.T) {
	tests := []struct {
		name   string
		modify func(r *http.Request)
	}{
		{"HeaderValueWithNewline", func(r *http.Request) { r.Header.Set("X-Trace", "a\nb") }},
		// An unknown method alone is not sent again after a connection
		// error; the Idempotency-Key makes it a request that would be.
		{"InvalidMethod", func(r *http.Request) {
			r.Method = "GE T"
			r.Header.Set("Idempotency-Key", "k1")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			f, srv := newTrackedFlaky(t, 0, nil)
			base := &countingBase{base: cleanhttp.DefaultPooledTransport()}
			clock := faketime.NewAt(time.Now())
			p := policy.Standard()
			p.Backoff = halfJitter
			c := &http.Client{Transport: retrytransport.New(base,
				retrytransport.WithPolicy(p), retrytransport.WithClock(clock.Now, clock.Sleep))}
			t.Cleanup(c.CloseIdleConnections)

			req := newReq(t, "GET", srv.URL+"/", "")
			req.Header.Set("X-Request-Id", tt.name)
			tt.modify(req)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s: Do(%s) succeeded; want net/http to refuse the request", tt.name, srv.URL)
			}
			var re *retrytransport.RetryError
			if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, retrytransport.ErrNotRetryable) {
				t.Errorf("%s: Do(%s) error = %v; want a *RetryError after 1 attempt wrapping ErrNotRetryable", tt.name, srv.URL, err)
			}
			if got := base.calls.Load(); got != 1 {
				t.Errorf("%s: base transport called %d times; want 1", tt.name, got)
			}
			if got := f.count(tt.name); got != 0 {
				t.Errorf("%s: server saw %d attempts; want 0 (net/http refuses before sending)", tt.name, got)
			}
			if got := clock.Sleeps(); len(got) != 0 {
				t.Errorf("%s: waited %v; want no wait", tt.name, got)
			}
		})
	}
}
