package sqlite

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// An attempt number that is already logged is overwritten: numbers come
	// from the caller, and the newest report of an attempt wins.
	// They are inserted up to maxRowsPerInsert a statement (valuesSQL).
	insertAttemptsSQL = `INSERT INTO attempts
(delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body)
VALUES `
	attemptParams      = 8
	insertAttemptsTail = `
ON CONFLICT (delivery_id, number) DO UPDATE SET
	started_at = excluded.started_at, duration_us = excluded.duration_us,
	status_code = excluded.status_code, outcome = excluded.outcome,
	error = excluded.error, response_body = excluded.response_body`

	// recordStateSQL writes an outcome's state (no row changed: the state
	// change does not apply); recordQueuedSQL too, and returns the
	// subscription of the delivery it updated (no row: it does not apply).
	// Only a queued outcome needs the subscription: RETURNING costs a
	// result table per statement, so the common outcomes do without.
	recordStateSQL  = `UPDATE deliveries SET ` + recordSet + ` WHERE ` + recordWhere
	recordQueuedSQL = recordStateSQL + ` RETURNING subscription_id`
	recordSet       = `status = ?, attempts = ?, round_attempts = ?, first_failure = ?, next_attempt_at = ?,
	last_attempt_at = ?, last_status_code = ?, last_outcome = ?, dead_letter_reason = ?,
	delivered_at = ?, lease_owner = '', lease_until = 0`
	recordWhere = `id = ? AND status = 'pending' AND (? = '' OR lease_owner = ?)`

	deliveryExistsSQL = `SELECT 1 FROM deliveries WHERE id = ?`

	// insertDeadLetterSQL writes the delivery of a dead letter (id ?1) to
	// its subscription's dead-letter URL: the dead-lettered delivery's (?3)
	// subscription, account and event, pending on the endpoint the
	// subscription names now (none: nothing is written), due at the
	// attempt's end ?2 (its round start too; the event's publish time when
	// that is earlier or unknown), created at the event's publish time as
	// every delivery of the event is. An ID already stored is left alone.
	insertDeadLetterSQL = `INSERT INTO deliveries
(id, account_id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at, dead_letter_of)
SELECT ?1, d.account_id, d.subscription_id, s.dead_letter_endpoint_id, d.event_seq, 'pending',
	MAX(?2, e.published_at), MAX(?2, e.published_at), e.published_at, d.id
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq JOIN subscriptions AS s ON s.id = d.subscription_id
WHERE d.id = ?3 AND s.dead_letter_endpoint_id <> ''
ON CONFLICT (id) DO NOTHING`
)

// Record implements store.DeliveryStore. For each outcome, in order, it
// writes the delivery's new state if the delivery is still pending, and
// leased to o.LeaseOwner when that is set (LastAttemptAt becomes the
// attempt's start, the lease is cleared), and
// appends the attempt to the log, replacing a logged attempt with the same
// number. An outcome for a delivery that no longer exists is skipped with a
// warning. An outcome with an invalid status or no delivery ID fails the
// call before anything is written.
//
// A queued outcome writes status queued and NextAttemptAt, unlocked. With
// Deactivate too, and only when its state change applies, the delivery's
// subscription, if it is active, is deactivated (see deactivate: its other
// pending deliveries queued at the attempt's start, its state changed at
// the outcome's NextAttemptAt, for o.DeactivateReason); Deactivate on an
// outcome of another status is ignored. After the commit, the
// subscriptions that got queued deliveries are passed to Options.OnQueued.
//
// The outcomes whose state change applied are added to the delivery
// rollups (store.StatsStore) in the same transaction: one statement for
// the batch (addStats).
//
// A dead-lettered outcome with DeadLetterCopy, when its state change
// applies, writes the delivery of the dead letter (insertDeadLetterSQL) on
// the dead-letter URL's endpoint its subscription names in this
// transaction: DeadLetterCopy.EndpointID, unless the subscription changed
// its dead-letter URL since the caller read it (then the new one's; none
// is written when it names none any more). Its ID is DeadLetterCopy.ID;
// the copy's other fields are ignored. DeadLetterCopy on an outcome of
// another status is ignored.
//
// applied says which outcomes' state changes applied (see store.Store).
func (s *backend) Record(ctx context.Context, outcomes []store.Outcome) (applied []bool, err error) {
	if len(outcomes) == 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return []bool{}, nil
	}
	for i, o := range outcomes {
		if o.Attempt.DeliveryID == "" {
			return nil, fmt.Errorf("record: outcome %d has no delivery ID", i)
		}
		if !o.Status.Valid() {
			return nil, fmt.Errorf("record: outcome %d for %s: invalid status %q", i, o.Attempt.DeliveryID, o.Status)
		}
	}
	var queued sqlrow.IDSet
	var logged []any  // the attempts to log: attemptParams values each
	var counted []any // the applied outcomes' rollup input: statsParams values each
	applied = make([]bool, len(outcomes))
	err = s.write(ctx, func(w *writer) error {
		queued.Reset()
		logged, counted = logged[:0], counted[:0]
		clear(applied) // the request may run again (writer.commit)
		for i, o := range outcomes {
			a := &o.Attempt
			var sub string
			args := []any{
				string(o.Status), o.Attempts, o.RoundAttempts, sqlrow.UnixMS(o.FirstFailure), sqlrow.UnixMS(o.NextAttemptAt),
				sqlrow.UnixMS(a.StartedAt), o.LastStatusCode, o.LastOutcome, o.DeadLetterReason,
				sqlrow.UnixMS(o.DeliveredAt), a.DeliveryID, o.LeaseOwner, o.LeaseOwner}
			var err error
			if o.Status == delivery.StatusQueued {
				err = w.scanRow(recordQueuedSQL, args, &sub)
			} else if n, xerr := w.execN(recordStateSQL, args...); xerr != nil {
				err = xerr
			} else if n == 0 {
				err = errNoRows
			}
			if err == nil {
				counted = statsOf(counted, &o)
				applied[i] = true
			}
			switch {
			case err == nil && o.Status == delivery.StatusQueued:
				queued.Add(sub)
				if o.Deactivate {
					if err := w.deactivate(sub, a.StartedAt, o.NextAttemptAt, o.DeactivateReason); err != nil {
						return fmt.Errorf("record %s: %w", a.DeliveryID, err)
					}
				}
			case err == nil && o.Status == delivery.StatusDeadLettered && o.DeadLetterCopy != nil:
				if _, err := w.exec(insertDeadLetterSQL, o.DeadLetterCopy.ID, sqlrow.AttemptDueMS(a), a.DeliveryID); err != nil {
					return fmt.Errorf("record %s: dead letter %s: %w", a.DeliveryID, o.DeadLetterCopy.ID, err)
				}
			case err == nil:
			case !isNoRows(err):
				return fmt.Errorf("record %s: %w", a.DeliveryID, err)
			default:
				var one int
				if err := w.scanRow(deliveryExistsSQL, []any{a.DeliveryID}, &one); err != nil {
					if isNoRows(err) {
						w.log.Warn("record: no such delivery; attempt not logged", "delivery_id", a.DeliveryID, "attempt", a.Number)
						continue
					}
					return fmt.Errorf("record %s: %w", a.DeliveryID, err)
				}
			}
			if a.Number == 0 {
				continue // no attempt was made (expired while held): nothing to log
			}
			logged = append(logged, a.DeliveryID, a.Number, sqlrow.UnixMS(a.StartedAt), a.Duration.Microseconds(),
				a.StatusCode, a.Outcome, a.Error, a.ResponseBody)
		}
		for rest := logged; len(rest) > 0; {
			n := min(len(rest)/attemptParams, maxRowsPerInsert)
			q := w.valuesSQL(insertAttemptsSQL, attemptParams, n, insertAttemptsTail)
			if _, err := w.exec(q, rest[:n*attemptParams]...); err != nil {
				return fmt.Errorf("record attempt %d of %s: %w", rest[1], rest[0], err)
			}
			rest = rest[n*attemptParams:]
		}
		return w.addStats(counted)
	})
	if err != nil {
		return nil, err
	}
	s.notifyQueued(queued)
	return applied, nil
}
