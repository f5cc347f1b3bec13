package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
)

const (
	subscriptionCols = `id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, dead_letter, state, created_at, updated_at`

	insertSubscriptionSQL = `INSERT INTO subscriptions (` + subscriptionCols + `)
VALUES ($14, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

	updateSubscriptionSQL = `UPDATE subscriptions SET
	name = $1, url = $2, endpoint_id = $3, event_types = $4, subject_begins_with = $5, subject_ends_with = $6,
	retry_policy = $7, timeout_ms = $8, headers = $9, dead_letter = $10, state = $11, created_at = $12, updated_at = $13
WHERE id = $14`

	subscriptionByNameSQL = `SELECT id FROM subscriptions WHERE name = $1`
	subscriptionExistsSQL = `SELECT 1 FROM subscriptions WHERE id = $1`
	getSubscriptionSQL    = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id = $1`
	listSubscriptionsSQL  = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2`
	allSubscriptionsSQL   = `SELECT ` + subscriptionCols + ` FROM subscriptions ORDER BY id`

	insertEndpointSQL = `INSERT INTO endpoints (id, url, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`

	dropSubscriptionDeliveriesSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = $1,
	lease_owner = '', lease_until = 0
WHERE subscription_id = $2 AND status IN ('pending', 'queued')`
	deleteSubscriptionSQL = `DELETE FROM subscriptions WHERE id = $1`
)

// isUnique reports whether err violates the unique constraint named c.
func isUnique(err error, c string) bool {
	code, constraint := pgCode(err)
	return code == "23505" && constraint == c
}

// CreateSubscription implements store.SubscriptionStore. An empty
// EndpointID is filled in as store.EndpointID(URL). The subscription's
// Timeout is kept to the millisecond. ErrNameTaken when the name is used
// (checked first), ErrConflict when the ID is taken.
func (s *Store) CreateSubscription(ctx context.Context, sub store.Subscription) error {
	args, err := subscriptionArgs(&sub)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var other string
		switch err := tx.QueryRow(ctx, subscriptionByNameSQL, sub.Name).Scan(&other); {
		case err == nil:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, insertSubscriptionSQL, args...); err != nil {
			return err
		}
		return insertEndpoint(ctx, tx, &sub)
	})
	switch {
	case isUnique(err, "subscriptions_name_key"): // created meanwhile
		return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
	case isUnique(err, "subscriptions_pkey"):
		return fmt.Errorf("subscription %s already exists: %w", sub.ID, store.ErrConflict)
	case err != nil && !errors.Is(err, store.ErrNameTaken) && !errors.Is(err, store.ErrClosed):
		return fmt.Errorf("insert subscription %s: %w", sub.ID, err)
	}
	return err
}

func insertEndpoint(ctx context.Context, tx pgx.Tx, sub *store.Subscription) error {
	if _, err := tx.Exec(ctx, insertEndpointSQL, sub.EndpointID, sub.URL, store.UnixMS(sub.UpdatedAt)); err != nil {
		return fmt.Errorf("insert endpoint %s: %w", sub.EndpointID, err)
	}
	return nil
}

// GetSubscription implements store.SubscriptionStore.
func (s *Store) GetSubscription(ctx context.Context, id string) (store.Subscription, error) {
	if err := s.checkOpen(); err != nil {
		return store.Subscription{}, err
	}
	sub, err := queryRow(ctx, s, store.ScanSubscription, getSubscriptionSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Subscription{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return sub, s.err(err)
}

// ListSubscriptions implements store.SubscriptionStore. The cursor is the
// last ID of the previous page.
func (s *Store) ListSubscriptions(ctx context.Context, p store.Page) ([]store.Subscription, string, error) {
	size := p.Size()
	out, err := queryAll(ctx, s, store.ScanSubscription, listSubscriptionsSQL, p.Cursor, size+1)
	if err != nil {
		return nil, "", err
	}
	out, next := store.TrimPage(out, size, func(s store.Subscription) string { return s.ID })
	return out, next, nil
}

// AllSubscriptions implements store.SubscriptionStore, in ID order.
func (s *Store) AllSubscriptions(ctx context.Context) ([]store.Subscription, error) {
	return queryAll(ctx, s, store.ScanSubscription, allSubscriptionsSQL)
}

// UpdateSubscription implements store.SubscriptionStore: every column,
// CreatedAt included, takes sub's value. Deliveries already made keep the
// endpoint they were made for.
func (s *Store) UpdateSubscription(ctx context.Context, sub store.Subscription) error {
	args, err := subscriptionArgs(&sub)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var other string
		switch err := tx.QueryRow(ctx, subscriptionByNameSQL, sub.Name).Scan(&other); {
		case err == nil && other != sub.ID:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		tag, err := tx.Exec(ctx, updateSubscriptionSQL, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("subscription %s: %w", sub.ID, store.ErrNotFound)
		}
		return insertEndpoint(ctx, tx, &sub)
	})
	if isUnique(err, "subscriptions_name_key") {
		return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
	}
	return err
}

// DeleteSubscription implements store.SubscriptionStore. Its pending and
// queued deliveries become dropped with reason ReasonSubscriptionDeleted and
// lose their leases, in the same transaction; a later Record for one of
// them logs the attempt only. now is not stored: a delivery keeps no time of
// being dropped.
func (s *Store) DeleteSubscription(ctx context.Context, id string, now time.Time) error {
	_ = now
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, deleteSubscriptionSQL, id)
		if err != nil {
			return fmt.Errorf("delete subscription %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, dropSubscriptionDeliveriesSQL, store.ReasonSubscriptionDeleted, id); err != nil {
			return fmt.Errorf("drop deliveries of subscription %s: %w", id, err)
		}
		return nil
	})
}

// subscriptionArgs returns s's columns in subscriptionCols order after the
// ID, followed by the ID.
func subscriptionArgs(s *store.Subscription) ([]any, error) {
	v, err := store.SubscriptionValues(s)
	return append(v, s.ID), err
}
