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
// policy queues a failed push: Outcome.Deactivate) and made active again by
// ReactivateSubscription. Both are subscription writes: they take the
// catalog version's row lock before any other (a deactivating Record batch
// takes it at its start, FOR UPDATE: guardBatch) and store the new version
// on the subscription, with the catalog's NOTIFY, so every node's catalog
// learns of the change and publishes matched before it are refused and
// matched again (a deactivated subscription's deliveries are written
// queued).
const (
	// activeSubscriptionsSQL: those of $1 a deactivation changes.
	activeSubscriptionsSQL = `SELECT id FROM subscriptions
WHERE id = ANY($1) AND state <> 'deactivated' AND delivery_mode = 'push'`

	// deactivateSQL deactivates the subscriptions $1 at catalog version $3
	// and queues their pending deliveries, leased ones included (their
	// holders' outcomes then only log their attempts), receivable at $2
	// (each subscription's), found in the partial index
	// deliveries_subscription_status (the status is a literal: see
	// statusRows). It returns the subscriptions it changed.
	deactivateSQL = `WITH x AS (
	SELECT * FROM unnest($1::text[], $2::int8[]) AS x(id, at)
), s AS (
	UPDATE subscriptions AS s SET state = 'deactivated', version = $3
	FROM x WHERE s.id = x.id AND s.state <> 'deactivated' AND s.delivery_mode = 'push'
	RETURNING s.id, x.at
), q AS (
	UPDATE deliveries AS d SET status = 'queued', next_attempt_at = s.at, lease_owner = '', lease_until = 0
	FROM s WHERE d.subscription_id = s.id AND d.status = 'pending'
)
SELECT id FROM s`

	subscriptionStateSQL = `SELECT delivery_mode, state, endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = $1`
	reactivateSQL        = `UPDATE subscriptions SET state = 'active', version = $2 WHERE id = $1`

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

// deactivation is a subscription a Record batch deactivates, and when its
// other pending deliveries become receivable (the deactivating attempt's
// end, Unix ms).
type deactivation struct {
	subscription string
	at           int64
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
func (s *Store) deactivateBatch(ctx context.Context, tx pgx.Tx, ds []deactivation, queued *sqlrow.IDSet) error {
	if len(ds) == 0 {
		return nil
	}
	var subs sqlrow.IDSet
	var at []int64
	for _, d := range ds {
		n := len(subs.IDs)
		if subs.Add(d.subscription); len(subs.IDs) > n {
			at = append(at, d.at)
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
	rows, err = tx.Query(ctx, deactivateSQL, subs.IDs, at, v)
	if err != nil {
		return fmt.Errorf("deactivate: %w", err)
	}
	changed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("deactivate: %w", err)
	}
	for _, id := range changed {
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
// UpdatedAt does not change. ErrNotFound; ErrConflict for a pull
// subscription.
func (s *Store) ReactivateSubscription(ctx context.Context, id string, now time.Time) (store.RedriveResult, error) {
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
		if _, err := tx.Exec(ctx, reactivateSQL, id, v); err != nil {
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
