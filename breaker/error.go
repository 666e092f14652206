package breaker

import (
	"errors"
	"strconv"
	"time"
)

// ErrOpen is what every refusal of a [Breaker] matches with errors.Is: the
// scope's circuit is open, or half-open with its probe slots taken, so the
// attempt was not sent. [Circuit.Allow] returns it inside an [*OpenError].
var ErrOpen = errors.New("breaker: circuit open")

// OpenError is the error [Circuit.Allow] returns, as a pointer, when it
// refuses an attempt: the scope's circuit is open, or half-open with all
// its probe slots taken. It matches [ErrOpen] with errors.Is, and unwraps
// to the last failure that counted, so that errors.Is(err,
// context.DeadlineExceeded) tells a hung server from one that answers 503.
// Callers must not modify it.
type OpenError struct {
	// Scope is the scope whose circuit refused the attempt.
	Scope string
	// Last is the last failure counted before the refusal: the attempt's
	// error, or a description of its outcome ("status 503") when a
	// response came. It is nil only if no failure was ever counted.
	Last error
	// Until is when the open time ends and the circuit lets a probe
	// through. It is zero when the circuit is half-open with its probes
	// taken: it closes as soon as enough of them succeed.
	Until time.Time
}

// Error returns "breaker: circuit open for scope <scope>", followed by the
// last failure when there is one.
func (e *OpenError) Error() string {
	s := "breaker: circuit open for scope " + strconv.Quote(e.Scope)
	if e.Last != nil {
		s += ": " + e.Last.Error()
	}
	return s
}

// Is reports whether target is [ErrOpen].
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Unwrap returns the last failure counted, e.Last.
func (e *OpenError) Unwrap() error { return e.Last }

// failure is the last failure the circuit keeps of an attempt that ended
// with out and err: err itself, or when a response came (err nil) a
// description of the outcome such as "status 503".
func failure(reason, kind string, err error) error {
	if err != nil {
		return err
	}
	if reason == "" {
		reason = kind
	}
	return errors.New(reason)
}
