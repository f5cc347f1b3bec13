package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// A push subscription is deactivated by a Record outcome (its failure
// policy queues a failed push: Outcome.Deactivate) or by hand
// (DeactivateSubscription), and made active again by
// ReactivateSubscription (by hand, or when its endpoint passes its
// validation handshake). Each is a subscription write: it takes the
// catalog version's row lock before any other (a deactivating Record batch
// takes it at its start, FOR UPDATE: guardBatch) and stores the new version
// on the subscription, with the catalog's NOTIFY, so every node's catalog
// learns of the change and publishes matched before it are refused and
// matched again (a deactivated subscription's deliveries are written
// queued). Each writes the state's reason and moves updated_at to the
// change's time, or a millisecond after the one stored if that is not
// earlier, so that every change moves it.
const (
	// activeSubscriptionsSQL: those of $1 a deactivation changes.
	activeSubscriptionsSQL = `SELECT id FROM subscriptions
WHERE id = ANY($1) AND state <> 'deactivated' AND delivery_mode = 'push'`

	// deactivateSQL deactivates the subscriptions $1 at catalog version $3,
	// changed at $4 for the reasons $5, and queues their pending
	// deliveries, leased ones included (their holders' outcomes then only
	// log their attempts), receivable at $2 (each subscription's), found
	// in the partial index deliveries_subscription_status (the status is a
	// literal: see statusRows). It returns the subscriptions it changed.
	deactivateSQL = `WITH x AS (
	SELECT * FROM unnest($1::text[], $2::int8[], $4::int8[], $5::text[]) AS x(id, at, changed, reason)
), s AS (
	UPDATE subscriptions AS s SET state = 'deactivated', state_reason = x.reason,
	updated_at = GREATEST(s.updated_at + 1, x.changed), version = $3
	FROM x WHERE s.id = x.id AND s.state <> 'deactivated' AND s.delivery_mode = 'push'
	RETURNING s.id, x.at
), q AS (
	UPDATE deliveries AS d SET status = 'queued', next_attempt_at = s.at, lease_owner = '', lease_until = 0
	FROM s WHERE d.subscription_id = s.id AND d.status = 'pending'
)
SELECT id FROM s`

	subscriptionStateSQL = `SELECT delivery_mode, state, endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = $1`
	reactivateSQL        = `UPDATE subscriptions SET state = 'active', version = $2, state_reason = $3,
	updated_at = GREATEST(updated_at + 1, $4) WHERE id = $1`

	// unqueueSQL makes every queued delivery of subscription $1 pending on
	// its endpoint $3 (those of dead letters on its dead-letter URL's, $4),
	// due at $2 with a fresh attempt budget, unlocked (Attempts and the
	// last_* fields stay, as in restartSet), and returns the endpoints.
	// A subscription naming no dead-letter URL has no dead letters queued:
	// UpdateSubscription dropped them when it stopped naming one.
	unqueueSQL = `UPDATE deliveries SET status = 'pending', receives = 0, round_attempts = 0, round_start = $2, first_failure = 0,
	next_attempt_at = $2, lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0,
	endpoint_id = CASE WHEN dead_letter_of = '' THEN $3 ELSE $4 END
WHERE subscription_id = $1 AND status = 'queued' RETURNING endpoint_id`
)

// deactivation is a subscription a Record batch (or DeactivateSubscription)
// deactivates, when its other pending deliveries become receivable (the
// deactivating attempt's start, Unix ms), when its state changed (the
// outcome's NextAttemptAt, Unix ms) and why.
type deactivation struct {
	subscription string
	at, changed  int64
	reason       string
}

// deactivates reports whether o deactivates its subscription when applied.
func deactivates(o *store.Outcome) bool {
	return o.Deactivate && o.Status == delivery.StatusQueued
}

// deactivateBatch deactivates, in tx, the subscriptions of ds (the first
// entry of each wins) that are push subscriptions not deactivated yet, at
// one new catalog version, and queues their pending deliveries (see
// deactivateSQL); their IDs go into queued. Nothing changes, and the
// version stays, when none is. The caller holds the catalog row's lock
// (guardBatch), so no subscription write changes their states meanwhile.
func (s *backend) deactivateBatch(ctx context.Context, tx pgx.Tx, ds []deactivation, queued *sqlrow.IDSet) error {
	if len(ds) == 0 {
		return nil
	}
	var subs sqlrow.IDSet
	var at, changed []int64
	var reasons []string
	for _, d := range ds {
		n := len(subs.IDs)
		if subs.Add(d.subscription); len(subs.IDs) > n {
			at, changed, reasons = append(at, d.at), append(changed, d.changed), append(reasons, d.reason)
		}
	}
	rows, err := tx.Query(ctx, activeSubscriptionsSQL, subs.IDs)
	if err != nil {
		return fmt.Errorf("deactivate: %w", err)
	}
	active, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(active) == 0 {
		return err
	}
	v, err := s.bumpCatalog(ctx, tx)
	if err != nil {
		return err
	}
	rows, err = tx.Query(ctx, deactivateSQL, subs.IDs, at, v, changed, reasons)
	if err != nil {
		return fmt.Errorf("deactivate: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("deactivate: %w", err)
	}
	for _, id := range done {
		queued.Add(id)
	}
	return nil
}

// errUnchanged rolls back a transaction that found nothing to change.
var errUnchanged = errors.New("nothing to change")

// ReactivateSubscription implements store.QueueStore in one transaction. A
// deactivated push subscription becomes active at a new catalog version
// (with the catalog's NOTIFY), and its queued deliveries, locked or not,
// pending on its endpoint, or its dead-letter URL's for those of dead
// letters (see unqueueSQL): Endpoints names those any moved to, the URL's
// first. An active one is left as it is (no new version).
// ErrNotFound; ErrConflict for a pull subscription.
func (s *backend) ReactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	var res store.RedriveResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = store.RedriveResult{}
		state := func() (string, [2]string, error) {
			var mode, state string
			var eps [2]string
			switch err := tx.QueryRow(ctx, subscriptionStateSQL, id).Scan(&mode, &state, &eps[0], &eps[1]); {
			case errors.Is(err, pgx.ErrNoRows):
				return "", eps, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
			case err != nil:
				return "", eps, err
			case mode == subscription.ModePull:
				return "", eps, fmt.Errorf("subscription %s is a pull subscription: %w", id, store.ErrConflict)
			}
			return state, eps, nil
		}
		// Read first without the catalog lock, so that reactivating an
		// active subscription costs no version; then again under it.
		st, _, err := state()
		if err != nil {
			return err
		}
		if st != subscription.StateDeactivated && st != subscription.StateAwaitingValidation {
			return errUnchanged
		}
		v, err := s.bumpCatalog(ctx, tx)
		if err != nil {
			return err
		}
		st, eps, err := state()
		if err != nil {
			return err
		}
		if st != subscription.StateDeactivated && st != subscription.StateAwaitingValidation { // activated meanwhile
			return errUnchanged
		}
		if _, err := tx.Exec(ctx, reactivateSQL, id, v, reason, at); err != nil {
			return fmt.Errorf("reactivate subscription %s: %w", id, err)
		}
		rows, err := tx.Query(ctx, unqueueSQL, id, at, eps[0], eps[1])
		if err != nil {
			return fmt.Errorf("reactivate subscription %s: %w", id, err)
		}
		moved, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("reactivate subscription %s: %w", id, err)
		}
		res.Count = len(moved)
		for _, ep := range eps {
			if slices.Contains(moved, ep) && !slices.Contains(res.Endpoints, ep) {
				res.Endpoints = append(res.Endpoints, ep)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return store.RedriveResult{}, nil
	case err != nil:
		return store.RedriveResult{}, err
	}
	return res, nil
}

// DeactivateSubscription implements store.QueueStore in one transaction: it
// takes the catalog version's row lock first (as a deactivating Record
// batch does), so the state it reads stays until it commits, then
// deactivates as a Record outcome does (deactivateBatch) and announces the
// subscription's queue (the consumers waiting on it, on every node).
func (s *backend) DeactivateSubscription(ctx context.Context, id string, now time.Time, reason string) (bool, error) {
	at := sqlrow.UnixMS(now)
	var changed bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		changed = false
		var v int64
		if err := tx.QueryRow(ctx, catalogLockSQL).Scan(&v); err != nil {
			return fmt.Errorf("deactivate subscription %s: %w", id, err)
		}
		var mode, state string
		var eps [2]string
		switch err := tx.QueryRow(ctx, subscriptionStateSQL, id).Scan(&mode, &state, &eps[0], &eps[1]); {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("deactivate subscription %s: %w", id, err)
		}
		if err := store.DeactivateRefused(id, mode, state); err != nil {
			return err
		}
		if state == subscription.StateDeactivated {
			return errUnchanged
		}
		var queued sqlrow.IDSet
		if err := s.deactivateBatch(ctx, tx, []deactivation{{id, at, at, reason}}, &queued); err != nil {
			return err
		}
		changed = len(queued.IDs) > 0
		return s.notifyQueued(ctx, tx, queued.IDs)
	})
	switch {
	case errors.Is(err, errUnchanged):
		return false, nil
	case err != nil:
		return false, err
	}
	return changed, nil
}
