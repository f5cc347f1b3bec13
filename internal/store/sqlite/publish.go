package sqlite

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	insertEventSQL = `INSERT INTO events (account_id, id, source, type, subject, published_at, payload)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id, source, account_id) DO NOTHING`

	eventSeqSQL = `SELECT seq FROM events WHERE id = ? AND source = ? AND account_id = ?`

	subscriptionPresentSQL = `SELECT 1 FROM subscriptions WHERE id = ?`

	// insertDeliveriesSQL takes the VALUES of up to maxRowsPerInsert
	// deliveries (see valuesSQL): one statement for an event's deliveries
	// rather than one each, since most of a statement's cost in SQLite
	// through database/sql is per statement (arguments converted, bound,
	// the program started and reset), not per row.
	insertDeliveriesSQL = `INSERT INTO deliveries
(id, account_id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at, lease_owner, lease_until)
VALUES `
	deliveryParams = 11

	// maxRowsPerInsert bounds a multi-row INSERT: 32 rows of 11 parameters,
	// far below SQLite's limit of 32,766, and few statement texts to
	// prepare (one per row count).
	maxRowsPerInsert = 32
)

// Publish implements store.DeliveryStore. The whole call is one request of
// a group commit: its events and deliveries are committed together or not at
// all (a delivery ID that already exists fails the call). Each event is
// inserted in its account (DefaultAccount when AccountID is empty) with ON
// CONFLICT (id, source, account_id) DO NOTHING; an event that was not
// inserted is a duplicate, reported with the stored event's sequence, and
// none of its deliveries is written. This holds within one call and within
// one batch too: the second occurrence of an event is the duplicate. Its
// deliveries are written in its account.
// Deliveries are written pending, due at PublishedAt (which is also their
// round start and creation time), leased to opts.Lease when Claimed; those
// with Queued set are written queued and unlocked, receivable at
// PublishedAt (a delivery both Claimed and Queued fails the call before
// anything is written). The guard of opts is checked first, on the single
// writer, so it is ordered with every subscription write; the catalog
// version is read once per transaction. After the commit, the
// subscriptions that got queued deliveries are passed to Options.OnQueued.
func (s *Store) Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error) {
	if len(events) == 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return []store.PublishResult{}, nil
	}
	for i := range events {
		for _, d := range events[i].Deliveries {
			if d.Claimed && d.Queued {
				return nil, fmt.Errorf("publish: delivery %q is both claimed and queued", d.ID)
			}
		}
	}
	lease := opts.Lease
	until := sqlrow.LeaseUntilMS(lease)
	results := make([]store.PublishResult, len(events))
	var queued sqlrow.IDSet
	var args []any
	err := s.write(ctx, func(w *writer) error {
		queued.Reset()
		if err := w.checkCatalog(events, opts); err != nil {
			return err
		}
		for i := range events {
			ev := &events[i]
			payload := ev.Payload
			if payload == nil {
				payload = []byte{}
			}
			at := sqlrow.UnixMS(ev.PublishedAt)
			account := store.AccountOrDefault(ev.AccountID)
			res, err := w.exec(insertEventSQL, account, ev.ID, ev.Source, ev.Type, ev.Subject, at, payload)
			if err != nil {
				return fmt.Errorf("insert event %q from %q: %w", ev.ID, ev.Source, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 0 {
				var seq int64
				if err := w.scanRow(eventSeqSQL, []any{ev.ID, ev.Source, account}, &seq); err != nil {
					return fmt.Errorf("look up duplicate event %q from %q: %w", ev.ID, ev.Source, err)
				}
				results[i] = store.PublishResult{Seq: seq, Duplicate: true}
				continue
			}
			seq, err := res.LastInsertId()
			if err != nil {
				return err
			}
			results[i] = store.PublishResult{Seq: seq}
			for start := 0; start < len(ev.Deliveries); start += maxRowsPerInsert {
				ds := ev.Deliveries[start:min(start+maxRowsPerInsert, len(ev.Deliveries))]
				args = args[:0]
				for _, d := range ds {
					status, owner, lu := store.StatusPending, "", int64(0)
					switch {
					case d.Claimed:
						owner, lu = lease.Owner, until
					case d.Queued:
						status = store.StatusQueued
						queued.Add(d.SubscriptionID)
					}
					args = append(args, d.ID, account, d.SubscriptionID, d.EndpointID, seq, string(status),
						at, at, at, owner, lu)
				}
				if _, err := w.exec(w.valuesSQL(insertDeliveriesSQL, deliveryParams, len(ds), ""), args...); err != nil {
					return fmt.Errorf("insert deliveries %q…: %w", ds[0].ID, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.notifyQueued(queued)
	return results, nil
}

// checkCatalog applies a Publish's guard (store.PublishOptions) in the
// write transaction.
func (w *writer) checkCatalog(events []store.NewEvent, opts store.PublishOptions) error {
	switch {
	case opts.CatalogVersion > 0:
		v, err := w.currentCatalog()
		if err != nil {
			return err
		}
		if v > opts.CatalogVersion {
			return &store.StaleCatalogError{Version: v}
		}
	case opts.RequireSubscriptions:
		seen := map[string]bool{}
		for i := range events {
			for _, d := range events[i].Deliveries {
				if seen[d.SubscriptionID] {
					continue
				}
				seen[d.SubscriptionID] = true
				var one int
				switch err := w.scanRow(subscriptionPresentSQL, []any{d.SubscriptionID}, &one); {
				case isNoRows(err):
					v, err := w.currentCatalog()
					if err != nil {
						return err
					}
					return &store.StaleCatalogError{Version: v}
				case err != nil:
					return fmt.Errorf("check subscription %s: %w", d.SubscriptionID, err)
				}
			}
		}
	}
	return nil
}
