package sqlrow

import (
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// ScanDelivery reads a delivery.Delivery as both drivers select it, from
// deliveries d joined with events e: d.id, d.account_id,
// d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
// d.attempts, d.round_attempts, d.round_start, d.first_failure,
// d.next_attempt_at, d.last_attempt_at, d.last_status_code,
// d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at,
// d.receives, d.dead_letter_of, d.lock_until and the ordering key (empty
// for none: COALESCE); then extra destinations.
func ScanDelivery(s RowScanner, extra ...any) (delivery.Delivery, error) {
	var d delivery.Delivery
	var status string
	var t [7]int64
	dest := []any{&d.ID, &d.AccountID, &d.SubscriptionID, &d.EndpointID, &d.EventSeq, &d.EventID, &d.EventSource, &status,
		&d.Attempts, &d.RoundAttempts, &t[0], &t[1], &t[2], &t[3],
		&d.LastStatusCode, &d.LastOutcome, &d.DeadLetterReason, &t[4], &t[5], &d.Receives,
		&d.DeadLetterOf, &t[6], &d.OrderingKey}
	if err := s.Scan(append(dest, extra...)...); err != nil {
		return delivery.Delivery{}, err
	}
	d.Status = delivery.Status(status)
	d.RoundStart = FromUnixMS(t[0])
	d.FirstFailure = FromUnixMS(t[1])
	d.NextAttemptAt = FromUnixMS(t[2])
	d.LastAttemptAt = FromUnixMS(t[3])
	d.CreatedAt = FromUnixMS(t[4])
	d.DeliveredAt = FromUnixMS(t[5])
	d.LockedUntil = FromUnixMS(t[6])
	return d, nil
}

// ScanEvent reads a store.StoredEvent (events e: e.seq, e.account_id,
// e.id, e.source, e.type, e.subject, e.payload, e.published_at,
// e.schema_errors, whose NULL is nil; the order of ScanListed's event
// columns).
func ScanEvent(s RowScanner) (store.StoredEvent, error) {
	var e store.StoredEvent
	var at int64
	if err := s.Scan(&e.Seq, &e.AccountID, &e.ID, &e.Source, &e.Type, &e.Subject, &e.Payload, &at, &e.SchemaErrors); err != nil {
		return store.StoredEvent{}, err
	}
	e.PublishedAt = FromUnixMS(at)
	return e, nil
}
