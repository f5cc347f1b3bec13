package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// Retention (store.DeliveryStore's Cleanup). The statements after
// qCleanupCandidates take a round's events as one list of sequences ($1).
var (
	// qCleanupCandidates returns the seq of at most $2 events published
	// before $1 none of whose deliveries may still be attempted (an event
	// without deliveries qualifies), oldest first.
	qCleanupCandidates = query("CleanupCandidates")
	// qCleanupFinished returns those of the events $1 none of whose
	// deliveries is unfinished now, locking their deliveries on
	// PostgreSQL (so that none can be redelivered until the transaction
	// ends).
	qCleanupFinished = query("CleanupFinished")
	// qCleanupAttempts deletes the attempts of the events $1's deliveries.
	qCleanupAttempts = query("CleanupAttempts")
	// qCleanupDeliveries deletes the deliveries of the events $1.
	qCleanupDeliveries = query("CleanupDeliveries")
	// qCleanupEvents deletes the events $1.
	qCleanupEvents = query("CleanupEvents")
	// qOldTombstones returns the newest version of the tombstones of
	// subscriptions deleted before $1 (0: none).
	qOldTombstones = query("OldTombstones")
	// qPruneCatalog raises the counter catalog_pruned to $1: a reader of
	// the catalog older than it must read every subscription.
	qPruneCatalog = query("PruneCatalog")
	// qPruneTombstones deletes the tombstones of subscriptions deleted
	// before $1 at versions up to $2.
	qPruneTombstones = query("PruneTombstones")
)

// Cleanup implements store.DeliveryStore, oldest events first, and forgets
// the tombstones of subscriptions deleted before `before`
// (pruneTombstones). A limit of zero or less deletes nothing. An event
// counts as finished when none of its deliveries is pending or queued.
// Candidates are found first, outside the write, so that a long stretch of
// old unfinished events (a large retry backlog) does not hold SQLite's
// writer; then one write checks them again (one may have been redelivered
// meanwhile; PostgreSQL locks their deliveries) and deletes the attempts,
// deliveries and events of those still finished. Nodes may run it at the
// same time: each event is deleted, and counted, once.
func (s *Store) Cleanup(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, s.Ping(ctx) // nothing to do, but a closed store says so
	}
	if err := s.pruneTombstones(ctx, before); err != nil {
		return 0, err
	}
	var seqs []int64
	err := s.drv.Reader().Query(ctx, qCleanupCandidates, func(r driver.Row) error {
		var seq int64
		if err := r.Scan(&seq); err != nil {
			return err
		}
		seqs = append(seqs, seq)
		return nil
	}, sqlrow.UnixMS(before), limit)
	if err != nil {
		return 0, fmt.Errorf("cleanup: %w", err)
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	var n int64
	err = s.write(ctx, func(x driver.Executor) error {
		var done []int64
		n = 0
		err := x.Query(ctx, qCleanupFinished, func(r driver.Row) error {
			var seq int64
			if err := r.Scan(&seq); err != nil {
				return err
			}
			done = append(done, seq)
			return nil
		}, seqs)
		if err != nil || len(done) == 0 {
			return err
		}
		for _, q := range []driver.Query{qCleanupAttempts, qCleanupDeliveries} {
			if _, err := x.Exec(ctx, q, done); err != nil {
				return err
			}
		}
		n, err = x.Exec(ctx, qCleanupEvents, done)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cleanup: %w", err)
	}
	return int(n), nil
}

// pruneTombstones deletes the tombstones of subscriptions deleted before
// `before`, remembering the newest version deleted in catalog_pruned.
func (s *Store) pruneTombstones(ctx context.Context, before time.Time) error {
	var upto int64
	if err := s.drv.Reader().QueryRow(ctx, qOldTombstones, sqlrow.UnixMS(before)).Scan(&upto); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	if upto == 0 {
		return nil
	}
	err := s.write(ctx, func(x driver.Executor) error {
		if _, err := x.Exec(ctx, qPruneCatalog, upto); err != nil {
			return err
		}
		_, err := x.Exec(ctx, qPruneTombstones, sqlrow.UnixMS(before), upto)
		return err
	})
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
