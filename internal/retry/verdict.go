package retry

import "time"

// Dead-letter reasons (a dead letter's dead_letter_reason), as Event Grid
// names them.
const (
	ReasonMaxAttempts = "MaxDeliveryAttemptsExceeded"
	ReasonTTL         = "TimeToLiveExceeded"
	ReasonNoRetry     = "NonRetriableStatus"
	// ReasonDestinationBlocked ends a delivery whose URL's host resolved to
	// an address Herald's destination policy refuses. Decide never gives
	// it: the attempting stage does, since no policy retries such an attempt.
	ReasonDestinationBlocked = "DestinationBlocked"
	// ReasonDeadLetterUndeliverable drops the delivery of a dead letter
	// that its subscription's dead-letter URL never took (within the
	// attempting stage's DeadLetterTTL). Decide never gives it.
	ReasonDeadLetterUndeliverable = "DeadLetterUndeliverable"
	// ReasonTransformFailed ends a delivery whose subscription's transform
	// failed on its event (a missing member, a wrong type, the cost limit,
	// an output too large): no retry would give another result. Decide
	// never gives it: the attempting stage does.
	ReasonTransformFailed = "TransformFailed"
	// ReasonInvalidTarget ends a delivery to a broker whose subject,
	// routing key or topic template gives, for this event, a target the
	// broker can never take (an empty segment, a wildcard, a character
	// Kafka refuses: internal/broker/template.go): no retry would give
	// another target. Decide never gives it: the attempting stage does.
	ReasonInvalidTarget = "InvalidTarget"
)

// Attempt describes a delivery attempt that has just ended, as Decide needs it.
type Attempt struct {
	// Number is the 1-based number of this attempt within the current attempt
	// budget (a redeliver starts a new budget at 1).
	Number int
	// StatusCode is the HTTP status, or 0 when there was no response.
	StatusCode int
	// RetryAfter is the receiver's Retry-After, already converted to a delay
	// from Now (0 when absent). Decide honours it only on 429 and 503.
	RetryAfter time.Duration
	// Start is when the budget's clock started: the publish time, or the time
	// of the redeliver that opened this budget. The TTL counts from it.
	Start time.Time
	// FirstFailure is when the first failed attempt of this budget ended
	// (t0 of the Workfront and SAP formulas). Zero when this attempt is the
	// first failure; Decide then uses Now.
	FirstFailure time.Time
	// Now is when the outcome was observed.
	Now time.Time
}

// Kind is what happens to a delivery after an attempt.
type Kind int

const (
	// Delivered: the attempt succeeded.
	Delivered Kind = iota
	// Retry: attempt again at Verdict.At.
	Retry
	// DeadLetter: stop; Verdict.Reason says why. Whether the delivery is then
	// dead-lettered or dropped is the subscription's choice, not the policy's.
	DeadLetter
)

// Verdict is Decide's answer.
type Verdict struct {
	Kind   Kind
	At     time.Time // when Kind == Retry
	Reason string    // when Kind == DeadLetter
}
