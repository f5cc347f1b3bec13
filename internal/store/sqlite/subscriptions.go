package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store"
)

const (
	subscriptionCols = `id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at`

	insertSubscriptionSQL = `INSERT INTO subscriptions (` + subscriptionCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	updateSubscriptionSQL = `UPDATE subscriptions SET
	name = ?, url = ?, endpoint_id = ?, event_types = ?, subject_begins_with = ?, subject_ends_with = ?,
	retry_policy = ?, timeout_ms = ?, headers = ?, dead_letter = ?, state = ?, created_at = ?, updated_at = ?
WHERE id = ?`

	subscriptionByNameSQL = `SELECT id FROM subscriptions WHERE name = ?`
	subscriptionExistsSQL = `SELECT 1 FROM subscriptions WHERE id = ?`
	getSubscriptionSQL    = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id = ?`
	listSubscriptionsSQL  = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id > ? ORDER BY id LIMIT ?`
	allSubscriptionsSQL   = `SELECT ` + subscriptionCols + ` FROM subscriptions ORDER BY id`

	insertEndpointSQL = `INSERT OR IGNORE INTO endpoints (id, url, created_at) VALUES (?, ?, ?)`

	dropSubscriptionDeliveriesSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = ?,
	lease_owner = '', lease_until = 0
WHERE subscription_id = ? AND status IN ('pending', 'queued')`
	deleteSubscriptionSQL = `DELETE FROM subscriptions WHERE id = ?`
)

// CreateSubscription implements store.SubscriptionStore. An empty
// EndpointID is filled in as store.EndpointID(URL). The subscription's
// Timeout is kept to the millisecond. ErrConflict when the ID is taken.
func (s *Store) CreateSubscription(ctx context.Context, sub store.Subscription) error {
	args, err := store.SubscriptionValues(&sub)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		var other string
		switch err := w.scanRow(subscriptionByNameSQL, []any{sub.Name}, &other); {
		case err == nil:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case !isNoRows(err):
			return err
		}
		var one int
		switch err := w.scanRow(subscriptionExistsSQL, []any{sub.ID}, &one); {
		case err == nil:
			return fmt.Errorf("subscription %s already exists: %w", sub.ID, store.ErrConflict)
		case !isNoRows(err):
			return err
		}
		if _, err := w.exec(insertSubscriptionSQL, append([]any{sub.ID}, args...)...); err != nil {
			return fmt.Errorf("insert subscription %s: %w", sub.ID, err)
		}
		return insertEndpoint(w, &sub)
	})
}

func insertEndpoint(w *writer, sub *store.Subscription) error {
	if _, err := w.exec(insertEndpointSQL, sub.EndpointID, sub.URL, store.UnixMS(sub.UpdatedAt)); err != nil {
		return fmt.Errorf("insert endpoint %s: %w", sub.EndpointID, err)
	}
	return nil
}

// GetSubscription implements store.SubscriptionStore.
func (s *Store) GetSubscription(ctx context.Context, id string) (store.Subscription, error) {
	sub, err := store.ScanSubscription(s.readRow(ctx, getSubscriptionSQL, id))
	if isNoRows(err) {
		return store.Subscription{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return sub, s.readErr(err)
}

// ListSubscriptions implements store.SubscriptionStore. The cursor is the
// last ID of the previous page.
func (s *Store) ListSubscriptions(ctx context.Context, p store.Page) ([]store.Subscription, string, error) {
	size := p.Size()
	rows, err := s.readQuery(ctx, listSubscriptionsSQL, p.Cursor, size+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []store.Subscription{}
	for rows.Next() {
		sub, err := store.ScanSubscription(rows)
		if err != nil {
			return nil, "", s.readErr(err)
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr(err)
	}
	out, next := store.TrimPage(out, size, func(s store.Subscription) string { return s.ID })
	return out, next, nil
}

// AllSubscriptions implements store.SubscriptionStore, in ID order.
func (s *Store) AllSubscriptions(ctx context.Context) ([]store.Subscription, error) {
	rows, err := s.readQuery(ctx, allSubscriptionsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Subscription{}
	for rows.Next() {
		sub, err := store.ScanSubscription(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, sub)
	}
	return out, s.readErr(rows.Err())
}

// UpdateSubscription implements store.SubscriptionStore: every column,
// CreatedAt included, takes sub's value. Deliveries already made keep the
// endpoint they were made for.
func (s *Store) UpdateSubscription(ctx context.Context, sub store.Subscription) error {
	args, err := store.SubscriptionValues(&sub)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		var other string
		switch err := w.scanRow(subscriptionByNameSQL, []any{sub.Name}, &other); {
		case err == nil && other != sub.ID:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case err != nil && !isNoRows(err):
			return err
		}
		n, err := w.execN(updateSubscriptionSQL, append(args, sub.ID)...)
		if err != nil {
			return fmt.Errorf("update subscription %s: %w", sub.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("subscription %s: %w", sub.ID, store.ErrNotFound)
		}
		return insertEndpoint(w, &sub)
	})
}

// DeleteSubscription implements store.SubscriptionStore. Its pending and
// queued deliveries become dropped with reason ReasonSubscriptionDeleted and
// lose their leases; a later Record for one of them logs the attempt only.
// All of it is one write: a subscription with a large backlog holds the
// writer while its deliveries are updated. now is not stored: a delivery
// keeps no time of being dropped.
func (s *Store) DeleteSubscription(ctx context.Context, id string, now time.Time) error {
	_ = now
	return s.write(ctx, func(w *writer) error {
		n, err := w.execN(deleteSubscriptionSQL, id)
		if err != nil {
			return fmt.Errorf("delete subscription %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
		}
		if _, err := w.exec(dropSubscriptionDeliveriesSQL, store.ReasonSubscriptionDeleted, id); err != nil {
			return fmt.Errorf("drop deliveries of subscription %s: %w", id, err)
		}
		return nil
	})
}
