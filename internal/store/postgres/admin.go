package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	deliveryStateSQL = `SELECT status, lease_until, subscription_id, dead_letter_of FROM deliveries WHERE id = $1 FOR UPDATE`

	// restartSet opens a fresh attempt budget: pending, or queued (for
	// consumers, receives counted afresh) when its subscription is a pull
	// subscription or a deactivated push one, which push nothing. Attempts (the lifetime count)
	// and the last_* fields stay: the delivery keeps its history, and with
	// attempts > 0 it is due in the retry lane. dead_letter_reason and
	// delivered_at are cleared, since the delivery is pending again. It
	// goes to its subscription's endpoint: the one it was made for, or, if
	// the subscription has moved to another URL since, that URL's; the
	// delivery of a dead letter to its subscription's dead-letter URL's
	// (the callers leave out those whose subscription names none). A lock
	// a consumer held on it (it was queued) is cleared: its token settles
	// nothing any more.
	restartSet = `status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = $1, first_failure = 0,
	next_attempt_at = $1, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)`

	// redrivable leaves out the deliveries of dead letters when the
	// subscription names no dead-letter URL any more.
	redrivable = ` AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))`

	// deadLetterEndpointSQL: the subscription's dead-letter endpoint.
	deadLetterEndpointSQL = `SELECT dead_letter_endpoint_id FROM subscriptions WHERE id = $1`

	redeliverSQL = `UPDATE deliveries SET ` + restartSet + ` WHERE id = $2`

	// redriveAllSQL seeks the subscription's dead letters in the partial
	// index deliveries_subscription_status (its status is a literal: see
	// statusRows).
	redriveAllSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE subscription_id = $2 AND status = 'dead_lettered'` + redrivable + ` RETURNING id, endpoint_id`
	redriveIDsSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE id = ANY($3) AND subscription_id = $2 AND status = 'dead_lettered'` + redrivable + ` RETURNING id, endpoint_id`
	// redriveAccountIDsSQL: the account's dead letters among the ids ($3)
	// whose subscription exists, locked in share mode as Redrive locks its
	// one (subscriptionExistsSQL): a delete waits, and a subscription
	// deleted meanwhile is left out with its dead letters, which have
	// nowhere to go.
	redriveAccountIDsSQL = `WITH subs AS (
	SELECT s.id FROM subscriptions AS s WHERE s.id IN (SELECT d.subscription_id FROM deliveries AS d
		WHERE d.id = ANY($3) AND d.account_id = $2 AND d.status = 'dead_lettered') FOR SHARE
)
UPDATE deliveries SET ` + restartSet + `
WHERE id = ANY($3) AND account_id = $2 AND status = 'dead_lettered'
AND subscription_id IN (SELECT id FROM subs)` + redrivable + ` RETURNING id, endpoint_id`

	// cleanupSQL: old events none of whose deliveries may still be attempted
	// (an event without deliveries qualifies). Oldest first.
	cleanupSQL = `SELECT e.seq FROM events AS e
WHERE e.published_at < $1 AND NOT EXISTS (
	SELECT 1 FROM deliveries AS d WHERE d.event_seq = e.seq
	AND d.status NOT IN ('delivered', 'dead_lettered', 'dropped'))
ORDER BY e.published_at LIMIT $2`

	// cleanupLockSQL locks the candidates' deliveries (so none can be
	// redelivered until the transaction ends) and returns the candidates
	// that are still finished.
	cleanupLockSQL = `WITH locked AS (
	SELECT d.event_seq, d.status FROM deliveries AS d WHERE d.event_seq = ANY($1) FOR UPDATE
)
SELECT c.seq FROM unnest($1::int8[]) AS c(seq)
WHERE NOT EXISTS (SELECT 1 FROM locked AS l WHERE l.event_seq = c.seq
	AND l.status NOT IN ('delivered', 'dead_lettered', 'dropped'))`
	cleanupAttemptsSQL   = `DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq = ANY($1))`
	cleanupDeliveriesSQL = `DELETE FROM deliveries WHERE event_seq = ANY($1)`
	cleanupEventsSQL     = `DELETE FROM events WHERE seq = ANY($1)`

	// Tombstones of subscriptions deleted before the retention are
	// forgotten; catalog_pruned then tells a reader older than them to read
	// every subscription.
	oldTombstonesSQL  = `SELECT COALESCE(MAX(version), 0) FROM subscription_tombstones WHERE deleted_at < $1`
	pruneCatalogSQL   = `UPDATE counters SET value = GREATEST(value, $1) WHERE name = 'catalog_pruned'`
	pruneTombstoneSQL = `DELETE FROM subscription_tombstones WHERE deleted_at < $1 AND version <= $2`
)

// Redeliver implements store.DeliveryStore. The delivery becomes pending,
// due at now, unleased, with RoundAttempts 0, RoundStart now, FirstFailure
// cleared, and DeadLetterReason and DeliveredAt cleared; Attempts and the
// Last* fields are kept (so a delivery attempted before is due in the retry
// lane). ErrConflict when it is pending and its lease has not expired by
// now; a delivery whose lease expired is redelivered. ErrSubscriptionDeleted
// when its subscription is gone (the subscription row is locked in share
// mode until the change commits, so a delete cannot slip in between). The
// delivery of a dead letter goes to its subscription's dead-letter URL's
// endpoint: ErrConflict when the subscription names no dead-letter URL any
// more (read under that share lock, which an update of the subscription
// waits for too).
func (s *backend) Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error) {
	at := sqlrow.UnixMS(now)
	var d delivery.Delivery
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var status, sub, deadLetterOf string
		var lease int64
		if err := tx.QueryRow(ctx, deliveryStateSQL, id).Scan(&status, &lease, &sub, &deadLetterOf); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
			}
			return err
		}
		var one int
		switch err := tx.QueryRow(ctx, subscriptionExistsSQL, sub).Scan(&one); {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("delivery %s: %w", id, store.ErrSubscriptionDeleted)
		case err != nil:
			return err
		}
		if delivery.Status(status) == delivery.StatusPending && lease != 0 && lease >= at {
			return fmt.Errorf("delivery %s is being attempted: %w", id, store.ErrConflict)
		}
		if deadLetterOf != "" {
			var ep string
			if err := tx.QueryRow(ctx, deadLetterEndpointSQL, sub).Scan(&ep); err != nil {
				return err
			}
			if ep == "" {
				return fmt.Errorf("delivery %s is a dead letter's and its subscription has no dead-letter URL: %w", id, store.ErrConflict)
			}
		}
		if _, err := tx.Exec(ctx, redeliverSQL, at, id); err != nil {
			return fmt.Errorf("redeliver %s: %w", id, err)
		}
		dd, err := scanDelivery(tx.QueryRow(ctx, getDeliverySQL, id))
		if err != nil {
			return fmt.Errorf("redeliver %s: %w", id, err)
		}
		d = dd
		return nil
	})
	if err != nil {
		return delivery.Delivery{}, err
	}
	return d, nil
}

// Redrive implements store.DeliveryStore in one transaction. IDs that do
// not name a dead-lettered delivery of the subscription are ignored, and so
// are the deliveries of dead letters when the subscription names no
// dead-letter URL any more.
// ErrNotFound when the subscription does not exist. Endpoints are returned
// once each: for ids, in the order of ids; for all, in no particular order.
func (s *backend) Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	var res store.RedriveResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, subscriptionExistsSQL, subscriptionID).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("subscription %s: %w", subscriptionID, store.ErrNotFound)
			}
			return err
		}
		var rows pgx.Rows
		var err error
		if len(ids) == 0 {
			rows, err = tx.Query(ctx, redriveAllSQL, at, subscriptionID)
		} else {
			rows, err = tx.Query(ctx, redriveIDsSQL, at, subscriptionID, ids)
		}
		if err == nil {
			res, err = redriven(rows, ids)
		}
		if err != nil {
			return fmt.Errorf("redrive %s: %w", subscriptionID, err)
		}
		return nil
	})
	if err != nil {
		return store.RedriveResult{}, err
	}
	return res, nil
}

// RedriveIDs implements store.DeliveryStore in one statement. IDs that do
// not name a dead-lettered delivery of the account whose subscription
// exists are ignored, as Redrive ignores them. Endpoints are returned once
// each, in the order of ids.
func (s *backend) RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (store.RedriveResult, error) {
	var res store.RedriveResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, redriveAccountIDsSQL, sqlrow.UnixMS(now), account.OrDefault(accountID), ids)
		if err == nil {
			res, err = redriven(rows, ids)
		}
		return err
	})
	if err != nil {
		return store.RedriveResult{}, fmt.Errorf("redrive: %w", err)
	}
	return res, nil
}

// redriven reads and closes the rows of a redrive statement (each moved
// delivery's id and endpoint) and returns what moved: each endpoint once,
// in the order of ids when there are ids, else in the order of the rows.
func redriven(rows pgx.Rows, ids []string) (store.RedriveResult, error) {
	moved := map[string]string{} // delivery → endpoint
	var order []string
	for rows.Next() {
		var id, ep string
		if err := rows.Scan(&id, &ep); err != nil {
			rows.Close()
			return store.RedriveResult{}, err
		}
		moved[id] = ep
		order = append(order, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.RedriveResult{}, err
	}
	if len(ids) > 0 {
		order = ids
	}
	var res store.RedriveResult
	seen := map[string]bool{}
	for _, id := range order {
		ep, ok := moved[id]
		if !ok {
			continue
		}
		delete(moved, id) // an ID given twice counts once
		res.Count++
		if !seen[ep] {
			seen[ep] = true
			res.Endpoints = append(res.Endpoints, ep)
		}
	}
	return res, nil
}

// Cleanup implements store.DeliveryStore, oldest events first, and forgets
// the tombstones of subscriptions deleted before `before`. A limit of
// zero or less deletes nothing. An event counts as finished when none of
// its deliveries is pending or queued. Candidates are found first; then one
// transaction locks their deliveries, checks them again (one may have been
// redelivered meanwhile) and deletes the attempts, deliveries and events of
// those still finished. Nodes may run it at the same time: each event is
// deleted, and counted, once.
func (s *backend) Cleanup(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, nil
	}
	if err := s.pruneTombstones(ctx, before); err != nil {
		return 0, err
	}
	seqs, err := queryAll(ctx, s, func(sc scanner) (int64, error) {
		var seq int64
		err := sc.Scan(&seq)
		return seq, err
	}, cleanupSQL, sqlrow.UnixMS(before), limit)
	if err != nil {
		return 0, fmt.Errorf("cleanup: %w", err)
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	var n int
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, cleanupLockSQL, seqs)
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(done) == 0 {
			return nil
		}
		for _, q := range []string{cleanupAttemptsSQL, cleanupDeliveriesSQL} {
			if _, err := tx.Exec(ctx, q, done); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, cleanupEventsSQL, done)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cleanup: %w", err)
	}
	return n, nil
}

// pruneTombstones deletes the tombstones of subscriptions deleted before
// `before`, remembering the newest version deleted in catalog_pruned.
func (s *backend) pruneTombstones(ctx context.Context, before time.Time) error {
	upto, err := queryRow(ctx, s, func(sc scanner) (int64, error) {
		var v int64
		return v, sc.Scan(&v)
	}, oldTombstonesSQL, sqlrow.UnixMS(before))
	if err != nil {
		return fmt.Errorf("cleanup: %w", s.err(err))
	}
	if upto == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, pruneCatalogSQL, upto); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		if _, err := tx.Exec(ctx, pruneTombstoneSQL, sqlrow.UnixMS(before), upto); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		return nil
	})
}
