package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Error classifies a transport error returned for req (an attempt that got
// no response). The rules:
//
//   - The caller's own cancellation or deadline (req's context is done),
//     and context.Canceled from any source, are Fatal.
//   - A malformed URL, certificate and TLS verification failures, and a TLS
//     alert from the server (it refused the handshake, for example our
//     client certificate) are Fatal: sending again cannot fix them.
//   - A request that net/http refuses to send because it is malformed is
//     Fatal with a Reason of "malformed request: " and what is wrong: a
//     nil Header, a header or trailer field name that is not a token or a
//     value with a control character other than tab, an invalid method, a
//     control character in the URL's query or opaque part, a
//     non-zero ContentLength with a nil Body. net/http reports these as
//     plain strings, so Error checks the request instead; every attempt
//     would fail the same way.
//   - Dial and DNS failures, refused connections and HTTP/2 REFUSED_STREAM
//     or an unprocessed GOAWAY are Transient (Timeout for a dial timeout)
//     and Unprocessed: the server never saw the request.
//   - Other timeouts (net.Error.Timeout, context.DeadlineExceeded of an
//     attempt's own deadline) are Timeout.
//   - Everything else (EOF, connection reset, a broken connection) is
//     Transient but not Unprocessed: the server may have acted.
func Error(req *http.Request, err error) Outcome {
	if req.Context().Err() != nil || errors.Is(err, context.Canceled) || cancelled(req) {
		return Outcome{Kind: Fatal, Reason: "canceled"}
	}
	if req.URL == nil || req.URL.Host == "" ||
		(req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return Outcome{Kind: Fatal, Reason: "invalid URL"}
	}
	if r := malformed(req); r != "" {
		return Outcome{Kind: Fatal, Reason: r}
	}
	if isTLSFailure(err) {
		return Outcome{Kind: Fatal, Reason: "TLS verification failed"}
	}
	if op := dialError(err); op != nil {
		if op.Timeout() {
			return Outcome{Kind: Timeout, Reason: "dial timeout", Unprocessed: true}
		}
		return Outcome{Kind: Transient, Reason: "dial error", Unprocessed: true}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return Outcome{Kind: Transient, Reason: "DNS error", Unprocessed: true}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Outcome{Kind: Transient, Reason: "connection refused", Unprocessed: true}
	}
	if isHTTP2Unprocessed(err) {
		return Outcome{Kind: Transient, Reason: "HTTP/2 stream refused", Unprocessed: true}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Outcome{Kind: Timeout, Reason: "timeout"}
	}
	if errors.Is(err, syscall.ECONNRESET) {
		return Outcome{Kind: Transient, Reason: "connection reset"}
	}
	return Outcome{Kind: Transient, Reason: "connection error"}
}

// cancelled reports whether req's deprecated Cancel channel is closed.
// http.Client still closes it for a Transport that is not *http.Transport
// when Client.Timeout fires, and net/http then fails the attempt with "net/http:
// request canceled", sometimes before the context's own deadline shows.
func cancelled(req *http.Request) bool {
	//lint:ignore SA1019 http.Client still uses Request.Cancel for wrapped transports.
	c := req.Cancel
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// dialError returns the *net.OpError of a failed dial anywhere in err's
// chain. errors.As alone stops at the first *net.OpError, which for a proxy
// is net/http's outer {Op: "proxyconnect"} around the dial that failed.
func dialError(err error) *net.OpError {
	var op *net.OpError
	for errors.As(err, &op) {
		if op.Op == "dial" {
			return op
		}
		err = op.Err
	}
	return nil
}

// isTLSFailure reports whether err is a failure to verify the server or to
// speak TLS with it at all.
func isTLSFailure(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &record) || errors.As(err, &alert)
}

// http2StreamError mirrors the fields of the HTTP/2 stream error of both
// net/http's bundled HTTP/2 and golang.org/x/net/http2. net/http's unexported
// type converts itself into any struct of this shape through errors.As (see
// net/http/h2_error.go), which gives a typed check without importing x/net.
type http2StreamError struct {
	StreamID uint32
	Code     uint32
	Cause    error
}

func (e http2StreamError) Error() string { return "http2 stream error" }

// http2RefusedStream is REFUSED_STREAM (RFC 9113 §7): the server did not
// process the stream.
const http2RefusedStream = 0x7

// isHTTP2Unprocessed reports whether err proves the HTTP/2 server did not
// process the request: a REFUSED_STREAM, or a GOAWAY that came before the
// stream was processed.
func isHTTP2Unprocessed(err error) bool {
	var se http2StreamError
	if errors.As(err, &se) && se.Code == http2RefusedStream {
		return true
	}
	// net/http reports an unprocessed GOAWAY with an unexported error value
	// that has no type to match, and a refused stream of a request it could
	// not rewind as flat text ("http2: Transport: cannot retry err [stream
	// error: ...; REFUSED_STREAM; ...] after Request.Body was written"), so
	// their text is the only handle. These are the package's only string
	// matches; classify tests pin them against real net/http errors.
	msg := err.Error()
	// "received GOAWAY from server ErrCode:" is net/http's report of a
	// GOAWAY with an error whose last stream ID is below this stream's.
	return strings.Contains(msg, "received Server's graceful shutdown GOAWAY") ||
		strings.Contains(msg, "http2: Transport received GOAWAY from server ErrCode:") ||
		strings.Contains(msg, "http2: Transport: cannot retry err [stream error:") && strings.Contains(msg, "; REFUSED_STREAM")
}
