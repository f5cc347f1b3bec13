package sqlrow

import "github.com/herald-events/herald/internal/delivery"

// ScanDelivery reads a delivery's columns, in the order of the columns
// id, account_id, subscription_id, endpoint_id, event_seq of deliveries,
// id and source of its event, then status, attempts, round_attempts,
// round_start, first_failure, next_attempt_at, last_attempt_at,
// last_status_code, last_outcome, dead_letter_reason, created_at,
// delivered_at, receives, dead_letter_of, lock_until and ordering_key
// (empty for none) of deliveries (the engine's statement GetDelivery), followed by
// extra destinations.
func ScanDelivery(sc RowScanner, extra ...any) (delivery.Delivery, error) {
	var d delivery.Delivery
	var status string
	var t [7]int64
	dest := []any{&d.ID, &d.AccountID, &d.SubscriptionID, &d.EndpointID, &d.EventSeq, &d.EventID, &d.EventSource, &status,
		&d.Attempts, &d.RoundAttempts, &t[0], &t[1], &t[2], &t[3],
		&d.LastStatusCode, &d.LastOutcome, &d.DeadLetterReason, &t[4], &t[5], &d.Receives,
		&d.DeadLetterOf, &t[6], &d.OrderingKey}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return delivery.Delivery{}, err
	}
	d.Status = delivery.Status(status)
	d.RoundStart, d.FirstFailure = FromUnixMS(t[0]), FromUnixMS(t[1])
	d.NextAttemptAt, d.LastAttemptAt = FromUnixMS(t[2]), FromUnixMS(t[3])
	d.CreatedAt, d.DeliveredAt = FromUnixMS(t[4]), FromUnixMS(t[5])
	d.LockedUntil = FromUnixMS(t[6])
	return d, nil
}
