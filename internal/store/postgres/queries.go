package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = $1`

	getEventSQL = `SELECT ` + eventCols + ` FROM events AS e WHERE e.seq = $1`

	deliveryExistsSQL = `SELECT 1 FROM deliveries WHERE id = $1`

	listAttemptsSQL = `SELECT delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body
FROM attempts WHERE delivery_id = $1 AND number > $2 ORDER BY number LIMIT $3`
)

// queryAll runs a query in its own transaction (see Store.tx) and scans
// every row with scan.
func queryAll[T any](ctx context.Context, s *Store, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
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
func (s *Store) GetDelivery(ctx context.Context, id string) (store.Delivery, error) {
	if err := s.checkOpen(); err != nil {
		return store.Delivery{}, err
	}
	d, err := queryRow(ctx, s, func(sc scanner) (store.Delivery, error) { return scanDelivery(sc) }, getDeliverySQL, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Delivery{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return d, s.err(err)
}

// GetEvent implements store.DeliveryStore.
func (s *Store) GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error) {
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
// Every combination of filters is served by an index: (subscription_id, id),
// (subscription_id, status, id), (status, id), or the event's (id, source)
// then (event_seq).
func (s *Store) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]store.Delivery, string, error) {
	var where []string
	var args []any
	if f.SubscriptionID != "" {
		args = append(args, f.SubscriptionID)
		where = append(where, fmt.Sprintf("d.subscription_id = $%d", len(args)))
	}
	if f.Status != "" {
		args = append(args, string(f.Status))
		where = append(where, fmt.Sprintf("d.status = $%d", len(args)))
	}
	if f.EventID != "" {
		args = append(args, f.EventID)
		where = append(where, fmt.Sprintf("e.id = $%d", len(args)))
	}
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, false)
	if err != nil {
		return nil, "", err
	}
	out := make([]store.Delivery, len(ds))
	for i, d := range ds {
		out[i] = d.Delivery
	}
	return out, next, nil
}

// ListDeadLetters implements store.DeliveryStore: newest first, each with
// its event; the cursor is the last ID of the previous page.
func (s *Store) ListDeadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.DeadLetter, string, error) {
	where := []string{"d.status = 'dead_lettered'"}
	var args []any
	if f.SubscriptionID != "" {
		args = append(args, f.SubscriptionID)
		where = append(where, fmt.Sprintf("d.subscription_id = $%d", len(args)))
	}
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, true)
	if err != nil {
		return nil, "", err
	}
	out := make([]store.DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = store.DeadLetter{Delivery: d.Delivery, Event: d.event}
	}
	return out, next, nil
}

type deliveryWithEvent struct {
	store.Delivery
	event store.StoredEvent
}

func (s *Store) listDeliveries(ctx context.Context, where []string, args []any, p store.Page, withEvent bool) ([]deliveryWithEvent, string, error) {
	size := p.Size()
	if p.Cursor != "" {
		args = append(args, p.Cursor)
		where = append(where, fmt.Sprintf("d.id < $%d", len(args)))
	}
	cols := deliveryCols
	if withEvent {
		cols += ", " + eventCols
	}
	q := `SELECT ` + cols + ` FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, size+1)
	q += fmt.Sprintf(` ORDER BY d.id DESC LIMIT $%d`, len(args))

	out, err := queryAll(ctx, s, func(sc scanner) (deliveryWithEvent, error) {
		var r deliveryWithEvent
		var extra []any
		var published int64
		if withEvent {
			e := &r.event
			extra = []any{&e.Seq, &e.ID, &e.Source, &e.Type, &e.Subject, &e.Payload, &published}
		}
		d, err := scanDelivery(sc, extra...)
		if err != nil {
			return r, err
		}
		r.Delivery = d
		r.event.PublishedAt = sqlrow.FromUnixMS(published)
		return r, nil
	}, q, args...)
	if err != nil {
		return nil, "", err
	}
	out, next := sqlrow.TrimPage(out, size, func(r deliveryWithEvent) string { return r.ID })
	return out, next, nil
}

// ListAttempts implements store.DeliveryStore: oldest first; the cursor is
// the last attempt number of the previous page (ErrInvalidCursor when it is
// not a number). ErrNotFound when the delivery does not exist.
func (s *Store) ListAttempts(ctx context.Context, deliveryID string, p store.Page) ([]store.AttemptRecord, string, error) {
	after := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > 1<<31-1 {
			return nil, "", fmt.Errorf("attempts cursor %q: %w", p.Cursor, store.ErrInvalidCursor)
		}
		after = n
	}
	size := p.Size()
	out, err := queryAll(ctx, s, func(sc scanner) (store.AttemptRecord, error) {
		var a store.AttemptRecord
		var started, us int64
		if err := sc.Scan(&a.DeliveryID, &a.Number, &started, &us, &a.StatusCode, &a.Outcome, &a.Error, &a.ResponseBody); err != nil {
			return a, err
		}
		a.StartedAt = sqlrow.FromUnixMS(started)
		a.Duration = time.Duration(us) * time.Microsecond
		return a, nil
	}, listAttemptsSQL, deliveryID, after, size+1)
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
	out, next := sqlrow.TrimPage(out, size, func(a store.AttemptRecord) string { return strconv.Itoa(a.Number) })
	return out, next, nil
}
