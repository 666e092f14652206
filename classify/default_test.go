package classify_test

import (
	"net"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

// Default must stay usable wherever a Func is wanted.
var _ classify.Func = classify.Default

func TestDefaultClassifiesResponseByStatus(t *testing.T) {
	for _, status := range []int{200, 400, 429, 503} {
		body := `<Error><Code>SlowDown</Code></Error>`
		want := classify.Status(newResp(t, status, body))
		got := classify.Default(newReq(t, "GET"), newResp(t, status, body), nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Default(GET, %d, %q, nil) mismatch with Status (-want +got):\n%s", status, body, diff)
		}
	}
}

func TestDefaultClassifiesErrorByError(t *testing.T) {
	errs := []error{
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
	}
	for _, err := range errs {
		want := classify.Error(newReq(t, "GET"), err)
		got := classify.Default(newReq(t, "GET"), nil, err)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Default(GET, nil, %v) mismatch with Error (-want +got):\n%s", err, diff)
		}
	}
}

func TestDefaultAllocatesNothingFor429(t *testing.T) {
	req := newReq(t, "GET")
	resp := newResp(t, 429, `{"__type":"ThrottlingException"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if o := classify.Default(req, resp, nil); o.Kind != classify.Throttle {
			t.Fatalf("Default(GET, 429) = %v; want throttle", o.Kind)
		}
	})
	if allocs != 0 {
		t.Errorf("Default(GET, 429) allocates %v times per call; want 0", allocs)
	}
}
