package classify_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport/classify"
)

func FuzzCode(f *testing.F) {
	for _, tt := range codeBodies {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := classify.CodeFromBody(body)
		if !bytes.Contains(body, []byte(got)) {
			t.Errorf("CodeFromBody(%q) = %q; want a substring of the input", body, got)
		}
	})
}

func FuzzStatus(f *testing.F) {
	for _, status := range []int{200, 400, 403, 404, 429, 502, 503} {
		for _, tt := range codeBodies {
			f.Add(status, []byte(tt.body))
		}
	}
	f.Add(503, bytes.Repeat([]byte("x"), classify.MaxPeek+1))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		resp := &http.Response{
			StatusCode: status,
			Header:     make(http.Header),
			Body:       io.NopCloser(bytes.NewReader(body)),
		}
		out := classify.Status(resp)
		if out.Kind > classify.Fatal {
			t.Errorf("Status(%d, %q).Kind = %v; want one of the five kinds", status, body, out.Kind)
		}
		if out.Unprocessed && out.Kind != classify.Throttle {
			t.Errorf("Status(%d, %q) = %+v; want Unprocessed only with throttle", status, body, out)
		}
		if out.Kind == classify.Throttle && !strings.HasPrefix(out.Reason, "status ") {
			if code := strings.TrimPrefix(out.Reason, "error code "); !bytes.Contains(body, []byte(code)) {
				t.Errorf("Status(%d, %q).Reason = %q; want a code found in the body", status, body, out.Reason)
			}
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("Status(%d, %q), then ReadAll(Body) = %q, %v; want the original body, nil", status, body, got, err)
		}
	})
}
