package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// deliveryStateSQL: the delivery's status and lease, whether its
	// subscription exists, and whether it is the delivery of a dead letter
	// that its subscription has nowhere to send any more.
	deliveryStateSQL = `SELECT d.status, d.lease_until, s.id IS NOT NULL,
	d.dead_letter_of <> '' AND COALESCE(s.dead_letter_endpoint_id, '') = ''
FROM deliveries AS d LEFT JOIN subscriptions AS s ON s.id = d.subscription_id WHERE d.id = ?`

	// restartSQL opens a fresh attempt budget. Attempts (the lifetime count)
	// and the last_* fields stay: the delivery keeps its history, and with
	// attempts > 0 it is due in the retry lane. dead_letter_reason and
	// delivered_at are cleared, since the delivery is pending again. It
	// goes to its subscription's endpoint: the one it was made for, or, if
	// the subscription has moved to another URL since, that URL's; the
	// delivery of a dead letter to its subscription's dead-letter URL's
	// (the callers leave out those whose subscription names none). A
	// consumer's lock on a queued delivery is lost.
	restartSet = `status = CASE WHEN (SELECT s.delivery_mode = 'pull' OR s.state = 'deactivated'
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id) THEN 'queued' ELSE 'pending' END,
	receives = 0, round_attempts = 0, round_start = ?, first_failure = 0,
	next_attempt_at = ?, dead_letter_reason = '', delivered_at = 0, lease_owner = '', lease_until = 0,
	lock_token = '', lock_until = 0,
	endpoint_id = (SELECT CASE WHEN deliveries.dead_letter_of = '' THEN s.endpoint_id ELSE s.dead_letter_endpoint_id END
		FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)`

	// redrivable leaves out the deliveries of dead letters when the
	// subscription names no dead-letter URL any more.
	redrivable = ` AND (dead_letter_of = '' OR EXISTS (SELECT 1 FROM subscriptions AS s
	WHERE s.id = deliveries.subscription_id AND s.dead_letter_endpoint_id <> ''))`

	redeliverSQL = `UPDATE deliveries SET ` + restartSet + ` WHERE id = ?`

	redriveAllSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE subscription_id = ? AND status = 'dead_lettered' AND status <> 'delivered'` + redrivable + ` RETURNING endpoint_id`
	redriveOneSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE id = ? AND subscription_id = ? AND status = 'dead_lettered'` + redrivable + ` RETURNING endpoint_id`
	// redriveIDSQL: a dead letter of the account whose subscription still
	// exists (a deleted subscription's dead letters stay dead-lettered,
	// with nowhere to go).
	redriveIDSQL = `UPDATE deliveries SET ` + restartSet + `
WHERE id = ? AND account_id = ? AND status = 'dead_lettered'
AND EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.id = deliveries.subscription_id)` + redrivable + ` RETURNING endpoint_id`

	// cleanupSQL: old events none of whose deliveries may still be attempted
	// (an event without deliveries qualifies). Oldest first.
	cleanupSQL = `SELECT e.seq FROM events AS e INDEXED BY events_published
WHERE e.published_at < ? AND NOT EXISTS (
	SELECT 1 FROM deliveries AS d WHERE d.event_seq = e.seq
	AND d.status NOT IN ('delivered', 'dead_lettered', 'dropped'))
ORDER BY e.published_at LIMIT ?`
	// The deletes take the round's events as one JSON array of sequences
	// (?1): four statements a round, not four an event, since a small
	// statement's cost is mostly its own (arguments, binding, the program
	// started and reset), and a clean-up that kept pace with a steady
	// publisher spent most of its time on that. unfinishedSQL names the
	// events whose deliveries were redelivered since the candidates were
	// read; they are left out.
	seqSet        = `(SELECT value FROM json_each(?1))`
	unfinishedSQL = `SELECT DISTINCT event_seq FROM deliveries
WHERE event_seq IN ` + seqSet + ` AND status NOT IN ('delivered', 'dead_lettered', 'dropped')`
	cleanupAttemptsSQL   = `DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq IN ` + seqSet + `)`
	cleanupDeliveriesSQL = `DELETE FROM deliveries WHERE event_seq IN ` + seqSet
	cleanupEventSQL      = `DELETE FROM events WHERE seq IN ` + seqSet

	// Tombstones of subscriptions deleted before the retention are
	// forgotten; catalog_pruned then tells a reader older than them to read
	// every subscription.
	oldTombstonesSQL  = `SELECT COALESCE(MAX(version), 0) FROM subscription_tombstones WHERE deleted_at < ?`
	pruneCatalogSQL   = `UPDATE counters SET value = MAX(value, ?) WHERE name = 'catalog_pruned'`
	pruneTombstoneSQL = `DELETE FROM subscription_tombstones WHERE deleted_at < ? AND version <= ?`
)

// Redeliver implements store.DeliveryStore. The delivery becomes pending,
// due at now, unleased, with RoundAttempts 0, RoundStart now, FirstFailure
// cleared, and DeadLetterReason and DeliveredAt cleared; Attempts and the
// Last* fields are kept (so a delivery attempted before is due in the retry
// lane). ErrSubscriptionDeleted when its subscription is gone. The
// delivery of a dead letter goes to its subscription's dead-letter URL's
// endpoint: ErrConflict when the subscription names no dead-letter URL any
// more.
func (s *backend) Redeliver(ctx context.Context, id string, now time.Time) (delivery.Delivery, error) {
	at := sqlrow.UnixMS(now)
	var d delivery.Delivery
	err := s.write(ctx, func(w *writer) error {
		var status string
		var lease int64
		var subscribed, nowhere bool
		if err := w.scanRow(deliveryStateSQL, []any{id}, &status, &lease, &subscribed, &nowhere); err != nil {
			if isNoRows(err) {
				return fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
			}
			return err
		}
		if !subscribed {
			return fmt.Errorf("delivery %s: %w", id, store.ErrSubscriptionDeleted)
		}
		if delivery.Status(status) == delivery.StatusPending && lease != 0 {
			return fmt.Errorf("delivery %s is being attempted: %w", id, store.ErrConflict)
		}
		if nowhere {
			return fmt.Errorf("delivery %s is a dead letter's and its subscription has no dead-letter URL: %w", id, store.ErrConflict)
		}
		if _, err := w.exec(redeliverSQL, at, at, id); err != nil {
			return fmt.Errorf("redeliver %s: %w", id, err)
		}
		dd, err := scanDelivery(w.row(getDeliverySQL, id))
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

// Redrive implements store.DeliveryStore. IDs that do not name a
// dead-lettered delivery of the subscription are ignored, and so are the
// deliveries of dead letters when the subscription names no dead-letter
// URL any more. ErrNotFound when the subscription does not exist.
// Endpoints are returned once each, in the order first met. Redriving all
// of a subscription is one write.
func (s *backend) Redrive(ctx context.Context, subscriptionID string, ids []string, now time.Time) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	return s.redrive(ctx, func(w *writer, res *store.RedriveResult) error {
		var one int
		if err := w.scanRow(subscriptionExistsSQL, []any{subscriptionID}, &one); err != nil {
			if isNoRows(err) {
				return fmt.Errorf("subscription %s: %w", subscriptionID, store.ErrNotFound)
			}
			return err
		}
		if len(ids) == 0 {
			if err := redriven(w, res, redriveAllSQL, at, at, subscriptionID); err != nil {
				return fmt.Errorf("redrive %s: %w", subscriptionID, err)
			}
			return nil
		}
		for _, id := range ids {
			if err := redriven(w, res, redriveOneSQL, at, at, id, subscriptionID); err != nil {
				return fmt.Errorf("redrive %s: %w", id, err)
			}
		}
		return nil
	})
}

// RedriveIDs implements store.DeliveryStore in one write. IDs that do not
// name a dead-lettered delivery of the account whose subscription exists
// are ignored, as Redrive ignores them. Endpoints are returned once each,
// in the order first met.
func (s *backend) RedriveIDs(ctx context.Context, accountID string, ids []string, now time.Time) (store.RedriveResult, error) {
	at := sqlrow.UnixMS(now)
	return s.redrive(ctx, func(w *writer, res *store.RedriveResult) error {
		for _, id := range ids {
			if err := redriven(w, res, redriveIDSQL, at, at, id, account.OrDefault(accountID)); err != nil {
				return fmt.Errorf("redrive %s: %w", id, err)
			}
		}
		return nil
	})
}

// redrive runs move in one write, with a result of its own each time the
// write runs it, and returns that result (the zero result on an error).
func (s *backend) redrive(ctx context.Context, move func(w *writer, res *store.RedriveResult) error) (store.RedriveResult, error) {
	var res store.RedriveResult
	err := s.write(ctx, func(w *writer) error {
		res = store.RedriveResult{}
		return move(w, &res)
	})
	if err != nil {
		return store.RedriveResult{}, err
	}
	return res, nil
}

// redriven runs a redrive statement that returns the endpoint of each
// delivery it moves, counting them in res and adding each endpoint not
// named yet to res.Endpoints.
func redriven(w *writer, res *store.RedriveResult, query string, args ...any) error {
	rows, err := w.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ep string
		if err := rows.Scan(&ep); err != nil {
			return err
		}
		res.Count++
		if !slices.Contains(res.Endpoints, ep) {
			res.Endpoints = append(res.Endpoints, ep)
		}
	}
	return rows.Err()
}

// Cleanup implements store.DeliveryStore, oldest events first, and forgets
// the tombstones of subscriptions deleted before `before`. A limit of
// zero or less deletes nothing. An event counts as finished when none of
// its deliveries is pending or queued. The search for candidates runs on a
// read connection, so that a long stretch of old unfinished events (a large
// retry backlog) does not hold the writer; the writer then checks each
// candidate again and deletes it.
func (s *backend) Cleanup(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		if s.closed.Load() {
			return 0, store.ErrClosed
		}
		return 0, nil
	}
	if err := s.pruneTombstones(ctx, before); err != nil {
		return 0, err
	}
	rows, err := s.readQuery(ctx, cleanupSQL, sqlrow.UnixMS(before), limit)
	if err != nil {
		return 0, fmt.Errorf("cleanup: %w", err)
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return 0, s.readErr(err)
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("cleanup: %w", s.readErr(err))
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	var n int
	err = s.write(ctx, func(w *writer) error {
		n = 0
		unfinished := map[int64]bool{}
		rows, err := w.query(unfinishedSQL, seqsJSON(seqs))
		if err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return fmt.Errorf("cleanup: %w", err)
			}
			unfinished[seq] = true // a delivery was redelivered meanwhile
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		done := seqs
		if len(unfinished) > 0 {
			done = nil
			for _, seq := range seqs {
				if !unfinished[seq] {
					done = append(done, seq)
				}
			}
		}
		if len(done) == 0 {
			return nil
		}
		set := seqsJSON(done)
		for _, q := range []string{cleanupAttemptsSQL, cleanupDeliveriesSQL, cleanupEventSQL} {
			if _, err := w.exec(q, set); err != nil {
				return fmt.Errorf("cleanup events %d…: %w", done[0], err)
			}
		}
		n = len(done)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// pruneTombstones deletes the tombstones of subscriptions deleted before
// `before`, remembering the newest version deleted in catalog_pruned.
func (s *backend) pruneTombstones(ctx context.Context, before time.Time) error {
	var upto int64
	if err := s.readRow(ctx, oldTombstonesSQL, sqlrow.UnixMS(before)).Scan(&upto); err != nil {
		return fmt.Errorf("cleanup: %w", s.readErr(err))
	}
	if upto == 0 {
		return nil
	}
	return s.write(ctx, func(w *writer) error {
		if _, err := w.exec(pruneCatalogSQL, upto); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		if _, err := w.exec(pruneTombstoneSQL, sqlrow.UnixMS(before), upto); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		return nil
	})
}

// seqsJSON returns event sequences as a JSON array, for json_each.
func seqsJSON(seqs []int64) string {
	b := make([]byte, 0, 1+len(seqs)*12)
	b = append(b, '[')
	for i, seq := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, seq, 10)
	}
	return string(append(b, ']'))
}
