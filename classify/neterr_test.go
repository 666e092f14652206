package classify_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/classify"
)

// timeoutError is a net.Error that reports a timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var (
	timedOut        = classify.Outcome{Kind: classify.Timeout}
	unprocessed     = classify.Outcome{Kind: classify.Transient, Unprocessed: true}
	unprocessedTime = classify.Outcome{Kind: classify.Timeout, Unprocessed: true}
)

func TestErrorWithLiveRequest(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name string // the error, described; some of the errors cannot print themselves
		err  error
		want classify.Outcome
	}{
		{"context.Canceled", context.Canceled, fatal},
		{"wrapped context.Canceled", fmt.Errorf("attempt: %w", context.Canceled), fatal},
		{"dial error wrapping context.Canceled", &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}, fatal},
		{"context.DeadlineExceeded", context.DeadlineExceeded, timedOut},
		{"wrapped context.DeadlineExceeded", fmt.Errorf("attempt: %w", context.DeadlineExceeded), timedOut},

		{"dial ECONNREFUSED", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, unprocessed},
		{"dial connect: ECONNREFUSED", refused, unprocessed},
		{"url.Error of dial ECONNREFUSED", &url.Error{Op: "Get", URL: "https://example.com/", Err: refused}, unprocessed},
		{"dial ENETUNREACH", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ENETUNREACH}, unprocessed},
		{"dial timeout (net.Error)", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, unprocessedTime},
		{"dial timeout (os.ErrDeadlineExceeded)", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, unprocessedTime},
		{"dial DNS not found", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}, unprocessed},
		{"bare net.DNSError", &net.DNSError{}, unprocessed},
		{"wrapped net.DNSError", fmt.Errorf("lookup: %w", &net.DNSError{Err: "server misbehaving", Name: "example.com"}), unprocessed},
		{"bare ECONNREFUSED", syscall.ECONNREFUSED, unprocessed},
		{"wrapped ECONNREFUSED", fmt.Errorf("connect: %w", syscall.ECONNREFUSED), unprocessed},

		{"read ECONNRESET", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, transient},
		{"read: ECONNRESET", &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}, transient},
		{"write EPIPE", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, transient},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, timedOut},
		{"net.Error timeout", timeoutError{}, timedOut},
		{"io.EOF", io.EOF, transient},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, transient},
		{"wrapped io.EOF", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.EOF), transient},
		{"unknown error", errors.New("something odd"), transient},

		{"x509.UnknownAuthorityError", x509.UnknownAuthorityError{}, fatal},
		{"x509.HostnameError", x509.HostnameError{}, fatal},
		{"x509.CertificateInvalidError", x509.CertificateInvalidError{Reason: x509.Expired}, fatal},
		{"*tls.CertificateVerificationError", &tls.CertificateVerificationError{}, fatal},
		{"*tls.CertificateVerificationError of an unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, fatal},
		{"tls.RecordHeaderError", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, fatal},
		{"wrapped tls.RecordHeaderError", fmt.Errorf("handshake: %w", tls.RecordHeaderError{}), fatal},
		{"*tls.CertificateVerificationError inside a net.OpError", &net.OpError{Op: "remote error", Err: &tls.CertificateVerificationError{}}, fatal},

		{"the GOAWAY text", errors.New("http2: Transport received Server's graceful shutdown GOAWAY"), unprocessed},
		{"the GOAWAY text, wrapped with %v", fmt.Errorf("http2: Transport: cannot retry err [%v] after Request.Body was written; define Request.GetBody to avoid this error",
			errors.New("http2: Transport received Server's graceful shutdown GOAWAY")), unprocessed},
		{"another GOAWAY text", errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=\"\""), transient},
	}
	for _, tt := range tests {
		got := classify.Error(newReq(t, "POST"), tt.err)
		if diff := cmp.Diff(tt.want, got, ignoreReason); diff != "" {
			t.Errorf("Error(POST, %s) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestErrorWithDoneRequestContextIsFatal(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	errs := []struct {
		name string
		err  error
	}{
		{"io.EOF", io.EOF},
		{"dial ECONNREFUSED", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}},
		{"context.DeadlineExceeded", context.DeadlineExceeded},
		{"the GOAWAY text", errors.New("http2: Transport received Server's graceful shutdown GOAWAY")},
	}
	for _, ctx := range []struct {
		name string
		ctx  context.Context
	}{{"canceled", canceled}, {"expired", expired}} {
		req := newReq(t, "GET").WithContext(ctx.ctx)
		for _, e := range errs {
			got := classify.Error(req, e.err)
			if diff := cmp.Diff(fatal, got, ignoreReason); diff != "" {
				t.Errorf("Error(GET with %s context, %s) mismatch (-want +got):\n%s", ctx.name, e.name, diff)
			}
		}
	}
}

func TestErrorWithInvalidURLIsFatal(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		url  *url.URL
	}{
		{"scheme ftp", &url.URL{Scheme: "ftp", Host: "example.com", Path: "/f"}},
		{"empty scheme", &url.URL{Host: "example.com", Path: "/f"}},
		{"empty host", &url.URL{Scheme: "https", Path: "/f"}},
		{"nil URL", nil},
	}
	for _, tt := range tests {
		req := newReq(t, "GET")
		req.URL = tt.url
		for _, err := range []error{refused, io.EOF} {
			got := classify.Error(req, err)
			if diff := cmp.Diff(fatal, got, ignoreReason); diff != "" {
				t.Errorf("Error(GET %s, %v) mismatch (-want +got):\n%s", tt.name, err, diff)
			}
		}
	}
	for _, u := range []string{"http://example.com/", "https://example.com:8443/"} {
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			t.Fatalf("http.NewRequest(GET, %q) failed: %v", u, err)
		}
		if diff := cmp.Diff(unprocessed, classify.Error(req, refused), ignoreReason); diff != "" {
			t.Errorf("Error(GET %s, %v) mismatch (-want +got):\n%s", u, refused, diff)
		}
	}
}

// The one string match of the package: net/http reports a stream that a
// GOAWAY cut off before the server processed it only by this text.
func TestErrorGOAWAYTextMatchIsPinned(t *testing.T) {
	const text = "http2: Transport received Server's graceful shutdown GOAWAY"
	got := classify.Error(newReq(t, "POST"), errors.New(text))
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %q) mismatch (-want +got):\n%s", text, diff)
	}
	for _, near := range []string{
		"http2: Transport received Server's graceful shutdown",
		"http2: Transport received server's graceful shutdown GOAWAY",
		"GOAWAY",
	} {
		got := classify.Error(newReq(t, "POST"), errors.New(near))
		if got.Unprocessed {
			t.Errorf("Error(POST, %q).Unprocessed = true; want false", near)
		}
	}
}

// net/http wraps a failed dial to a proxy as
// &net.OpError{Op: "proxyconnect", Err: <the dial *net.OpError>}.
func TestErrorProxyDialRefusedIsUnprocessed(t *testing.T) {
	err := &net.OpError{Op: "proxyconnect", Net: "tcp", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	got := classify.Error(newReq(t, "POST"), err)
	if diff := cmp.Diff(unprocessed, got, ignoreReason); diff != "" {
		t.Errorf("Error(POST, %v) mismatch (-want +got):\n%s", err, diff)
	}
}

func TestErrorProxyDialFailureIsUnprocessed(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want classify.Outcome
	}{
		{"proxyconnect dial timeout", &net.OpError{Op: "proxyconnect", Net: "tcp", Err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}}, unprocessedTime},
		{"proxyconnect dial ENETUNREACH", &net.OpError{Op: "proxyconnect", Net: "tcp", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ENETUNREACH}}, unprocessed},
	}
	for _, tt := range tests {
		got := classify.Error(newReq(t, "POST"), tt.err)
		if diff := cmp.Diff(tt.want, got, ignoreReason); diff != "" {
			t.Errorf("Error(POST, %s) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}
