package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// The outcomes of a failed publish (the attempt log's outcome).
const (
	// OutcomeUnreachable: no connection to the broker could be made (or
	// kept): refused, reset, unresolvable, or a dial that timed out.
	OutcomeUnreachable = "broker_unreachable"
	// OutcomeRefused: the broker answered no — a negative
	// acknowledgement, an unroutable mandatory message, no JetStream
	// stream for the subject, refused credentials, an MQTT reason code
	// of 0x80 or more, a Kafka error code, a TLS certificate Herald does
	// not trust (dial.go's IsCertificateError) — or the destination could not
	// be published to as it is (a template that gives a bad subject).
	OutcomeRefused = "broker_refused"
	// OutcomeTimeout: connected, but no acknowledgement came within the
	// attempt's deadline.
	OutcomeTimeout = "broker_timeout"
)

// Error is a failed publish: its outcome and cause.
type Error struct {
	Outcome string
	Err     error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Unreachable is err as OutcomeUnreachable (nil for nil).
func Unreachable(err error) error { return wrap(OutcomeUnreachable, err) }

// Refused is err as OutcomeRefused (nil for nil).
func Refused(err error) error { return wrap(OutcomeRefused, err) }

// Refusedf is a new OutcomeRefused error.
func Refusedf(format string, args ...any) error {
	return &Error{Outcome: OutcomeRefused, Err: fmt.Errorf(format, args...)}
}

// TimedOut is err as OutcomeTimeout (nil for nil).
func TimedOut(err error) error { return wrap(OutcomeTimeout, err) }

// wrap classifies err, unless it carries a classification already.
func wrap(outcome string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Outcome: outcome, Err: err}
}

// OutcomeOf is the outcome of a publish that failed with err: the
// outermost *Error's, else OutcomeTimeout for a deadline (the context's or
// a network timeout), else OutcomeUnreachable.
func OutcomeOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Outcome
	}
	if IsTimeout(err) {
		return OutcomeTimeout
	}
	return OutcomeUnreachable
}

// IsTimeout reports whether err is a deadline: the context's, or a
// network operation's.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// AfterConnect classifies err, which a publish on an open connection (or
// the protocol handshake after the TCP connection was made) returned when
// the client library said nothing more precise: a certificate Herald does
// not trust (IsCertificateError) is OutcomeRefused, a deadline
// OutcomeTimeout, anything else (the connection lost) OutcomeUnreachable.
func AfterConnect(err error) error {
	if err == nil {
		return nil
	}
	if IsCertificateError(err) {
		return Refused(err)
	}
	if IsTimeout(err) {
		return TimedOut(err)
	}
	return Unreachable(err)
}
