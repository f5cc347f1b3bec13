package sqlite

import (
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// A Record outcome deactivates a push subscription (its failure policy
// queues a failed push: Outcome.Deactivate) inside the writer's batch, as
// DeactivateSubscription does by hand (internal/store/engine/states.go): a
// subscription write that takes a new catalog version, so every catalog
// learns of it and publishes matched before are refused and matched again
// (a deactivated subscription's deliveries are written queued). It writes
// the state's reason and moves UpdatedAt (movedAt).
const (
	subscriptionStateSQL = `SELECT state FROM subscriptions WHERE id = ?`

	// movedAt is the updated_at a change of state writes, given its time:
	// that time, or a millisecond after the one stored if that is not
	// earlier, so that every change moves it.
	movedAt = `MAX(updated_at + 1, ?)`

	// deactivateSQL: reason, time, catalog version, ID. queuePendingSQL
	// queues the subscription's pending deliveries (leased ones included:
	// their holders' outcomes then only log), receivable at the time given.
	deactivateSQL = `UPDATE subscriptions SET state = 'deactivated', state_reason = ?, updated_at = ` + movedAt + `,
	version = ? WHERE id = ?`
	queuePendingSQL = `UPDATE deliveries SET status = 'queued', next_attempt_at = ?,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = ? AND status = 'pending' AND status <> 'delivered'`
)

// deactivate deactivates subscription id if it is active (any state but
// deactivated, "" included: written by code that knows no states): state
// deactivated for reason, changed at `changed` (movedAt), at a new catalog
// version, and its pending deliveries queued, receivable at queueAt. A
// subscription already deactivated, or gone, is left as it is (the catalog
// version does not move).
func (w *writer) deactivate(id string, queueAt, changed time.Time, reason string) error {
	var state string
	switch err := w.scanRow(subscriptionStateSQL, []any{id}, &state); {
	case isNoRows(err):
		return nil
	case err != nil:
		return fmt.Errorf("read subscription %s: %w", id, err)
	}
	if state == subscription.StateDeactivated {
		return nil
	}
	v, err := w.bumpCatalog()
	if err != nil {
		return err
	}
	if _, err := w.exec(deactivateSQL, reason, sqlrow.UnixMS(changed), v, id); err != nil {
		return fmt.Errorf("deactivate subscription %s: %w", id, err)
	}
	if _, err := w.exec(queuePendingSQL, sqlrow.UnixMS(queueAt), id); err != nil {
		return fmt.Errorf("queue the pending deliveries of subscription %s: %w", id, err)
	}
	return nil
}
