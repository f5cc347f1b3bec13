package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

const (
	// subscriptionWriteCols are the columns a create writes
	// (sqlrow.SubscriptionValues and the version); subscriptionCols those
	// read (sqlrow.ScanSubscription): state_reason too, '' at create.
	subscriptionWriteCols = `id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version`
	subscriptionCols = subscriptionWriteCols + `, state_reason`

	insertSubscriptionSQL = `INSERT INTO subscriptions (` + subscriptionWriteCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// updateSubscriptionSQL sets every column but the ID and the account
	// (sqlrow.SubscriptionValues without its first value), then the
	// version: a subscription never changes accounts. The state value is
	// taken and ignored: only a deactivation (Record,
	// DeactivateSubscription) and ReactivateSubscription change the state
	// and its reason, so a change made from an older read cannot undo a
	// deactivation committed meanwhile.
	updateSubscriptionSQL = `UPDATE subscriptions SET
	name = ?, url = ?, endpoint_id = ?, event_types = ?, subject_begins_with = ?, subject_ends_with = ?,
	retry_policy = ?, timeout_ms = ?, headers = ?, secret_headers = ?, signing = ?, dead_letter = ?,
	state = CASE WHEN ? IS NULL THEN state ELSE state END,
	delivery_mode = ?, failure_policy = ?, delivery = ?, dead_letter_endpoint_id = ?, filters = ?, created_at = ?,
	updated_at = ?, version = ?
WHERE id = ?`

	// bumpCatalogSQL advances the catalog version; every subscription write
	// runs it first, and stores the value it returns on what it wrote.
	bumpCatalogSQL   = `UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value`
	catalogSQL       = `SELECT value FROM counters WHERE name = 'catalog'`
	catalogPrunedSQL = `SELECT value FROM counters WHERE name = 'catalog_pruned'`
	// changedSubsSQL and tombstonesSQL read the rows written after a
	// version in version order, from its index (SubscriptionChanges sorts
	// them by ID): in ID order, SQLite read the whole table to skip a sort,
	// which made every catalog sync (one after each subscription write)
	// cost all the subscriptions.
	changedSubsSQL = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE version > ? ORDER BY version`
	tombstonesSQL  = `SELECT id FROM subscription_tombstones WHERE version > ? ORDER BY version`
	tombstoneSQL   = `INSERT OR REPLACE INTO subscription_tombstones (id, version, deleted_at) VALUES (?, ?, ?)`

	subscriptionByNameSQL = `SELECT id FROM subscriptions WHERE account_id = ? AND name = ?`
	// countSubscriptionsSQL counts an account's subscriptions up to a cap
	// (the second parameter): one seek on subscriptions_account that reads
	// at most the cap's entries, however many the account holds.
	countSubscriptionsSQL    = `SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions WHERE account_id = ? LIMIT ?)`
	subscriptionExistsSQL    = `SELECT 1 FROM subscriptions WHERE id = ?`
	getSubscriptionSQL       = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id = ?`
	getSubscriptionByNameSQL = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE account_id = ? AND name = ?`

	// An endpoint row lives while a subscription uses its URL, as its URL
	// or as its dead-letter URL: a subscription write creates it (at a new
	// endpoints version, so that a reader holding the health of an earlier
	// row with that ID adopts the fresh one) and deletes it with the last
	// subscription that used it either way.
	endpointExistsSQL       = `SELECT 1 FROM endpoints WHERE id = ?`
	insertEndpointSQL       = `INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES (?, ?, ?, ?, ?)`
	deleteUnusedEndpointSQL = `DELETE FROM endpoints WHERE id = ?1
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE endpoint_id = ?1)
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE dead_letter_endpoint_id = ?1)`
	subscriptionEndpointSQL = `SELECT endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = ? AND account_id = ?`
	// moveDeliveriesSQL gives a subscription's deliveries still to be
	// attempted its new endpoint: they are sent to its new URL, behind that
	// URL's circuit. Its dead letters' deliveries stay on its dead-letter
	// URL's endpoint.
	moveDeliveriesSQL = `UPDATE deliveries SET endpoint_id = ?
WHERE subscription_id = ? AND status IN ('pending', 'queued') AND status <> 'delivered' AND dead_letter_of = ''`
	// moveDeadLettersSQL does the same for the deliveries of its dead
	// letters, to its new dead-letter URL's endpoint.
	moveDeadLettersSQL = `UPDATE deliveries SET endpoint_id = ?
WHERE subscription_id = ? AND status IN ('pending', 'queued') AND status <> 'delivered' AND dead_letter_of <> ''`
	// dropDeadLettersSQL ends them when it names no dead-letter URL any more.
	dropDeadLettersSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = ?,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = ? AND status IN ('pending', 'queued') AND status <> 'delivered' AND dead_letter_of <> ''`

	dropSubscriptionDeliveriesSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = ?,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = ? AND status IN ('pending', 'queued') AND status <> 'delivered'`
	deleteSubscriptionSQL = `DELETE FROM subscriptions WHERE id = ? RETURNING endpoint_id, dead_letter_endpoint_id`
)

// CreateSubscription implements store.SubscriptionStore. An empty
// AccountID is account.DefaultID, an empty DeliveryMode subscription.ModePush, an empty
// FailurePolicy subscription.FailureRetry, and a push subscription's EndpointID is
// s.EndpointID(AccountID, URL), whatever it held (sqlrow.SubscriptionValues);
// a pull subscription has EndpointID "" and gets no endpoint row. A push
// subscription naming a dead-letter URL gets that URL's endpoint row too,
// when new (DeadLetterEndpointID). The subscription's Timeout is kept to the
// millisecond. ErrConflict when the ID is taken; a
// *store.SubscriptionLimitError when the account holds
// Options.MaxSubscriptionsPerAccount already (counted on the writer, so
// concurrent creates cannot pass it).
func (s *backend) CreateSubscription(ctx context.Context, sub subscription.Subscription) error {
	args, err := sqlrow.SubscriptionValues(&sub, s.key)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		if err := w.accountExists(sub.AccountID); err != nil {
			return err
		}
		if err := w.checkSubscriptionLimit(sub.AccountID, s.maxSubs); err != nil {
			return err
		}
		var other string
		switch err := w.scanRow(subscriptionByNameSQL, []any{sub.AccountID, sub.Name}, &other); {
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
		v, err := w.bumpCatalog()
		if err != nil {
			return err
		}
		if _, err := w.exec(insertSubscriptionSQL, append(append([]any{sub.ID}, args...), v)...); err != nil {
			return fmt.Errorf("insert subscription %s: %w", sub.ID, err)
		}
		return insertEndpoints(w, &sub)
	})
}

// checkSubscriptionLimit returns a *store.SubscriptionLimitError when
// account holds max subscriptions or more (max 0: no limit). It only reads.
func (w *writer) checkSubscriptionLimit(account string, max int) error {
	if max <= 0 {
		return nil
	}
	var n int
	if err := w.scanRow(countSubscriptionsSQL, []any{account, max}, &n); err != nil {
		return fmt.Errorf("count the subscriptions of account %s: %w", account, err)
	}
	if n >= max {
		return &store.SubscriptionLimitError{Limit: max}
	}
	return nil
}

// insertEndpoints creates the endpoint rows of sub's URL and dead-letter
// URL, in sub's account, unless they exist. A pull subscription
// (EndpointID "") has none.
func insertEndpoints(w *writer, sub *subscription.Subscription) error {
	if err := insertEndpoint(w, sub.EndpointID, sub.URL, sub); err != nil {
		return err
	}
	return insertEndpoint(w, sub.DeadLetterEndpointID, sub.Delivery.DeadLetterURL, sub)
}

// insertEndpoint creates the endpoint row id of url, in sub's account,
// unless it exists ("" names none).
func insertEndpoint(w *writer, id, url string, sub *subscription.Subscription) error {
	if id == "" {
		return nil
	}
	var one int
	switch err := w.scanRow(endpointExistsSQL, []any{id}, &one); {
	case err == nil:
		return nil
	case !isNoRows(err):
		return fmt.Errorf("read endpoint %s: %w", id, err)
	}
	v, err := w.bumpEndpoints()
	if err != nil {
		return err
	}
	if _, err := w.exec(insertEndpointSQL, id, sub.AccountID, url, sqlrow.UnixMS(sub.UpdatedAt), v); err != nil {
		return fmt.Errorf("insert endpoint %s: %w", id, err)
	}
	return nil
}

// deleteUnusedEndpoints deletes the row of each endpoint of ids that no
// subscription uses any more, as its URL's or its dead-letter URL's; ""
// (a pull subscription's, or no dead-letter URL) names none.
func deleteUnusedEndpoints(w *writer, ids ...string) error {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, err := w.exec(deleteUnusedEndpointSQL, id); err != nil {
			return fmt.Errorf("delete unused endpoint %s: %w", id, err)
		}
	}
	return nil
}

// GetSubscription implements store.SubscriptionStore.
func (s *backend) GetSubscription(ctx context.Context, id string) (subscription.Subscription, error) {
	sub, err := sqlrow.ScanSubscription(s.readRow(ctx, getSubscriptionSQL, id))
	if isNoRows(err) {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return sub, s.readErr(err)
}

// SubscriptionByName implements store.SubscriptionStore.
func (s *backend) SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error) {
	sub, err := sqlrow.ScanSubscription(s.readRow(ctx, getSubscriptionByNameSQL, account.OrDefault(accountID), name))
	if isNoRows(err) {
		return subscription.Subscription{}, fmt.Errorf("subscription named %q in %s: %w", name, account.OrDefault(accountID), store.ErrNotFound)
	}
	return sub, s.readErr(err)
}

// ListSubscriptions implements store.SubscriptionStore. The cursor is the
// last ID of the previous page.
func (s *backend) ListSubscriptions(ctx context.Context, accountID string, p store.Page) ([]subscription.Subscription, string, error) {
	if err := store.SubscriptionCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizes, rows, args := listSQL("subscriptions", sqlrow.SubscriptionBytes, subscriptionCols, accountID, p.Cursor)
	return readPage(ctx, s, p, sizes, rows, args, sqlrow.ScanSubscription, func(s subscription.Subscription) string { return s.ID })
}

// SubscriptionChanges implements store.SubscriptionStore. It reads in one
// read transaction (one WAL snapshot) on a read connection.
func (s *backend) SubscriptionChanges(ctx context.Context, since int64) (store.CatalogChanges, error) {
	var out store.CatalogChanges
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		out = store.CatalogChanges{}
		var pruned int64
		if err := tx.QueryRowContext(ctx, catalogSQL).Scan(&out.Version); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, catalogPrunedSQL).Scan(&pruned); err != nil {
			return err
		}
		if since >= out.Version {
			return nil
		}
		if since <= 0 || since < pruned {
			out.Full, since = true, 0
		}
		rows, err := tx.QueryContext(ctx, changedSubsSQL, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sub, err := sqlrow.ScanSubscription(rows)
			if err != nil {
				return err
			}
			out.Changed = append(out.Changed, sub)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(out.Changed, func(a, b subscription.Subscription) int { return strings.Compare(a.ID, b.ID) })
		if out.Full {
			return nil
		}
		ids, err := tx.QueryContext(ctx, tombstonesSQL, since)
		if err != nil {
			return err
		}
		defer ids.Close()
		for ids.Next() {
			var id string
			if err := ids.Scan(&id); err != nil {
				return err
			}
			out.Deleted = append(out.Deleted, id)
		}
		slices.Sort(out.Deleted)
		return ids.Err()
	})
	if err != nil {
		return store.CatalogChanges{}, fmt.Errorf("subscription changes: %w", s.readErr(err))
	}
	return out, nil
}

// bumpCatalog advances the catalog version in the write transaction and
// returns it; the writer's cached version follows.
func (w *writer) bumpCatalog() (int64, error) {
	var v int64
	if err := w.scanRow(bumpCatalogSQL, nil, &v); err != nil {
		return 0, fmt.Errorf("advance the catalog version: %w", err)
	}
	w.catalogVersion = v
	return v, nil
}

// currentCatalog returns the catalog version as of the write transaction,
// read once per transaction.
func (w *writer) currentCatalog() (int64, error) {
	if w.catalogVersion == 0 {
		if err := w.scanRow(catalogSQL, nil, &w.catalogVersion); err != nil {
			w.catalogVersion = 0
			return 0, fmt.Errorf("read the catalog version: %w", err)
		}
	}
	return w.catalogVersion, nil
}

// UpdateSubscription implements store.SubscriptionStore: every column,
// CreatedAt included, takes sub's value, but the account: a subscription
// stays in its account, and ErrNotFound answers an update of a
// subscription that is not in sub's account (account.DefaultID when empty).
// When the URL changes, the deliveries still to be attempted move to the
// new URL's endpoint, finished ones keep theirs, and the old endpoint's row
// goes if no subscription uses it any more. The same holds for the
// dead-letter URL and the deliveries of dead letters (Delivery.DeadLetterOf
// set), which move only with it; when the subscription names no
// dead-letter URL any more, those still to be attempted are dropped
// (sqlrow.ReasonDeadLetterURLRemoved).
func (s *backend) UpdateSubscription(ctx context.Context, sub subscription.Subscription) error {
	args, err := sqlrow.SubscriptionValues(&sub, s.key)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		var other string
		switch err := w.scanRow(subscriptionByNameSQL, []any{sub.AccountID, sub.Name}, &other); {
		case err == nil && other != sub.ID:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case err != nil && !isNoRows(err):
			return err
		}
		var old, oldDL string
		switch err := w.scanRow(subscriptionEndpointSQL, []any{sub.ID, sub.AccountID}, &old, &oldDL); {
		case isNoRows(err):
			return fmt.Errorf("subscription %s in account %s: %w", sub.ID, sub.AccountID, store.ErrNotFound)
		case err != nil:
			return err
		}
		v, err := w.bumpCatalog()
		if err != nil {
			return err
		}
		if _, err := w.exec(updateSubscriptionSQL, append(args[1:], v, sub.ID)...); err != nil {
			return fmt.Errorf("update subscription %s: %w", sub.ID, err)
		}
		if err := insertEndpoints(w, &sub); err != nil {
			return err
		}
		var unused []string
		if old != sub.EndpointID {
			if _, err := w.exec(moveDeliveriesSQL, sub.EndpointID, sub.ID); err != nil {
				return fmt.Errorf("move the deliveries of subscription %s: %w", sub.ID, err)
			}
			unused = append(unused, old)
		}
		if dl := sub.DeadLetterEndpointID; oldDL != dl {
			var err error
			if dl != "" {
				_, err = w.exec(moveDeadLettersSQL, dl, sub.ID)
			} else {
				_, err = w.exec(dropDeadLettersSQL, sqlrow.ReasonDeadLetterURLRemoved, sub.ID)
			}
			if err != nil {
				return fmt.Errorf("move the dead letters of subscription %s: %w", sub.ID, err)
			}
			unused = append(unused, oldDL)
		}
		return deleteUnusedEndpoints(w, unused...)
	})
}

// DeleteSubscription implements store.SubscriptionStore. Its pending and
// queued deliveries become dropped with reason delivery.ReasonSubscriptionDeleted and
// lose their leases; a later Record for one of them logs the attempt only.
// All of it is one write: a subscription with a large backlog holds the
// writer while its deliveries are updated. now is the tombstone's time
// (clean-up forgets it after the dedup retention); a delivery keeps no time
// of being dropped. The rows of its endpoint and of its dead-letter URL's go
// too if no other subscription uses them.
func (s *backend) DeleteSubscription(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(w *writer) error {
		v, err := w.bumpCatalog()
		if err != nil {
			return err
		}
		var endpoint, deadLetterEndpoint string
		switch err := w.scanRow(deleteSubscriptionSQL, []any{id}, &endpoint, &deadLetterEndpoint); {
		case isNoRows(err):
			return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("delete subscription %s: %w", id, err)
		}
		if _, err := w.exec(tombstoneSQL, id, v, sqlrow.UnixMS(now)); err != nil {
			return fmt.Errorf("remember deleted subscription %s: %w", id, err)
		}
		if _, err := w.exec(dropSubscriptionDeliveriesSQL, delivery.ReasonSubscriptionDeleted, id); err != nil {
			return fmt.Errorf("drop deliveries of subscription %s: %w", id, err)
		}
		return deleteUnusedEndpoints(w, endpoint, deadLetterEndpoint)
	})
}
