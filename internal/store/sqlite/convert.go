package sqlite

import (
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// scanner is *sql.Row or *sql.Rows.
type scanner = sqlrow.RowScanner

// deliveryCols selects a delivery.Delivery from deliveries d joined with events e;
// scanDelivery reads them in this order.
const deliveryCols = `d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at,
	d.receives, d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')`

func deliveryDest(d *delivery.Delivery, times *[7]int64) []any {
	return []any{&d.ID, &d.AccountID, &d.SubscriptionID, &d.EndpointID, &d.EventSeq, &d.EventID, &d.EventSource, &d.Status,
		&d.Attempts, &d.RoundAttempts, &times[0], &times[1], &times[2], &times[3],
		&d.LastStatusCode, &d.LastOutcome, &d.DeadLetterReason, &times[4], &times[5],
		&d.Receives, &d.DeadLetterOf, &times[6], &d.OrderingKey}
}

func deliveryTimes(d *delivery.Delivery, times *[7]int64) {
	d.RoundStart = sqlrow.FromUnixMS(times[0])
	d.FirstFailure = sqlrow.FromUnixMS(times[1])
	d.NextAttemptAt = sqlrow.FromUnixMS(times[2])
	d.LastAttemptAt = sqlrow.FromUnixMS(times[3])
	d.CreatedAt = sqlrow.FromUnixMS(times[4])
	d.DeliveredAt = sqlrow.FromUnixMS(times[5])
	d.LockedUntil = sqlrow.FromUnixMS(times[6])
}

// scanDelivery reads deliveryCols followed by extra destinations.
func scanDelivery(s scanner, extra ...any) (delivery.Delivery, error) {
	var d delivery.Delivery
	var times [7]int64
	if err := s.Scan(append(deliveryDest(&d, &times), extra...)...); err != nil {
		return delivery.Delivery{}, err
	}
	deliveryTimes(&d, &times)
	return d, nil
}

// eventCols selects a store.StoredEvent from events e (in the order of
// sqlrow.ScanListed's event columns).
const eventCols = `e.seq, e.account_id, e.id, e.source, e.type, e.subject, e.payload, e.published_at`

func scanEvent(s scanner) (store.StoredEvent, error) {
	var e store.StoredEvent
	var at int64
	if err := s.Scan(&e.Seq, &e.AccountID, &e.ID, &e.Source, &e.Type, &e.Subject, &e.Payload, &at); err != nil {
		return store.StoredEvent{}, err
	}
	e.PublishedAt = sqlrow.FromUnixMS(at)
	return e, nil
}
