package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = $1`

	getEventSQL = `SELECT ` + eventCols + ` FROM events AS e WHERE e.seq = $1`

	deliveryExistsSQL = `SELECT 1 FROM deliveries WHERE id = $1`
)

// queryAll runs a query in its own transaction (see Store.tx) and scans
// every row with scan.
func queryAll[T any](ctx context.Context, s *backend, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []T
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []T{}
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.err(err)
	}
	return out, nil
}

// GetDelivery implements store.DeliveryStore.
func (s *backend) GetDelivery(ctx context.Context, id string) (delivery.Delivery, error) {
	if err := s.checkOpen(); err != nil {
		return delivery.Delivery{}, err
	}
	d, err := queryRow(ctx, s, func(sc scanner) (delivery.Delivery, error) { return scanDelivery(sc) }, getDeliverySQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return delivery.Delivery{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return d, s.err(err)
}

// GetEvent implements store.DeliveryStore.
func (s *backend) GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error) {
	if err := s.checkOpen(); err != nil {
		return store.StoredEvent{}, err
	}
	e, err := queryRow(ctx, s, scanEvent, getEventSQL, seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StoredEvent{}, fmt.Errorf("event %d: %w", seq, store.ErrNotFound)
	}
	return e, s.err(err)
}

// ListDeliveries implements store.DeliveryStore: newest first (by ID, which
// sorts by creation time); the cursor is the last ID of the previous page.
// Every combination of filters with a subscription or an account is served
// by an index: (subscription_id, id), (account_id, id) without a status;
// with a status other than delivered, the partial indexes of the deliveries
// not delivered, (subscription_id, status, id) and (account_id, status, id)
// (0010_status_indexes.sql); with status delivered, (subscription_id, id)
// and (account_id, id) again, read newest first with a filter on the status
// (most of those rows are delivered). An event ID is served by the event's
// (id, source, account_id) then (event_seq). A status alone, across every
// account, reads the deliveries newest first (the primary key) until its
// page is full: the API always lists within an account, so that list (of
// tools and tests) has no index of its own. An endpoint with status queued
// seeks deliveries_queued_endpoint (endpoint_id, id); an endpoint with
// another status (or none) is a filter on the other conditions' rows.
func (s *backend) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]delivery.Delivery, string, error) {
	where, args := deliveryFilter(f)
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, false)
	if err != nil {
		return nil, "", err
	}
	out := make([]delivery.Delivery, len(ds))
	for i, d := range ds {
		out[i] = d.Delivery
	}
	return out, next, nil
}

// statusRows is the condition that a delivery (d) has a status, for each
// valid status (delivery.Status.Valid). The status is a literal of the query,
// made of the store's constants only, never of a caller's text, so that in
// every plan, generic ones included, the planner can prove the rows to be
// in the partial indexes that hold that status: those of queued deliveries
// (queuedRows; 0006) and those of the deliveries not delivered
// (deliveries_subscription_status, deliveries_account_status; 0010). A
// status given as a parameter proves nothing in a generic plan.
var statusRows = func() map[delivery.Status]string {
	m := map[delivery.Status]string{}
	for _, st := range []delivery.Status{delivery.StatusPending, delivery.StatusDelivered, delivery.StatusDeadLettered,
		delivery.StatusDropped, delivery.StatusQueued} {
		if !st.Valid() || strings.ContainsAny(string(st), `'\`) {
			panic("postgres: status " + string(st) + " cannot be a literal")
		}
		m[st] = `d.status = '` + string(st) + `'`
	}
	if m[delivery.StatusQueued] != queuedRows || m[delivery.StatusDeadLettered] != deadLetteredRows {
		panic("postgres: statusRows disagrees with queuedRows or deadLetteredRows")
	}
	return m
}()

// deadLetteredRows is the condition of the dead letters (ListDeadLetters).
const deadLetteredRows = `d.status = 'dead_lettered'`

// deliveryFilter returns ListDeliveries' conditions for f and their
// arguments. An event ID matches the event of that ID in f's account (any
// account's when f has none).
func deliveryFilter(f store.DeliveryFilter) (where []string, args []any) {
	acc := 0
	if f.AccountID != "" {
		args = append(args, f.AccountID)
		acc = len(args)
		where = append(where, fmt.Sprintf("d.account_id = $%d", acc))
	}
	if f.SubscriptionID != "" {
		args = append(args, f.SubscriptionID)
		where = append(where, fmt.Sprintf("d.subscription_id = $%d", len(args)))
	}
	if f.Status != "" {
		if cond, ok := statusRows[f.Status]; ok {
			where = append(where, cond)
		} else { // no delivery has it
			args = append(args, string(f.Status))
			where = append(where, fmt.Sprintf("d.status = $%d", len(args)))
		}
	}
	if f.EndpointID != "" {
		args = append(args, f.EndpointID)
		where = append(where, fmt.Sprintf("d.endpoint_id = $%d", len(args)))
	}
	if f.OrderingKey != "" { // deliveries_ordering_all (subscription_id, ordering_key, id)
		args = append(args, f.OrderingKey)
		where = append(where, fmt.Sprintf("d.ordering_key = $%d", len(args)), "d.ordering_key IS NOT NULL")
	}
	if f.EventID != "" {
		args = append(args, f.EventID)
		where = append(where, fmt.Sprintf("e.id = $%d", len(args)))
		if acc > 0 {
			where = append(where, fmt.Sprintf("e.account_id = $%d", acc))
		}
	}
	// The time range (store.DeliveryFilter's IDRange) is a range of d.id,
	// which every index above ends with: it narrows their seeks.
	lo, hi := f.IDRange()
	if lo != "" {
		args = append(args, lo)
		where = append(where, fmt.Sprintf("d.id >= $%d", len(args)))
	}
	if hi != "" {
		args = append(args, hi)
		where = append(where, fmt.Sprintf("d.id < $%d", len(args)))
	}
	return where, args
}

// ListQueued implements store.DeliveryStore with ListDeliveries' indexes
// (deliveryFilter), each delivery with its event.
func (s *backend) ListQueued(ctx context.Context, f store.DeliveryFilter) ([]store.DeadLetter, string, error) {
	f.Status = delivery.StatusQueued
	where, args := deliveryFilter(f)
	return s.listDeliveries(ctx, where, args, f.Page, true)
}

// ListDeadLetters implements store.DeliveryStore: newest first, each with
// its event; the cursor is the last ID of the previous page. A
// subscription's dead letters are a seek of the partial index
// (subscription_id, status, id), an account's of (account_id, status, id)
// (deadLetteredRows is a literal: see statusRows); every account's read the
// deliveries newest first until the page is full (see ListDeliveries).
func (s *backend) ListDeadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.DeadLetter, string, error) {
	where, args := deadLetterFilter(f)
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, true)
	if err != nil {
		return nil, "", err
	}
	return ds, next, nil
}

// deadLetterFilter returns ListDeadLetters' conditions for f and their
// arguments.
func deadLetterFilter(f store.DeadLetterFilter) (where []string, args []any) {
	where = []string{deadLetteredRows}
	if f.AccountID != "" {
		args = append(args, f.AccountID)
		where = append(where, fmt.Sprintf("d.account_id = $%d", len(args)))
	}
	if f.SubscriptionID != "" {
		args = append(args, f.SubscriptionID)
		where = append(where, fmt.Sprintf("d.subscription_id = $%d", len(args)))
	}
	return where, args
}

// listDeliveries reads a page of the deliveries matching every condition in
// where, newest first, with their events when withEvent (else each Event is
// empty).
func (s *backend) listDeliveries(ctx context.Context, where []string, args []any, p store.Page, withEvent bool) ([]store.DeadLetter, string, error) {
	if err := store.DeliveryCursor.Check(p.Cursor); err != nil {
		return nil, "", err
	}
	sizesSQL, rowsSQL, args := listDeliveriesSQL(where, args, p.Cursor, withEvent)
	return readPage(ctx, s, p, sizesSQL, rowsSQL, args,
		sqlrow.ScanListed(scanDelivery, withEvent), func(d store.DeadLetter) string { return d.ID })
}

// listDeliveriesSQL returns readPage's queries of the deliveries matching
// where (with args) after cursor, newest first, and their arguments.
func listDeliveriesSQL(where []string, args []any, cursor string, withEvent bool) (sizesSQL, rowsSQL string, _ []any) {
	if cursor != "" {
		args = append(args, cursor)
		where = append(where, fmt.Sprintf("d.id < $%d", len(args)))
	}
	from := ` FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq`
	if len(where) > 0 {
		from += ` WHERE ` + strings.Join(where, " AND ")
	}
	from += fmt.Sprintf(` ORDER BY d.id DESC LIMIT $%d`, len(args)+1)
	cols, bytes := deliveryCols, sqlrow.DeliveryBytes
	if withEvent {
		cols, bytes = cols+", "+eventCols, sqlrow.DeadLetterBytes
	}
	return `SELECT ` + bytes + from, `SELECT ` + cols + from, args
}

// readPage reads one page of a list in one snapshot: first the sizes of
// the items after the cursor (sizesSQL selects one size per item, the
// list's conditions and order, with a LIMIT parameter after args) to find
// where the page ends (store.Page.Len), then only the items the page holds
// (rowsSQL: the same with the columns scan reads), so that it never reads
// more than a page's bytes. key gives an item's cursor.
//
// Its transaction (listOpts) plans each query for its arguments
// (plan_cache_mode = force_custom_plan, set with the BEGIN, so at no extra
// round trip): the best plan of a list depends on them (a small account's
// deliveries are found through the account's index, a large account's by
// reading the newest deliveries until the page is full), and a generic
// plan, to which PostgreSQL may switch a prepared statement after a few
// runs, would serve every account with the plan of an average one. Planning
// a list's two queries costs well under a millisecond.
func readPage[T any](ctx context.Context, s *backend, p store.Page, sizesSQL, rowsSQL string, args []any,
	scan func(scanner) (T, error), key func(T) string) ([]T, string, error) {
	var out []T
	var next string
	err := s.readTx(ctx, s.listOpts, func(tx pgx.Tx) error {
		out, next = []T{}, ""
		rows, err := tx.Query(ctx, sizesSQL, append(args[:len(args):len(args)], p.Size()+1)...)
		if err != nil {
			return err
		}
		sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		n := p.Len(sizes)
		if n == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, rowsSQL, append(args[:len(args):len(args)], n)...)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) }); err != nil {
			return err
		}
		if n < len(sizes) && len(out) > 0 {
			next = key(out[len(out)-1])
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
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
		_, err := queryRow(ctx, s, func(sc scanner) (one int, err error) {
			err = sc.Scan(&one)
			return
		}, deliveryExistsSQL, deliveryID)
		if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, "", fmt.Errorf("delivery %s: %w", deliveryID, store.ErrNotFound)
			}
			return nil, "", s.err(err)
		}
	}
	return out, next, nil
}

// listAttemptsSQL selects cols of a delivery's attempts after a number, in
// number order, with a LIMIT parameter last.
func listAttemptsSQL(cols string) string {
	return `SELECT ` + cols + ` FROM attempts WHERE delivery_id = $1 AND number > $2 ORDER BY number LIMIT $3`
}
