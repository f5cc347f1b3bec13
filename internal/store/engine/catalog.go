package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
	"github.com/herald-events/herald/internal/subscription"
)

// The catalog version: every subscription write (create, update, delete,
// deactivation, reactivation) advances it by one in its own transaction and
// stores the new value on what it wrote (subscriptions.version, or the
// tombstone of a deleted one), so a reader learns what changed after the
// version it holds (SubscriptionChanges), and a publish that matched its
// events at an older version is refused (store.ErrStaleCatalog).
//
// Every subscription write takes the catalog lock (qLockCatalog) before it
// reads what it checks, and advances the version (bumpCatalog) only once it
// knows it writes: on PostgreSQL the lock is the catalog row's FOR UPDATE,
// so subscription writes are serialised with each other and with publish
// batches (which read the row FOR SHARE), on every node; SQLite's one writer
// serialises them already. A write that finds nothing to do takes no
// version.
var (
	// qLockCatalog reads the catalog version, locked until the transaction
	// ends where the store is shared (PostgreSQL: FOR UPDATE).
	qLockCatalog = query("LockCatalog")
	// qBumpCatalog advances the catalog version and returns it.
	qBumpCatalog = query("BumpCatalog")
	// qNotifyCatalog tells the other processes sharing the store, when the
	// transaction commits, that the catalog changed (PostgreSQL's NOTIFY;
	// run only on a shared store).
	qNotifyCatalog = query("NotifyCatalog")
	// qNotifyQueued tells the processes sharing the store, when the
	// transaction commits, that deliveries of the subscriptions $1 (a list)
	// became receivable (run only on a shared store).
	qNotifyQueued = query("NotifyQueued")

	// qCatalogVersion reads the catalog version; qCatalogPruned the oldest
	// version whose deletions the store still remembers (clean-up forgets
	// tombstones after the dedup retention and moves it).
	qCatalogVersion = query("CatalogVersion")
	qCatalogPruned  = query("CatalogPruned")
	// qChangedSubscriptions reads the subscriptions (sqlrow.ScanSubscription)
	// written after version $1 up to version $2, from the version index;
	// qDeletedSubscriptions the IDs of the tombstones in that range.
	// Bounded on both sides, the range is estimated small whatever the
	// statistics say; in any order (SubscriptionChanges sorts them).
	qChangedSubscriptions = query("ChangedSubscriptions")
	qDeletedSubscriptions = query("DeletedSubscriptions")
)

// lockCatalog takes the catalog lock in x (qLockCatalog).
func lockCatalog(ctx context.Context, x driver.Executor) error {
	var v int64
	if err := x.QueryRow(ctx, qLockCatalog).Scan(&v); err != nil {
		return fmt.Errorf("lock the catalog: %w", err)
	}
	return nil
}

// bumpCatalog advances the catalog version in x and returns it; on a
// shared store the other processes are told when x commits.
func (s *Store) bumpCatalog(ctx context.Context, x driver.Executor) (int64, error) {
	var v int64
	if err := x.QueryRow(ctx, qBumpCatalog).Scan(&v); err != nil {
		return 0, fmt.Errorf("advance the catalog version: %w", err)
	}
	if s.opts.Capabilities.Shared {
		if _, err := x.Exec(ctx, qNotifyCatalog); err != nil {
			return 0, fmt.Errorf("announce the catalog version: %w", err)
		}
	}
	return v, nil
}

// notifyQueued tells the other processes sharing the store, when x
// commits, of the subscriptions whose deliveries x made receivable (none
// costs no statement). This process learns of them from queuedHere.
func (s *Store) notifyQueued(ctx context.Context, x driver.Executor, subscriptionIDs []string) error {
	if len(subscriptionIDs) == 0 || !s.opts.Capabilities.Shared {
		return nil
	}
	if _, err := x.Exec(ctx, qNotifyQueued, subscriptionIDs); err != nil {
		return fmt.Errorf("announce queued deliveries: %w", err)
	}
	return nil
}

// queuedHere tells this process (Options.OnQueued), after a commit, of the
// subscriptions whose deliveries it made receivable. On a shared store the
// notification (notifyQueued) reaches this process too: OnQueued may hear
// of one change twice.
func (s *Store) queuedHere(subscriptionIDs []string) {
	if len(subscriptionIDs) > 0 && s.opts.OnQueued != nil {
		s.opts.OnQueued(subscriptionIDs)
	}
}

// SubscriptionChanges implements store.SubscriptionStore in one read-only
// transaction (one snapshot). A reader at version 0, or older than the
// oldest deletion the store remembers, gets Full changes.
func (s *Store) SubscriptionChanges(ctx context.Context, since int64) (store.CatalogChanges, error) {
	var out store.CatalogChanges
	err := s.drv.Snapshot(ctx, func(x driver.Executor) error {
		out = store.CatalogChanges{}
		var pruned int64
		if err := x.QueryRow(ctx, qCatalogVersion).Scan(&out.Version); err != nil {
			return err
		}
		if err := x.QueryRow(ctx, qCatalogPruned).Scan(&pruned); err != nil {
			return err
		}
		if since >= out.Version {
			return nil
		}
		from := since
		if since <= 0 || since < pruned {
			out.Full, from = true, 0
		}
		err := x.Query(ctx, qChangedSubscriptions, func(r driver.Row) error {
			sub, err := sqlrow.ScanSubscription(r)
			out.Changed = append(out.Changed, sub)
			return err
		}, from, out.Version)
		if err != nil || out.Full {
			return err
		}
		return x.Query(ctx, qDeletedSubscriptions, func(r driver.Row) error {
			var id string
			err := r.Scan(&id)
			out.Deleted = append(out.Deleted, id)
			return err
		}, from, out.Version)
	})
	if err != nil {
		return store.CatalogChanges{}, fmt.Errorf("subscription changes: %w", err)
	}
	slices.SortFunc(out.Changed, func(a, b subscription.Subscription) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(out.Deleted)
	return out, nil
}
