package sqlite

import (
	"context"
	"fmt"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	// insertEventsSQL takes the VALUES of up to maxRowsPerInsert events
	// (see valuesSQL and insertEvents).
	insertEventsSQL = `INSERT INTO events (account_id, id, source, type, subject, published_at, payload, trace_context)
VALUES `
	insertEventsTail = `
ON CONFLICT (id, source, account_id) DO NOTHING`
	eventParams = 8

	eventSeqSQL = `SELECT seq FROM events WHERE id = ? AND source = ? AND account_id = ?`

	// lastEventSeqSQL reads the largest seq events has ever had: every new
	// event's seq is larger (AUTOINCREMENT), however many were deleted.
	lastEventSeqSQL = `SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'events'`

	subscriptionPresentSQL = `SELECT 1 FROM subscriptions WHERE id = ?`

	// insertDeliveriesSQL takes the VALUES of up to maxRowsPerInsert
	// deliveries (see valuesSQL): one statement for up to that many
	// deliveries of a group commit's publishes rather than one each, since
	// most of a statement's cost in SQLite is per statement (arguments
	// converted, bound, the program started and reset), not per row.
	insertDeliveriesSQL = `INSERT INTO deliveries
(id, account_id, subscription_id, endpoint_id, event_seq, status, round_start, next_attempt_at, created_at, lease_owner, lease_until, ordering_key)
VALUES `
	deliveryParams = 12

	// maxRowsPerInsert bounds a multi-row INSERT: 32 rows of 12 parameters,
	// far below SQLite's limit of 32,766, and few statement texts to
	// prepare (one per row count).
	maxRowsPerInsert = 32
)

// Publish implements store.DeliveryStore. The whole call is one request of
// a group commit: its events and deliveries are committed together or not at
// all (a delivery ID that already exists fails the call). Each event is
// inserted in its account (account.DefaultID when AccountID is empty) with ON
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
func (s *backend) Publish(ctx context.Context, events []store.NewEvent, opts store.PublishOptions) ([]store.PublishResult, error) {
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
	p := &publishReq{events: events, opts: opts, results: make([]store.PublishResult, len(events))}
	if err := s.writePublish(ctx, p); err != nil {
		return nil, err
	}
	s.notifyQueued(p.queued)
	return p.results, nil
}

// publishReq is one Publish call as a request of the writer. The writer
// runs a request alone (run), or several that come one after another in a
// group commit together (writer.publish): their events then share the
// multi-row INSERTs, which a call of one event would otherwise have to
// itself.
type publishReq struct {
	events  []store.NewEvent
	opts    store.PublishOptions
	results []store.PublishResult // one per event, set by writer.publish
	queued  sqlrow.IDSet          // the subscriptions that got queued deliveries
}

// guard applies p's guard (checkCatalog) and clears what an earlier run of
// p set.
func (p *publishReq) guard(w *writer) error {
	p.queued.Reset()
	return w.checkCatalog(p.events, p.opts)
}

// run writes p alone: its guard, then its events and deliveries.
func (p *publishReq) run(w *writer) error {
	if err := p.guard(w); err != nil {
		return err
	}
	return w.publish([]*publishReq{p})
}

// publish writes the events of ps, which have passed their guards, in
// their order (so the second occurrence of an event, in one call or
// across them, is the duplicate), and the deliveries of those that are
// new: up to maxRowsPerInsert events a statement (insertEvents), then
// their deliveries up to maxRowsPerInsert a statement. Each delivery is
// written with its own call's lease.
func (w *writer) publish(ps []*publishReq) error {
	var evs []*store.NewEvent
	var res []*store.PublishResult
	var from []*publishReq
	for _, p := range ps {
		for i := range p.events {
			evs, res, from = append(evs, &p.events[i]), append(res, &p.results[i]), append(from, p)
		}
	}
	var rows publishRows
	for start := 0; start < len(evs); start += maxRowsPerInsert {
		end := min(start+maxRowsPerInsert, len(evs))
		if err := w.insertEvents(evs[start:end], res[start:end]); err != nil {
			return err
		}
		for i := start; i < end; i++ {
			if res[i].Duplicate {
				continue
			}
			ev, p := evs[i], from[i]
			at := sqlrow.UnixMS(ev.PublishedAt)
			account := account.OrDefault(ev.AccountID)
			for k := range ev.Deliveries {
				d := &ev.Deliveries[k]
				status, owner, lu := p.deliveryState(d)
				rows.add(d.ID, account, d.SubscriptionID, d.EndpointID, res[i].Seq, string(status),
					at, at, at, owner, lu, sqlrow.OrderingKey(d.OrderingKey))
				if rows.full() {
					if err := rows.flush(w); err != nil {
						return err
					}
				}
			}
		}
	}
	return rows.flush(w)
}

// deliveryState returns how p writes d (see Publish): its status, and
// the lease owner and end of a claimed one. A queued one's subscription
// goes into p.queued.
func (p *publishReq) deliveryState(d *store.NewDelivery) (status delivery.Status, owner string, until int64) {
	switch {
	case d.Claimed:
		return delivery.StatusPending, p.opts.Lease.Owner, sqlrow.LeaseUntilMS(p.opts.Lease)
	case d.Queued:
		p.queued.Add(d.SubscriptionID)
		return delivery.StatusQueued, "", 0
	}
	return delivery.StatusPending, "", 0
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

// insertEvents inserts events (at most maxRowsPerInsert) in one statement
// and sets each one's result: its new seq, or the stored event's seq and
// Duplicate when the event was already stored, by an earlier call or
// earlier in this one.
//
// Every seq the statement gives is larger than every seq events ever had
// (AUTOINCREMENT), and when no row was skipped they are consecutive, in the
// order of the VALUES: the usual case costs one statement. When some rows
// were skipped as duplicates, or the seqs are not where that rule puts them,
// each event's seq is looked up by its key: those above the largest seq
// before the statement are new, the first time their key appears.
func (w *writer) insertEvents(events []*store.NewEvent, results []*store.PublishResult) error {
	if w.lastEventSeq < 0 {
		if err := w.scanRow(lastEventSeqSQL, nil, &w.lastEventSeq); err != nil {
			w.lastEventSeq = -1
			return fmt.Errorf("read the last event seq: %w", err)
		}
	}
	before := w.lastEventSeq
	args := make([]any, 0, len(events)*eventParams)
	for _, ev := range events {
		payload := ev.Payload
		if payload == nil {
			payload = []byte{}
		}
		args = append(args, account.OrDefault(ev.AccountID), ev.ID, ev.Source, ev.Type, ev.Subject,
			sqlrow.UnixMS(ev.PublishedAt), payload, sqlrow.NullIfEmpty(ev.TraceContext))
	}
	res, err := w.exec(w.valuesSQL(insertEventsSQL, eventParams, len(events), insertEventsTail), args...)
	if err != nil {
		return fmt.Errorf("insert events %q from %q…: %w", events[0].ID, events[0].Source, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n > 0 {
		if w.lastEventSeq, err = res.LastInsertId(); err != nil {
			w.lastEventSeq = -1
			return err
		}
	}
	if n == int64(len(events)) && w.lastEventSeq == before+n {
		for i, r := range results {
			*r = store.PublishResult{Seq: before + 1 + int64(i)}
		}
		return nil
	}
	type key struct{ account, id, source string }
	seen := make(map[key]bool, len(events))
	for i, ev := range events {
		k := key{account.OrDefault(ev.AccountID), ev.ID, ev.Source}
		var seq int64
		if err := w.scanRow(eventSeqSQL, []any{k.id, k.source, k.account}, &seq); err != nil {
			return fmt.Errorf("look up event %q from %q: %w", ev.ID, ev.Source, err)
		}
		*results[i] = store.PublishResult{Seq: seq, Duplicate: seq <= before || seen[k]}
		seen[k] = true
	}
	return nil
}

// publishRows gathers the VALUES of a Publish's deliveries for multi-row
// INSERTs of up to maxRowsPerInsert rows.
type publishRows struct {
	args []any
	rows int
}

func (p *publishRows) reset() { p.args, p.rows = p.args[:0], 0 }

func (p *publishRows) add(values ...any) {
	p.args = append(p.args, values...)
	p.rows++
}

func (p *publishRows) full() bool { return p.rows == maxRowsPerInsert }

// flush inserts the gathered deliveries, if any, and empties p.
func (p *publishRows) flush(w *writer) error {
	if p.rows == 0 {
		return nil
	}
	if _, err := w.exec(w.valuesSQL(insertDeliveriesSQL, deliveryParams, p.rows, ""), p.args...); err != nil {
		return fmt.Errorf("insert deliveries %q…: %w", p.args[0], err)
	}
	p.reset()
	return nil
}
