package postgres

import (
	"strings"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// cleanText makes s storable in a PostgreSQL text column, which holds only
// valid UTF-8 without NUL bytes: invalid sequences become U+FFFD and NUL
// bytes are removed. It is applied to the free-form diagnostics of an
// attempt (its error and outcome strings), never to identifiers.
func cleanText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// scanner is pgx.Row or pgx.Rows.
type scanner = sqlrow.RowScanner

// deliveryCols selects a delivery.Delivery from deliveries d joined with events
// e; scanDelivery reads them in this order.
const deliveryCols = `d.id, d.account_id, d.subscription_id, d.endpoint_id, d.event_seq, e.id, e.source, d.status,
	d.attempts, d.round_attempts, d.round_start, d.first_failure, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_outcome, d.dead_letter_reason, d.created_at, d.delivered_at, d.receives,
	d.dead_letter_of, d.lock_until, COALESCE(d.ordering_key, '')`

// scanDelivery reads deliveryCols followed by extra destinations.
func scanDelivery(s scanner, extra ...any) (delivery.Delivery, error) {
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
	d.RoundStart = sqlrow.FromUnixMS(t[0])
	d.FirstFailure = sqlrow.FromUnixMS(t[1])
	d.NextAttemptAt = sqlrow.FromUnixMS(t[2])
	d.LastAttemptAt = sqlrow.FromUnixMS(t[3])
	d.CreatedAt = sqlrow.FromUnixMS(t[4])
	d.DeliveredAt = sqlrow.FromUnixMS(t[5])
	d.LockedUntil = sqlrow.FromUnixMS(t[6])
	return d, nil
}

// eventCols selects a store.StoredEvent from events e.
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
