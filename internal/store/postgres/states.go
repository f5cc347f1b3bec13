package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// A Record batch deactivates push subscriptions (their failure policy
// queues a failed push: Outcome.Deactivate) inside its transaction, as
// DeactivateSubscription does by hand (internal/store/engine/states.go): a
// subscription write that takes the catalog version's row lock before any
// other (at the batch's start, FOR UPDATE: guardBatch) and stores the new
// version on the subscription, with the catalog's NOTIFY, so every node's
// catalog learns of the change and publishes matched before it are refused
// and matched again (a deactivated subscription's deliveries are written
// queued). It writes the state's reason and moves updated_at to the
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
)

// deactivation is a subscription a Record batch deactivates: when its
// other pending deliveries become receivable (the deactivating attempt's
// start, Unix ms), when its state changed (the outcome's NextAttemptAt,
// Unix ms) and why.
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
