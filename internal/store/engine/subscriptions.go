package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// Subscriptions (store.SubscriptionStore). A statement that reads
// subscriptions selects the columns sqlrow.ScanSubscription reads, in its
// order (id, account_id … updated_at, version, state_reason); one that
// writes them takes subscriptionArgs' values, then the catalog version.
var (
	// qInsertSubscription inserts a subscription (subscriptionArgs and the
	// version), nothing when its ID or its name in its account is taken.
	qInsertSubscription = query("InsertSubscription")
	// qUpdateSubscription sets every column of subscription $1 in account
	// $2 (subscriptionArgs and the version) but the account, which selects
	// the row: a subscription never changes accounts. The state ($15) is
	// taken and ignored: only a deactivation (Record,
	// DeactivateSubscription) and ReactivateSubscription change the state
	// and its reason, so a change made from an older read cannot undo a
	// deactivation committed meanwhile.
	qUpdateSubscription = query("UpdateSubscription")
	// qDeleteSubscription deletes subscription $1.
	qDeleteSubscription = query("DeleteSubscription")
	// qRememberDeleted writes the tombstone of subscription $1, deleted at
	// catalog version $2 at time $3 (replacing an older one of that ID).
	qRememberDeleted = query("RememberDeletedSubscription")

	// qGetSubscription reads subscription $1 (sqlrow.ScanSubscription);
	// qSubscriptionByName the one named $2 in account $1, a seek of the
	// (account_id, name) unique index.
	qGetSubscription    = query("GetSubscription")
	qSubscriptionByName = query("SubscriptionByName")
	// qSubscriptionNamed reads the ID of the subscription named $2 in
	// account $1.
	qSubscriptionNamed = query("SubscriptionNamed")
	// qSubscriptionExists reads 1 when subscription $1 exists, locked in
	// share mode until the transaction ends on PostgreSQL (a delete or an
	// update of the subscription waits).
	qSubscriptionExists = query("SubscriptionExists")
	// qSubscriptionState reads the account, delivery mode, state, endpoint
	// and dead-letter URL's endpoint of subscription $1.
	qSubscriptionState = query("SubscriptionState")
	// qCountSubscriptions counts the subscriptions of account $1 up to $2:
	// one seek of its (account_id, id) index that reads at most $2
	// entries, however many the account holds.
	qCountSubscriptions = query("CountSubscriptions")

	// qMoveDeliveries gives subscription $2's deliveries still to be
	// attempted (pending, queued) the endpoint $1: they are sent to its new
	// URL, behind that URL's circuit. Its dead letters' deliveries stay on
	// its dead-letter URL's endpoint. qMoveDeadLetters does the same for
	// the deliveries of its dead letters, to its new dead-letter URL's
	// endpoint; qDropDeadLetters ends those (dropped with reason $1) when
	// it names no dead-letter URL any more. All three, and
	// qDropSubscriptionDeliveries, seek the subscription's entries of the
	// index of deliveries not delivered.
	qMoveDeliveries  = query("MoveSubscriptionDeliveries")
	qMoveDeadLetters = query("MoveSubscriptionDeadLetters")
	qDropDeadLetters = query("DropSubscriptionDeadLetters")
	// qDropSubscriptionDeliveries drops subscription $2's pending and
	// queued deliveries with reason $1, leases and locks cleared.
	qDropSubscriptionDeliveries = query("DropSubscriptionDeliveries")

	// qListSubscriptionSizes and qListSubscriptions read a page of every
	// account's subscriptions in ID order after $1, at most $2: the sizes
	// of the items (sqlrow.SubscriptionBytes), then the items.
	// qListAccountSubscriptionSizes and qListAccountSubscriptions do the
	// same in account $2 ($3 the limit), a seek of its (account_id, id)
	// index.
	qListSubscriptionSizes        = query("ListSubscriptionSizes")
	qListSubscriptions            = query("ListSubscriptions")
	qListAccountSubscriptionSizes = query("ListAccountSubscriptionSizes")
	qListAccountSubscriptions     = query("ListAccountSubscriptions")
)

// subscriptionArgs returns the values of sub's columns but the version
// (id, then sqlrow.SubscriptionValues: account_id … updated_at), after
// filling in what the store fills in (an empty AccountID, DeliveryMode and
// FailurePolicy, the endpoint IDs made with key). withVersion appends the
// version to them: the arguments of qInsertSubscription and
// qUpdateSubscription.
func subscriptionArgs(sub *subscription.Subscription, key endpoint.Key) ([]any, error) {
	vals, err := sqlrow.SubscriptionValues(sub, key)
	if err != nil {
		return nil, err
	}
	return append([]any{sub.ID}, vals...), nil
}

// withVersion returns args followed by the catalog version v, leaving args
// as they are (a write function may run again).
func withVersion(args []any, v int64) []any {
	return append(args[:len(args):len(args)], v)
}

// CreateSubscription implements store.SubscriptionStore. An empty
// AccountID is account.DefaultID, an empty DeliveryMode
// subscription.ModePush, an empty FailurePolicy subscription.FailureRetry,
// and a push subscription's EndpointID is the endpoint of its account and
// URL (Options.EndpointKey), whatever it held (sqlrow.SubscriptionValues);
// a pull subscription has EndpointID "" and gets no endpoint row (nor does
// its update or delete touch one). A push subscription naming a
// dead-letter URL gets that URL's endpoint row too, when new
// (DeadLetterEndpointID). The subscription's Timeout is kept to the
// millisecond. ErrNotFound when the account does not exist (checked
// first), a *store.SubscriptionLimitError when the account holds
// Options.MaxSubscriptionsPerAccount already, ErrNameTaken when the name is
// used in the account, ErrConflict when the ID is taken. The count is read
// after the catalog lock every subscription write takes (lockCatalog), so
// it sees every create committed before, on any node, and none can commit
// until this one ends.
func (s *Store) CreateSubscription(ctx context.Context, sub subscription.Subscription) error {
	args, err := subscriptionArgs(&sub, s.opts.EndpointKey)
	if err != nil {
		return err
	}
	return s.write(ctx, func(x driver.Executor) error {
		var one int
		switch err := x.QueryRow(ctx, qAccountExists, sub.AccountID).Scan(&one); {
		case errors.Is(err, driver.ErrNoRows):
			return fmt.Errorf("account %s: %w", sub.AccountID, store.ErrNotFound)
		case err != nil:
			return fmt.Errorf("read account %s: %w", sub.AccountID, err)
		}
		if err := lockCatalog(ctx, x); err != nil {
			return err
		}
		if err := s.checkSubscriptionLimit(ctx, x, sub.AccountID); err != nil {
			return err
		}
		if err := subscriptionNameFree(ctx, x, &sub); err != nil {
			return err
		}
		switch err := x.QueryRow(ctx, qSubscriptionExists, sub.ID).Scan(&one); {
		case err == nil:
			return fmt.Errorf("subscription %s already exists: %w", sub.ID, store.ErrConflict)
		case !errors.Is(err, driver.ErrNoRows):
			return err
		}
		v, err := s.bumpCatalog(ctx, x)
		if err != nil {
			return err
		}
		switch n, err := x.Exec(ctx, qInsertSubscription, withVersion(args, v)...); {
		case err != nil:
			return fmt.Errorf("insert subscription %s: %w", sub.ID, err)
		case n == 0: // not seen above: every create holds the catalog lock
			return fmt.Errorf("subscription %s already exists: %w", sub.ID, store.ErrConflict)
		}
		return s.insertEndpoints(ctx, x, &sub)
	})
}

// checkSubscriptionLimit returns a *store.SubscriptionLimitError when
// account holds Options.MaxSubscriptionsPerAccount subscriptions or more
// (0: no limit). It only reads; call it after lockCatalog.
func (s *Store) checkSubscriptionLimit(ctx context.Context, x driver.Executor, account string) error {
	limit := s.opts.MaxSubscriptionsPerAccount
	if limit <= 0 {
		return nil
	}
	var n int
	if err := x.QueryRow(ctx, qCountSubscriptions, account, limit).Scan(&n); err != nil {
		return fmt.Errorf("count the subscriptions of account %s: %w", account, err)
	}
	if n >= limit {
		return &store.SubscriptionLimitError{Limit: limit}
	}
	return nil
}

// subscriptionNameFree returns ErrNameTaken when another subscription than sub uses
// sub's name in its account.
func subscriptionNameFree(ctx context.Context, x driver.Executor, sub *subscription.Subscription) error {
	var other string
	switch err := x.QueryRow(ctx, qSubscriptionNamed, sub.AccountID, sub.Name).Scan(&other); {
	case err == nil && other != sub.ID:
		return fmt.Errorf("subscription name %q: %w", sub.Name, store.ErrNameTaken)
	case err != nil && !errors.Is(err, driver.ErrNoRows):
		return err
	}
	return nil
}

// GetSubscription implements store.SubscriptionStore.
func (s *Store) GetSubscription(ctx context.Context, id string) (subscription.Subscription, error) {
	sub, err := sqlrow.ScanSubscription(s.drv.Reader().QueryRow(ctx, qGetSubscription, id))
	if errors.Is(err, driver.ErrNoRows) {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	}
	return sub, err
}

// SubscriptionByName implements store.SubscriptionStore.
func (s *Store) SubscriptionByName(ctx context.Context, accountID, name string) (subscription.Subscription, error) {
	acc := account.OrDefault(accountID)
	sub, err := sqlrow.ScanSubscription(s.drv.Reader().QueryRow(ctx, qSubscriptionByName, acc, name))
	if errors.Is(err, driver.ErrNoRows) {
		return subscription.Subscription{}, fmt.Errorf("subscription named %q in %s: %w", name, acc, store.ErrNotFound)
	}
	return sub, err
}

// ListSubscriptions implements store.SubscriptionStore. The cursor is the
// last ID of the previous page; an account's page seeks its
// (account_id, id) index. One snapshot reads the sizes of the items after
// the cursor, to find where the page ends (store.Page.Len), then only the
// items the page holds.
func (s *Store) ListSubscriptions(ctx context.Context, accountID string, p store.Page) ([]subscription.Subscription, string, error) {
	if err := store.SubscriptionCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizes, items, args := qListSubscriptionSizes, qListSubscriptions, []any{p.Cursor}
	if accountID != "" {
		sizes, items, args = qListAccountSubscriptionSizes, qListAccountSubscriptions, []any{p.Cursor, accountID}
	}
	return readPage(ctx, s, p, sizes, items, args, sqlrow.ScanSubscription,
		func(sub subscription.Subscription) string { return sub.ID })
}

// UpdateSubscription implements store.SubscriptionStore: every column,
// CreatedAt included, takes sub's value, but the account: a subscription
// stays in its account, and ErrNotFound answers an update of a
// subscription that is not in sub's account (account.DefaultID when
// empty). When the URL changes, the deliveries still to be attempted move
// to the new URL's endpoint, finished ones keep theirs, and the old
// endpoint's row goes if no subscription uses it any more. The same holds
// for the dead-letter URL and the deliveries of dead letters
// (Delivery.DeadLetterOf set), which move only with it; when the
// subscription names no dead-letter URL any more, those still to be
// attempted are dropped (sqlrow.ReasonDeadLetterURLRemoved).
// ErrNameTaken when another subscription of the account has its name.
func (s *Store) UpdateSubscription(ctx context.Context, sub subscription.Subscription) error {
	args, err := subscriptionArgs(&sub, s.opts.EndpointKey)
	if err != nil {
		return err
	}
	return s.write(ctx, func(x driver.Executor) error {
		if err := lockCatalog(ctx, x); err != nil {
			return err
		}
		if err := subscriptionNameFree(ctx, x, &sub); err != nil {
			return err
		}
		st, err := subscriptionState(ctx, x, sub.ID)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && st.account != sub.AccountID:
			return fmt.Errorf("subscription %s in account %s: %w", sub.ID, sub.AccountID, store.ErrNotFound)
		case err != nil:
			return err
		}
		v, err := s.bumpCatalog(ctx, x)
		if err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qUpdateSubscription, withVersion(args, v)...); err != nil {
			return fmt.Errorf("update subscription %s: %w", sub.ID, err)
		}
		if err := s.insertEndpoints(ctx, x, &sub); err != nil {
			return err
		}
		return moveDeliveries(ctx, x, &sub, st)
	})
}

// moveDeliveries moves the deliveries still to be attempted of sub, whose
// stored state was old, to its new endpoints (see UpdateSubscription), and
// deletes the rows of the endpoints it stopped using if no subscription
// uses them.
func moveDeliveries(ctx context.Context, x driver.Executor, sub *subscription.Subscription, old subState) error {
	var unused []string
	if old.endpoint != sub.EndpointID {
		if _, err := x.Exec(ctx, qMoveDeliveries, sub.EndpointID, sub.ID); err != nil {
			return fmt.Errorf("move the deliveries of subscription %s: %w", sub.ID, err)
		}
		unused = append(unused, old.endpoint)
	}
	if dl := sub.DeadLetterEndpointID; old.deadLetterEndpoint != dl {
		var err error
		if dl != "" {
			_, err = x.Exec(ctx, qMoveDeadLetters, dl, sub.ID)
		} else {
			_, err = x.Exec(ctx, qDropDeadLetters, sqlrow.ReasonDeadLetterURLRemoved, sub.ID)
		}
		if err != nil {
			return fmt.Errorf("move the dead letters of subscription %s: %w", sub.ID, err)
		}
		unused = append(unused, old.deadLetterEndpoint)
	}
	return deleteUnusedEndpoints(ctx, x, unused...)
}

// DeleteSubscription implements store.SubscriptionStore. Its pending and
// queued deliveries become dropped with reason
// delivery.ReasonSubscriptionDeleted and lose their leases, in the same
// transaction (on SQLite, one write holding the writer in proportion to
// its backlog); a later Record for one of them logs the attempt only. now
// is the tombstone's time (clean-up forgets it after the dedup retention);
// a delivery keeps no time of being dropped. The catalog lock taken first
// waits, on PostgreSQL, for publish batches in progress, so the drop sees
// every delivery they wrote (and every delivery of a dead letter a Record
// batch wrote). The rows of its endpoint and of its dead-letter URL's go
// too if no other subscription uses them.
func (s *Store) DeleteSubscription(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(x driver.Executor) error {
		if err := lockCatalog(ctx, x); err != nil {
			return err
		}
		st, err := subscriptionState(ctx, x, id)
		if err != nil {
			return err
		}
		v, err := s.bumpCatalog(ctx, x)
		if err != nil {
			return err
		}
		if _, err := x.Exec(ctx, qDeleteSubscription, id); err != nil {
			return fmt.Errorf("delete subscription %s: %w", id, err)
		}
		if _, err := x.Exec(ctx, qRememberDeleted, id, v, sqlrow.UnixMS(now)); err != nil {
			return fmt.Errorf("remember deleted subscription %s: %w", id, err)
		}
		if _, err := x.Exec(ctx, qDropSubscriptionDeliveries, delivery.ReasonSubscriptionDeleted, id); err != nil {
			return fmt.Errorf("drop deliveries of subscription %s: %w", id, err)
		}
		return deleteUnusedEndpoints(ctx, x, st.endpoint, st.deadLetterEndpoint)
	})
}

// subState is what subscriptionState reads of a subscription.
type subState struct {
	account, mode, state         string
	endpoint, deadLetterEndpoint string
}

// subscriptionState reads subscription id's account, delivery mode, state
// and endpoints; store.ErrNotFound when it does not exist.
func subscriptionState(ctx context.Context, x driver.Executor, id string) (subState, error) {
	var st subState
	err := x.QueryRow(ctx, qSubscriptionState, id).Scan(&st.account, &st.mode, &st.state, &st.endpoint, &st.deadLetterEndpoint)
	switch {
	case errors.Is(err, driver.ErrNoRows):
		return subState{}, fmt.Errorf("subscription %s: %w", id, store.ErrNotFound)
	case err != nil:
		return subState{}, fmt.Errorf("read subscription %s: %w", id, err)
	}
	return st, nil
}
