package sqlite

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// An attempt number that is already logged is overwritten: numbers come
	// from the caller, and the newest report of an attempt wins.
	insertAttemptSQL = `INSERT INTO attempts
(delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (delivery_id, number) DO UPDATE SET
	started_at = excluded.started_at, duration_us = excluded.duration_us,
	status_code = excluded.status_code, outcome = excluded.outcome,
	error = excluded.error, response_body = excluded.response_body`

	recordStateSQL = `UPDATE deliveries SET
	status = ?, attempts = ?, round_attempts = ?, first_failure = ?, next_attempt_at = ?,
	last_attempt_at = ?, last_status_code = ?, last_outcome = ?, dead_letter_reason = ?,
	delivered_at = ?, lease_owner = '', lease_until = 0
WHERE id = ? AND status = 'pending' AND (? = '' OR lease_owner = ?)`

	deliveryExistsSQL = `SELECT 1 FROM deliveries WHERE id = ?`
)

// Record implements store.DeliveryStore. For each outcome, in order, it
// writes the delivery's new state if the delivery is still pending, and
// leased to o.LeaseOwner when that is set (LastAttemptAt becomes the
// attempt's start, the lease is cleared), and
// appends the attempt to the log, replacing a logged attempt with the same
// number. An outcome for a delivery that no longer exists is skipped with a
// warning. An outcome with an invalid status or no delivery ID fails the
// call before anything is written.
func (s *Store) Record(ctx context.Context, outcomes []store.Outcome) error {
	if len(outcomes) == 0 {
		if s.closed.Load() {
			return store.ErrClosed
		}
		return nil
	}
	for i, o := range outcomes {
		if o.Attempt.DeliveryID == "" {
			return fmt.Errorf("record: outcome %d has no delivery ID", i)
		}
		if !o.Status.Valid() {
			return fmt.Errorf("record: outcome %d for %s: invalid status %q", i, o.Attempt.DeliveryID, o.Status)
		}
	}
	return s.write(ctx, func(w *writer) error {
		for _, o := range outcomes {
			a := &o.Attempt
			n, err := w.execN(recordStateSQL,
				string(o.Status), o.Attempts, o.RoundAttempts, sqlrow.UnixMS(o.FirstFailure), sqlrow.UnixMS(o.NextAttemptAt),
				sqlrow.UnixMS(a.StartedAt), o.LastStatusCode, o.LastOutcome, o.DeadLetterReason,
				sqlrow.UnixMS(o.DeliveredAt), a.DeliveryID, o.LeaseOwner, o.LeaseOwner)
			if err != nil {
				return fmt.Errorf("record %s: %w", a.DeliveryID, err)
			}
			if n == 0 {
				var one int
				if err := w.scanRow(deliveryExistsSQL, []any{a.DeliveryID}, &one); err != nil {
					if isNoRows(err) {
						w.log.Warn("record: no such delivery; attempt not logged", "delivery", a.DeliveryID, "attempt", a.Number)
						continue
					}
					return fmt.Errorf("record %s: %w", a.DeliveryID, err)
				}
			}
			if a.Number == 0 {
				continue // no attempt was made (expired while held): nothing to log
			}
			if _, err := w.exec(insertAttemptSQL, a.DeliveryID, a.Number, sqlrow.UnixMS(a.StartedAt), a.Duration.Microseconds(),
				a.StatusCode, a.Outcome, a.Error, a.ResponseBody); err != nil {
				return fmt.Errorf("record attempt %d of %s: %w", a.Number, a.DeliveryID, err)
			}
		}
		return nil
	})
}
