package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ?`

	getEventSQL = `SELECT ` + eventCols + ` FROM events AS e WHERE e.seq = ?`
)

// listAttemptsSQL selects cols of a delivery's attempts after a number, in
// number order, with a LIMIT parameter last.
func listAttemptsSQL(cols string) string {
	return `SELECT ` + cols + ` FROM attempts WHERE delivery_id = ? AND number > ? ORDER BY number LIMIT ?`
}

// GetDelivery implements store.DeliveryStore.
func (s *backend) GetDelivery(ctx context.Context, id string) (delivery.Delivery, error) {
	d, err := scanDelivery(s.readRow(ctx, getDeliverySQL, id))
	if isNoRows(err) {
		return delivery.Delivery{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return d, s.readErr(err)
}

// GetEvent implements store.DeliveryStore.
func (s *backend) GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error) {
	e, err := scanEvent(s.readRow(ctx, getEventSQL, seq))
	if isNoRows(err) {
		return store.StoredEvent{}, fmt.Errorf("event %d: %w", seq, store.ErrNotFound)
	}
	return e, s.readErr(err)
}

// ListDeliveries implements store.DeliveryStore: newest first (by ID, which
// sorts by creation time); the cursor is the last ID of the previous page.
// Every combination of filters is served by an index (see deliveryConds).
func (s *backend) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]delivery.Delivery, string, error) {
	where, args := deliveryConds(f)
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, false, f.EventID != "")
	if err != nil {
		return nil, "", err
	}
	out := make([]delivery.Delivery, len(ds))
	for i, d := range ds {
		out[i] = d.Delivery
	}
	return out, next, nil
}

// ListQueued implements store.DeliveryStore with ListDeliveries' indexes
// (deliveryConds), each delivery with its event.
func (s *backend) ListQueued(ctx context.Context, f store.DeliveryFilter) ([]store.DeadLetter, string, error) {
	f.Status = delivery.StatusQueued
	where, args := deliveryConds(f)
	return s.listDeliveries(ctx, where, args, f.Page, true, f.EventID != "")
}

// ListDeadLetters implements store.DeliveryStore: newest first, each with
// its event; the cursor is the last ID of the previous page.
func (s *backend) ListDeadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.DeadLetter, string, error) {
	where, args := deadLetterConds(f)
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, true, false)
	if err != nil {
		return nil, "", err
	}
	return ds, next, nil
}

// deliveryConds are the conditions (on deliveries d joined with events e)
// and arguments of f, which one index serves: (subscription_id, id) or
// (subscription_id, status, id) for a subscription (its deliveries are
// all in its account: the account is then a filter on them, marked with a
// unary + so that the planner never prefers the account's wider index);
// (account_id, id) or (account_id, status, id) for an account; (status, id)
// for a status in every account; for an event's id, the events with that
// id (in the account, when given) then their deliveries by (event_seq);
// for a subscription's ordering key, the partial index
// deliveries_ordering_all (subscription_id, ordering_key, id);
// for an endpoint's queued deliveries, the partial index
// deliveries_queued_endpoint (endpoint_id, id), whose condition the status
// repeats literally (the account is a filter then too: an endpoint is in
// one account). An endpoint with another status, which the API never asks
// for, is a filter on what the other conditions select.
func deliveryConds(f store.DeliveryFilter) (where []string, args []any) {
	queuedAt := f.EndpointID != "" && f.Status == delivery.StatusQueued
	if f.SubscriptionID != "" {
		where, args = append(where, "d.subscription_id = ?"), append(args, f.SubscriptionID)
	}
	switch {
	case queuedAt:
		where, args = append(where, "d.endpoint_id = ?", "d.status = 'queued'"), append(args, f.EndpointID)
	case f.EndpointID != "":
		where, args = append(where, "d.endpoint_id = ?"), append(args, f.EndpointID)
	}
	if f.Status != "" && !queuedAt {
		where = append(where, statusConds(f.Status)...)
	}
	if f.EventID != "" {
		where, args = append(where, "e.id = ?"), append(args, f.EventID)
	}
	if f.OrderingKey != "" {
		// deliveries_ordering_all's condition, literally.
		where, args = append(where, "d.ordering_key = ?", "d.ordering_key IS NOT NULL"), append(args, f.OrderingKey)
	}
	where, args = idRange(f, where, args)
	if f.AccountID != "" {
		switch {
		case f.EventID != "":
			where = append(where, "e.account_id = ?")
		case f.SubscriptionID != "" || queuedAt:
			where = append(where, "+d.account_id = ?")
		default:
			where = append(where, "d.account_id = ?")
		}
		args = append(args, f.AccountID)
	}
	return where, args
}

// idRange adds the conditions of f's time range (store.DeliveryFilter's
// IDRange): a range of d.id, which each index deliveryConds picks ends
// with, so the range narrows its seek.
func idRange(f store.DeliveryFilter, where []string, args []any) ([]string, []any) {
	lo, hi := f.IDRange()
	if lo != "" {
		where, args = append(where, "d.id >= ?"), append(args, lo)
	}
	if hi != "" {
		where, args = append(where, "d.id < ?"), append(args, hi)
	}
	return where, args
}

// deadLetterConds are the conditions and arguments of f, as deliveryConds
// makes them for the dead-lettered status.
func deadLetterConds(f store.DeadLetterFilter) (where []string, args []any) {
	where, args = deliveryConds(store.DeliveryFilter{AccountID: f.AccountID, SubscriptionID: f.SubscriptionID})
	return append(statusConds(delivery.StatusDeadLettered), where...), args
}

// statusConds are the conditions of a list by status, with the status as a
// literal: SQLite uses a partial index only when a query's terms hold its
// condition, which it cannot see through a parameter. Every status but
// delivered is in the status indexes (schema 10), whose condition the
// second term repeats; a status that is not valid matches nothing.
func statusConds(st delivery.Status) []string {
	switch {
	case !st.Valid():
		return []string{"0"}
	case st == delivery.StatusDelivered:
		return []string{"d.status = 'delivered'"}
	}
	return []string{"d.status = '" + string(st) + "'", "d.status <> 'delivered'"}
}

// listDeliveriesSQL selects cols of the deliveries matching every condition
// in where, newest first, with a LIMIT parameter last. byEvent says where
// filters on the event's id (e.id): the events with that id, then their
// deliveries, is then always the cheapest way (an event has few
// deliveries), which the planner cannot know without statistics, so CROSS
// JOIN fixes the order.
func listDeliveriesSQL(cols string, where []string, byEvent bool) string {
	q := `SELECT ` + cols + ` FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq`
	if byEvent {
		q = `SELECT ` + cols + ` FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq`
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + ` ORDER BY d.id DESC LIMIT ?`
}

// listDeliveries reads a page of the deliveries matching every condition in
// where, newest first, with their events when withEvent (else each Event is
// empty).
func (s *backend) listDeliveries(ctx context.Context, where []string, args []any, p store.Page, withEvent, byEvent bool) ([]store.DeadLetter, string, error) {
	if err := store.DeliveryCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	if p.Cursor != "" {
		where, args = append(where, "d.id < ?"), append(args, p.Cursor)
	}
	cols, bytes := deliveryCols, sqlrow.DeliveryBytes
	if withEvent {
		cols, bytes = cols+", "+eventCols, sqlrow.DeadLetterBytes
	}
	return readPage(ctx, s, p, listDeliveriesSQL(bytes, where, byEvent), listDeliveriesSQL(cols, where, byEvent), args,
		sqlrow.ScanListed(scanDelivery, withEvent), func(d store.DeadLetter) string { return d.ID })
}

// readPage reads one page of a list in one snapshot: first the sizes of
// the items after the cursor (sizesSQL selects one size per item, the
// list's conditions and order, with a LIMIT parameter last) to find where
// the page ends (store.Page.Len), then only the items the page holds
// (rowsSQL: the same with the columns scan reads), so that it never reads
// more than a page's bytes. key gives an item's cursor.
func readPage[T any](ctx context.Context, s *backend, p store.Page, sizesSQL, rowsSQL string, args []any,
	scan func(scanner) (T, error), key func(T) string) ([]T, string, error) {
	out, next := []T{}, ""
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		sizes, err := queryRows(ctx, tx, func(sc scanner) (n int64, err error) {
			err = sc.Scan(&n)
			return
		}, sizesSQL, append(args[:len(args):len(args)], p.Size()+1)...)
		if err != nil {
			return err
		}
		n := p.Len(sizes)
		if n == 0 {
			return nil
		}
		if out, err = queryRows(ctx, tx, scan, rowsSQL, append(args[:len(args):len(args)], n)...); err != nil {
			return err
		}
		if n < len(sizes) && len(out) > 0 {
			next = key(out[len(out)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", s.readErr(err)
	}
	return out, next, nil
}

// queryRows runs query in tx and scans every row with scan.
func queryRows[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ListAttempts implements store.DeliveryStore: oldest first; the cursor is
// the last attempt number of the previous page (store.NumberCursor).
// ErrNotFound when the delivery does not exist.
func (s *backend) ListAttempts(ctx context.Context, deliveryID string, p store.Page) ([]delivery.Attempt, string, error) {
	after, err := store.NumberCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	out, next, err := readPage(ctx, s, p, listAttemptsSQL(sqlrow.AttemptBytes), listAttemptsSQL(sqlrow.AttemptCols), []any{deliveryID, after},
		sqlrow.ScanAttempt, func(a delivery.Attempt) string { return strconv.Itoa(a.Number) })
	if err != nil {
		return nil, "", err
	}
	if len(out) == 0 {
		var one int
		if err := s.readRow(ctx, deliveryExistsSQL, deliveryID).Scan(&one); err != nil {
			if isNoRows(err) {
				return nil, "", fmt.Errorf("delivery %s: %w", deliveryID, store.ErrNotFound)
			}
			return nil, "", s.readErr(err)
		}
	}
	return out, next, nil
}
