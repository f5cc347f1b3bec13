// Package delivery holds the state of one event's delivery to one
// subscription (Delivery), its status and the reasons it ends, and the
// attempt log's rows (Attempt).
package delivery

import (
	"slices"
	"time"
)

// Status of a delivery.
type Status string

const (
	StatusPending      Status = "pending"
	StatusDelivered    Status = "delivered"
	StatusDeadLettered Status = "dead_lettered"
	StatusDropped      Status = "dropped"
	StatusQueued       Status = "queued"
	// StatusFiltered ends a delivery whose subscription's transform gave
	// null for its event (docs/subscriptions.md, "Transform and filter
	// expression"): skipped, never attempted, and not a failure.
	StatusFiltered Status = "filtered"
)

// Statuses are the statuses a delivery can be in.
var Statuses = []Status{StatusPending, StatusDelivered, StatusDeadLettered, StatusDropped, StatusQueued, StatusFiltered}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Final reports whether a delivery in this status will not be attempted again
// without an API call.
func (s Status) Final() bool {
	return s == StatusDelivered || s == StatusDeadLettered || s == StatusDropped || s == StatusFiltered
}

// Reasons a delivery ends without being delivered (its DeadLetterReason).
const (
	// ReasonSubscriptionDeleted ends pending deliveries of a deleted
	// subscription.
	ReasonSubscriptionDeleted = "SubscriptionDeleted"
	// ReasonRejected dead-letters a delivery a consumer rejected.
	ReasonRejected = "Rejected"
)

// Delivery is the state of one event's delivery to one subscription.
type Delivery struct {
	ID             string
	AccountID      string // its subscription's (and event's) account
	SubscriptionID string
	EndpointID     string
	EventSeq       int64
	EventID        string
	EventSource    string
	Status         Status
	// Attempts counts every attempt ever made; RoundAttempts only those of
	// the current attempt budget (reset by a redeliver or redrive).
	Attempts      int
	RoundAttempts int
	// RoundStart is when the current budget began: the publish time, or the
	// last redeliver. The policy's TTL counts from it.
	RoundStart time.Time
	// FirstFailure is when the budget's first failed attempt ended (zero
	// before any failure): t0 of the Workfront and SAP schedules.
	FirstFailure     time.Time
	NextAttemptAt    time.Time // meaningful while pending
	LastAttemptAt    time.Time
	LastStatusCode   int
	LastOutcome      string
	DeadLetterReason string
	CreatedAt        time.Time // the event's publish time
	DeliveredAt      time.Time
	// Receives counts the times consumers received it (store.QueueStore's
	// Receive).
	Receives int
	// DeadLetterOf, for the delivery of a dead letter to its
	// subscription's dead-letter URL, is the dead-lettered delivery's ID
	// ("" for any other delivery).
	DeadLetterOf string
	// LockedUntil is when the lock of its last receive ends (zero when it
	// was never received or the lock was settled).
	LockedUntil time.Time
	// OrderingKey is the partitionkey of a delivery of a subscription with
	// "ordering": "key" when it was made, "" for an unordered one. Among a
	// subscription's pending deliveries with the same key, only the one
	// of the earliest event (publish order) is attempted (docs/ordering.md).
	OrderingKey string
}

// Attempt is one row of the attempt log.
type Attempt struct {
	DeliveryID   string
	Number       int // 1-based over the delivery's whole life
	StartedAt    time.Time
	Duration     time.Duration
	StatusCode   int
	Outcome      string // "http_503", "timeout", "connection_refused", ...
	Error        string
	ResponseBody []byte // at most the first 4 KiB
}
