package classify_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"

	"github.com/retrytransport/retrytransport/classify"
)

// Error classifies an attempt that got no response. A refused connection,
// built here as net/http's dialer reports it, is Transient and Unprocessed:
// the server never saw the request, so even a POST may be sent again.
func ExampleError() {
	req, _ := http.NewRequest("POST", "http://127.0.0.1:9/orders", nil)
	err := &net.OpError{
		Op:   "dial",
		Net:  "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},
		Err:  os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}

	o := classify.Error(req, err)
	fmt.Println(o.Kind, o.Reason, o.Unprocessed, o.Retryable())
	fmt.Println(classify.IsIdempotent(req))
	// Output:
	// transient dial error true true
	// false
}
