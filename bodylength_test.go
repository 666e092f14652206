package retrytransport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// TestBodyLengthMismatchIsFinal: a request whose body is not as long as
// its ContentLength says is the caller's bug; net/http refuses to finish
// sending it, and every attempt would fail the same way. It is attempted
// once, with no wait, and the error says it is not retryable and carries
// net/http's own.
func TestBodyLengthMismatchIsFinal(t *testing.T) {
	for _, tt := range []struct {
		name          string
		declared      int64
		body          string
		withGetBody   bool
		wantInMessage string
	}{
		{"ShortWithGetBody", 100, strings.Repeat("a", 50), true, "request body length differs from ContentLength=100"},
		{"ShortRecorded", 100, strings.Repeat("a", 50), false, "request body length differs from ContentLength=100"},
		{"LongWithGetBody", 10, strings.Repeat("a", 50), true, "request body length differs from ContentLength=10"},
		{"LongRecorded", 10, strings.Repeat("a", 50), false, "request body length differs from ContentLength=10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			f, srv := newTrackedFlaky(t, 0, nil)
			var waits atomic.Int32
			base := &countingBase{base: srv.Client().Transport}
			tr := retrytransport.New(base, retrytransport.WithPolicy(policy.Policy{Backoff: halfJitter}),
				retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { waits.Add(1); return ctx.Err() }))
			c := &http.Client{Transport: tr}
			t.Cleanup(c.CloseIdleConnections)
			req, err := http.NewRequest("PUT", srv.URL, strings.NewReader(tt.body))
			if err != nil {
				t.Fatalf("http.NewRequest: %v", err)
			}
			if !tt.withGetBody {
				req.GetBody = nil
				req.Body = io.NopCloser(strings.NewReader(tt.body))
			}
			req.ContentLength = tt.declared
			req.Header.Set("X-Request-Id", tt.name)
			resp, err := c.Do(req)
			if n := base.calls.Load(); n != 1 || waits.Load() != 0 {
				t.Errorf("PUT attempted %d times after %d waits; want once, no wait", n, waits.Load())
			}
			switch {
			case resp != nil && tt.declared < int64(len(tt.body)):
				// net/http sent the declared bytes, and the server's answer
				// to them beat the error: a response, which is final.
				resp.Body.Close()
			case resp != nil:
				resp.Body.Close()
				t.Errorf("PUT = %d; want an error", resp.StatusCode)
			case !errors.Is(err, retrytransport.ErrNotRetryable) || !strings.Contains(err.Error(), tt.wantInMessage):
				t.Errorf("PUT error = %v; want ErrNotRetryable and %q", err, tt.wantInMessage)
			}
			// A body longer than declared is cut by net/http at the
			// declared length, so the server may see one whole request.
			if n := f.count(tt.name); n > 1 {
				t.Errorf("handler saw the request %d times; want at most 1", n)
			}
			srv.conns.expectAllClosed(t, c)
		})
	}
}
