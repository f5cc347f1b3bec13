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
	"github.com/herald-events/herald/internal/subscription"
)

const (
	// subscriptionWriteCols are the columns a create writes
	// (subscriptionArgs and the version); subscriptionCols those read
	// (sqlrow.ScanSubscription): state_reason too, '' at create.
	subscriptionWriteCols = `id, account_id, name, url, endpoint_id, event_types, subject_begins_with, subject_ends_with,
	retry_policy, timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
	delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version`
	subscriptionCols = subscriptionWriteCols + `, state_reason`

	// The parameters of both are subscriptionArgs' followed by the version.
	insertSubscriptionSQL = `INSERT INTO subscriptions (` + subscriptionWriteCols + `)
VALUES ($22, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $23)`

	// updateSubscriptionSQL keeps the account ($1 only selects the row): a
	// subscription stays in the account it was created in. It keeps the
	// state too ($14 is taken and ignored): only a deactivation (Record,
	// DeactivateSubscription) and ReactivateSubscription change it and its
	// reason, so a change made from an older read cannot undo a
	// deactivation committed meanwhile.
	updateSubscriptionSQL = `UPDATE subscriptions SET
	name = $2, url = $3, endpoint_id = $4, event_types = $5, subject_begins_with = $6, subject_ends_with = $7,
	retry_policy = $8, timeout_ms = $9, headers = $10, secret_headers = $11, signing = $12, dead_letter = $13,
	state = CASE WHEN $14::text IS NULL THEN state ELSE state END, delivery_mode = $15, failure_policy = $16,
	delivery = $17, dead_letter_endpoint_id = $18, filters = $19, created_at = $20, updated_at = $21, version = $23
WHERE id = $22 AND account_id = $1`

	// bumpCatalogSQL advances the catalog version and locks its row until
	// the transaction ends; every subscription write runs it first. A
	// publish batch reads the row FOR SHARE (catalogShareSQL), so the two
	// exclude each other.
	bumpCatalogSQL  = `UPDATE counters SET value = value + 1 WHERE name = 'catalog' RETURNING value`
	catalogShareSQL = `SELECT value FROM counters WHERE name = 'catalog' FOR SHARE`
	// catalogLockSQL takes the row lock a subscription write takes, without
	// advancing the version yet (a Record batch that may deactivate).
	catalogLockSQL   = `SELECT value FROM counters WHERE name = 'catalog' FOR UPDATE`
	catalogSQL       = `SELECT value FROM counters WHERE name = 'catalog'`
	catalogPrunedSQL = `SELECT value FROM counters WHERE name = 'catalog_pruned'`
	// changedSubsSQL and tombstonesSQL read the rows written after a
	// version ($1) up to the current one ($2): bounded on both sides, the
	// range is estimated small whatever the statistics say, so the planner
	// reads it from the version index. With the lower bound alone, and
	// statistics older than the latest writes, it read the whole table,
	// which made every catalog sync (one after each subscription write)
	// cost all the subscriptions.
	changedSubsSQL = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE version > $1 AND version <= $2 ORDER BY id`
	tombstonesSQL  = `SELECT id FROM subscription_tombstones WHERE version > $1 AND version <= $2 ORDER BY id`
	tombstoneSQL   = `INSERT INTO subscription_tombstones (id, version, deleted_at) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, deleted_at = excluded.deleted_at`

	subscriptionByNameSQL = `SELECT id FROM subscriptions WHERE account_id = $1 AND name = $2`
	// countSubscriptionsSQL counts an account's subscriptions up to a cap
	// ($2): it reads at most the cap's entries of the index on
	// (account_id, id), however many the account holds.
	countSubscriptionsSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions WHERE account_id = $1 LIMIT $2) AS s`
	// subscriptionExistsSQL locks the row in share mode: a delete waits
	// until the caller's transaction ends, and so sees what it changed.
	subscriptionExistsSQL    = `SELECT 1 FROM subscriptions WHERE id = $1 FOR SHARE`
	getSubscriptionSQL       = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE id = $1`
	getSubscriptionByNameSQL = `SELECT ` + subscriptionCols + ` FROM subscriptions WHERE account_id = $1 AND name = $2`

	// An endpoint row lives while a subscription uses its URL, as its URL
	// or as its dead-letter URL: a subscription write creates it (at a new
	// endpoints version, so that a node holding the health of an earlier
	// row with that ID adopts the fresh one) and deletes it with the last
	// subscription that used it either way.
	// Subscription writes are serialised by the catalog row lock, so no
	// other one creates or deletes an endpoint row meanwhile; one that
	// creates a row takes the endpoints counter before any endpoint row,
	// in ModifyEndpoints' order.
	endpointExistsSQL       = `SELECT 1 FROM endpoints WHERE id = $1`
	insertEndpointSQL       = `INSERT INTO endpoints (id, account_id, url, created_at, version) VALUES ($1, $2, $3, $4, $5)`
	deleteUnusedEndpointSQL = `DELETE FROM endpoints WHERE id = $1
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE endpoint_id = $1)
AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE dead_letter_endpoint_id = $1)`
	subscriptionEndpointSQL = `SELECT endpoint_id, dead_letter_endpoint_id FROM subscriptions WHERE id = $1 AND account_id = $2`
	// moveDeliveriesSQL gives a subscription's deliveries still to be
	// attempted its new endpoint: they are sent to its new URL, behind that
	// URL's circuit. Its dead letters' deliveries stay on its dead-letter
	// URL's endpoint. This statement and the three after it name the
	// statuses as literals, so that every plan of theirs, generic ones
	// included, may seek the subscription's entries of the partial index
	// deliveries_subscription_status (0010_status_indexes.sql): the planner
	// proves that pending and queued deliveries are not delivered.
	moveDeliveriesSQL = `UPDATE deliveries SET endpoint_id = $1
WHERE subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of = ''`
	// moveDeadLettersSQL does the same for the deliveries of its dead
	// letters, to its new dead-letter URL's endpoint.
	moveDeadLettersSQL = `UPDATE deliveries SET endpoint_id = $1
WHERE subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of <> ''`
	// dropDeadLettersSQL ends them when it names no dead-letter URL any more.
	dropDeadLettersSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = $2 AND status IN ('pending', 'queued') AND dead_letter_of <> ''`

	dropSubscriptionDeliveriesSQL = `UPDATE deliveries SET status = 'dropped', dead_letter_reason = $1,
	lease_owner = '', lease_until = 0, lock_token = '', lock_until = 0
WHERE subscription_id = $2 AND status IN ('pending', 'queued')`
	deleteSubscriptionSQL = `DELETE FROM subscriptions WHERE id = $1 RETURNING endpoint_id, dead_letter_endpoint_id`
)

// isUnique reports whether err violates the unique constraint named c.
func isUnique(err error, c string) bool {
	code, constraint := pgCode(err)
	return code == "23505" && constraint == c
}

// CreateSubscription implements store.SubscriptionStore. An empty
// AccountID is filled in as account.DefaultID, an empty DeliveryMode as
// subscription.ModePush, an empty FailurePolicy as subscription.FailureRetry, and a push
// subscription's EndpointID is s.EndpointID(AccountID, URL), whatever it
// held (sqlrow.SubscriptionValues); a pull subscription has EndpointID ""
// and gets no endpoint row (nor does its update or delete touch one). A
// push subscription naming a dead-letter URL gets that URL's endpoint row
// too, when new (DeadLetterEndpointID). The subscription's Timeout is kept
// to the millisecond. ErrNotFound when the account does not exist (checked
// first), ErrNameTaken when the name is used in the account, ErrConflict
// when the ID is taken, a *store.SubscriptionLimitError when the account
// holds Options.MaxSubscriptionsPerAccount already. The count is read after
// the catalog row lock that every subscription write takes (bumpCatalog),
// in a statement of its own, so it sees every create committed before, on
// any node, and none can commit until this one ends.
func (s *backend) CreateSubscription(ctx context.Context, sub subscription.Subscription) error {
	args, err := s.subscriptionArgs(&sub)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := accountExists(ctx, tx, sub.AccountID); err != nil {
			return err
		}
		var other string
		switch err := tx.QueryRow(ctx, subscriptionByNameSQL, sub.AccountID, sub.Name).Scan(&other); {
		case err == nil:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		v, err := s.bumpCatalog(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.checkSubscriptionLimit(ctx, tx, sub.AccountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertSubscriptionSQL, append(args, v)...); err != nil {
			return err
		}
		return s.insertEndpoints(ctx, tx, &sub)
	})
	switch {
	case isUnique(err, "subscriptions_account_name_key"): // created meanwhile
		return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
	case isUnique(err, "subscriptions_pkey"):
		return fmt.Errorf("subscription %s already exists: %w", sub.ID, store.ErrConflict)
	case err != nil && !errors.Is(err, store.ErrNameTaken) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrClosed) &&
		!errors.Is(err, store.ErrSubscriptionLimit):
		return fmt.Errorf("insert subscription %s: %w", sub.ID, err)
	}
	return err
}

// checkSubscriptionLimit returns a *store.SubscriptionLimitError when
// account holds Options.MaxSubscriptionsPerAccount subscriptions or more
// (0: no limit). Call it after bumpCatalog (see CreateSubscription).
func (s *backend) checkSubscriptionLimit(ctx context.Context, tx pgx.Tx, account string) error {
	max := s.opts.MaxSubscriptionsPerAccount
	if max <= 0 {
		return nil
	}
	var n int
	if err := tx.QueryRow(ctx, countSubscriptionsSQL, account, max).Scan(&n); err != nil {
		return fmt.Errorf("count the subscriptions of account %s: %w", account, err)
	}
	if n >= max {
		return &store.SubscriptionLimitError{Limit: max}
	}
	return nil
}

// insertEndpoints creates the endpoint rows of sub's URL and dead-letter
// URL in sub's account (both filled in: subscriptionArgs) unless they
// exist. A pull subscription (EndpointID "") has none.
func (s *backend) insertEndpoints(ctx context.Context, tx pgx.Tx, sub *subscription.Subscription) error {
	if err := s.insertEndpoint(ctx, tx, sub.EndpointID, sub.URL, sub); err != nil {
		return err
	}
	return s.insertEndpoint(ctx, tx, sub.DeadLetterEndpointID, sub.Delivery.DeadLetterURL, sub)
}

// insertEndpoint creates the endpoint row id of url, in sub's account,
// unless it exists ("" names none).
func (s *backend) insertEndpoint(ctx context.Context, tx pgx.Tx, id, url string, sub *subscription.Subscription) error {
	if id == "" {
		return nil
	}
	var one int
	switch err := tx.QueryRow(ctx, endpointExistsSQL, id).Scan(&one); {
	case err == nil:
		return nil
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("read endpoint %s: %w", id, err)
	}
	v, err := s.bumpEndpoints(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertEndpointSQL, id, sub.AccountID, url, sqlrow.UnixMS(sub.UpdatedAt), v); err != nil {
		return fmt.Errorf("insert endpoint %s: %w", id, err)
	}
	return nil
}

// deleteUnusedEndpoints deletes the row of each endpoint of ids that no
// subscription uses any more, as its URL's or its dead-letter URL's; ""
// (a pull subscription's, or no dead-letter URL) names none.
func deleteUnusedEndpoints(ctx context.Context, tx pgx.Tx, ids ...string) error {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, err := tx.Exec(ctx, deleteUnusedEndpointSQL, id); err != nil {
			return fmt.Errorf("delete unused endpoint %s: %w", id, err)
		}
	}
	return nil
}

// GetSubscription implements store.SubscriptionStore.
func (s *backend) GetSubscription(ctx context.Context, id string) (subscription.Subscription, error) {
	if err := s.checkOpen(); err != nil {
		return subscription.Subscription{}, err
	}
	sub, err := queryRow(ctx, s, sqlrow.ScanSubscription, getSubscriptionSQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return sub, s.err(err)
}

// SubscriptionByName implements store.SubscriptionStore.
func (s *backend) SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error) {
	if err := s.checkOpen(); err != nil {
		return subscription.Subscription{}, err
	}
	sub, err := queryRow(ctx, s, sqlrow.ScanSubscription, getSubscriptionByNameSQL, account.OrDefault(accountID), name)
	if errors.Is(err, pgx.ErrNoRows) {
		return subscription.Subscription{}, fmt.Errorf("subscription named %q in %s: %w", name, account.OrDefault(accountID), store.ErrNotFound)
	}
	return sub, s.err(err)
}

// ListSubscriptions implements store.SubscriptionStore. The cursor is the
// last ID of the previous page. An account's page seeks its
// (account_id, id) index.
func (s *backend) ListSubscriptions(ctx context.Context, accountID string, p store.Page) ([]subscription.Subscription, string, error) {
	if err := store.SubscriptionCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	return listByID(ctx, s, "subscriptions", sqlrow.SubscriptionBytes, subscriptionCols, accountID, p,
		sqlrow.ScanSubscription, func(s subscription.Subscription) string { return s.ID })
}

// SubscriptionChanges implements store.SubscriptionStore in one read-only
// REPEATABLE READ transaction (one snapshot).
func (s *backend) SubscriptionChanges(ctx context.Context, since int64) (store.CatalogChanges, error) {
	var out store.CatalogChanges
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		out = store.CatalogChanges{}
		var pruned int64
		if err := tx.QueryRow(ctx, catalogSQL).Scan(&out.Version); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, catalogPrunedSQL).Scan(&pruned); err != nil {
			return err
		}
		if since >= out.Version {
			return nil
		}
		if since <= 0 || since < pruned {
			out.Full, since = true, 0
		}
		rows, err := tx.Query(ctx, changedSubsSQL, since, out.Version)
		if err != nil {
			return err
		}
		out.Changed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (subscription.Subscription, error) {
			return sqlrow.ScanSubscription(r)
		})
		if err != nil || out.Full {
			return err
		}
		rows, err = tx.Query(ctx, tombstonesSQL, since, out.Version)
		if err != nil {
			return err
		}
		out.Deleted, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return store.CatalogChanges{}, fmt.Errorf("subscription changes: %w", err)
	}
	return out, nil
}

// bumpCatalog advances the catalog version in tx (locking its row until tx
// ends), tells the other nodes when tx commits, and returns the version.
func (s *backend) bumpCatalog(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRow(ctx, bumpCatalogSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the catalog version: %w", err)
	}
	return v, s.notify(ctx, tx, changedCatalog)
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
	args, err := s.subscriptionArgs(&sub)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var other string
		switch err := tx.QueryRow(ctx, subscriptionByNameSQL, sub.AccountID, sub.Name).Scan(&other); {
		case err == nil && other != sub.ID:
			return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		v, err := s.bumpCatalog(ctx, tx)
		if err != nil {
			return err
		}
		var old, oldDL string
		switch err := tx.QueryRow(ctx, subscriptionEndpointSQL, sub.ID, sub.AccountID).Scan(&old, &oldDL); {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("subscription %s in account %s: %w", sub.ID, sub.AccountID, store.ErrNotFound)
		case err != nil:
			return err
		}
		if _, err := tx.Exec(ctx, updateSubscriptionSQL, append(args, v)...); err != nil {
			return err
		}
		if err := s.insertEndpoints(ctx, tx, &sub); err != nil {
			return err
		}
		var unused []string
		if old != sub.EndpointID {
			if _, err := tx.Exec(ctx, moveDeliveriesSQL, sub.EndpointID, sub.ID); err != nil {
				return fmt.Errorf("move the deliveries of subscription %s: %w", sub.ID, err)
			}
			unused = append(unused, old)
		}
		if dl := sub.DeadLetterEndpointID; oldDL != dl {
			var err error
			if dl != "" {
				_, err = tx.Exec(ctx, moveDeadLettersSQL, dl, sub.ID)
			} else {
				_, err = tx.Exec(ctx, dropDeadLettersSQL, sqlrow.ReasonDeadLetterURLRemoved, sub.ID)
			}
			if err != nil {
				return fmt.Errorf("move the dead letters of subscription %s: %w", sub.ID, err)
			}
			unused = append(unused, oldDL)
		}
		return deleteUnusedEndpoints(ctx, tx, unused...)
	})
	if isUnique(err, "subscriptions_account_name_key") {
		return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
	}
	return err
}

// DeleteSubscription implements store.SubscriptionStore. Its pending and
// queued deliveries become dropped with reason delivery.ReasonSubscriptionDeleted and
// lose their leases, in the same transaction; a later Record for one of
// them logs the attempt only. now is the tombstone's time (clean-up forgets
// it after the dedup retention); a delivery keeps no time of being dropped.
// The catalog row lock taken first waits for publish batches in progress,
// so the drop sees every delivery they wrote (and every delivery of a dead
// letter a Record batch wrote: see guardBatch). The rows of its endpoint
// and of its dead-letter URL's go too if no other subscription uses them.
func (s *backend) DeleteSubscription(ctx context.Context, id string, now time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		v, err := s.bumpCatalog(ctx, tx)
		if err != nil {
			return err
		}
		var endpoint, deadLetterEndpoint string
		switch err := tx.QueryRow(ctx, deleteSubscriptionSQL, id).Scan(&endpoint, &deadLetterEndpoint); {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("delete subscription %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, tombstoneSQL, id, v, sqlrow.UnixMS(now)); err != nil {
			return fmt.Errorf("remember deleted subscription %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, dropSubscriptionDeliveriesSQL, delivery.ReasonSubscriptionDeleted, id); err != nil {
			return fmt.Errorf("drop deliveries of subscription %s: %w", id, err)
		}
		return deleteUnusedEndpoints(ctx, tx, endpoint, deadLetterEndpoint)
	})
}

// subscriptionArgs returns s's columns in subscriptionWriteCols order after the
// ID (account_id … updated_at: $1 … $21), followed by the ID ($22). It
// fills in an empty AccountID, DeliveryMode and FailurePolicy, and the
// endpoint IDs (sqlrow.SubscriptionValues, with the store's key).
func (st *backend) subscriptionArgs(s *subscription.Subscription) ([]any, error) {
	v, err := sqlrow.SubscriptionValues(s, st.key)
	return append(v, s.ID), err
}
