package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// A push subscription is deactivated by a Record outcome (its failure
// policy queues a failed push: Outcome.Deactivate) or by hand
// (DeactivateSubscription), and made active again by
// ReactivateSubscription (by hand, or when its endpoint passes its
// validation handshake). Each is a subscription write: it takes a new
// catalog version, so every catalog learns of it and publishes matched
// before are refused and matched again (a deactivated subscription's
// deliveries are written queued). Each writes the state's reason and moves
// UpdatedAt (movedAt).
const (
	subscriptionStateSQL = `SELECT state FROM subscriptions WHERE id = ?`
	subscriptionQueueSQL = `SELECT delivery_mode, state, endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = ?`

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

	// reactivateSQL: reason, time, catalog version, ID.
	reactivateSQL = `UPDATE subscriptions SET state = 'active', state_reason = ?, updated_at = ` + movedAt + `,
	version = ? WHERE id = ?`
	// unqueueSQL makes a subscription's queued deliveries pending on its
	// endpoint with a fresh attempt budget, as redeliver does (Attempts
	// and the Last* fields stay), unlocked: those of dead letters on its
	// dead-letter URL's endpoint (the second), the others on its URL's
	// (the first). A subscription naming no dead-letter URL has no dead
	// letters queued: UpdateSubscription dropped them when it stopped
	// naming one.
	unqueueSQL = `UPDATE deliveries SET status = 'pending', receives = 0, round_attempts = 0, round_start = ?, first_failure = 0,
	next_attempt_at = ?, lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0,
	endpoint_id = CASE WHEN dead_letter_of = '' THEN ? ELSE ? END
WHERE subscription_id = ? AND status = 'queued' RETURNING endpoint_id`
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

// subscriptionQueue reads a subscription's delivery mode, state, endpoint
// and dead-letter URL's endpoint; store.ErrNotFound when it does not exist.
func (w *writer) subscriptionQueue(id string) (mode, state string, eps [2]string, err error) {
	switch err := w.scanRow(subscriptionQueueSQL, []any{id}, &mode, &state, &eps[0], &eps[1]); {
	case isNoRows(err):
		return "", "", eps, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	case err != nil:
		return "", "", eps, fmt.Errorf("read subscription %s: %w", id, err)
	}
	return mode, state, eps, nil
}

// DeactivateSubscription implements store.QueueStore in one write (see
// deactivate), which holds the writer in proportion to the subscription's
// pending deliveries. The consumers waiting on its queue are told after the
// commit.
func (s *backend) DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error) {
	var changed bool
	err := s.write(ctx, func(w *writer) error {
		changed = false
		mode, state, _, err := w.subscriptionQueue(id)
		if err != nil {
			return err
		}
		if err := store.DeactivateRefused(id, mode, state); err != nil || state == subscription.StateDeactivated {
			return err
		}
		changed = true
		return w.deactivate(id, now, now, reason)
	})
	if err != nil {
		return false, err
	}
	if changed {
		s.notifyQueued(sqlrow.IDSet{IDs: []string{id}})
	}
	return changed, nil
}

// ReactivateSubscription implements store.QueueStore in one write, which
// holds the writer in proportion to the subscription's queued deliveries.
// The deliveries move to the subscription's current endpoint, and those of
// dead letters to its dead-letter URL's, which Endpoints names (those any
// moved to, the URL's first); a consumer's lock on one of them is lost.
func (s *backend) ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	var res store.RedriveResult
	err := s.write(ctx, func(w *writer) error {
		res = store.RedriveResult{}
		mode, state, eps, err := w.subscriptionQueue(id)
		if err != nil {
			return err
		}
		endpoint, deadLetterEndpoint := eps[0], eps[1]
		if mode == subscription.ModePull {
			return fmt.Errorf("subscription %s is a pull subscription: %w", id, store.ErrConflict)
		}
		if state != subscription.StateDeactivated && state != subscription.StateAwaitingValidation {
			return nil
		}
		v, err := w.bumpCatalog()
		if err != nil {
			return err
		}
		if _, err := w.exec(reactivateSQL, reason, at, v, id); err != nil {
			return fmt.Errorf("reactivate %s: %w", id, err)
		}
		rows, err := w.query(unqueueSQL, at, at, endpoint, deadLetterEndpoint, id)
		if err != nil {
			return fmt.Errorf("reactivate %s: move the queued deliveries: %w", id, err)
		}
		defer rows.Close()
		moved := map[string]bool{}
		for rows.Next() {
			var ep string
			if err := rows.Scan(&ep); err != nil {
				return fmt.Errorf("reactivate %s: move the queued deliveries: %w", id, err)
			}
			res.Count++
			moved[ep] = true
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reactivate %s: move the queued deliveries: %w", id, err)
		}
		for _, ep := range []string{endpoint, deadLetterEndpoint} {
			if moved[ep] {
				res.Endpoints = append(res.Endpoints, ep)
				delete(moved, ep) // one URL as both
			}
		}
		return nil
	})
	if err != nil {
		return store.RedriveResult{}, err
	}
	return res, nil
}
