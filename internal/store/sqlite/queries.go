package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

const (
	getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ?`

	getEventSQL = `SELECT ` + eventCols + ` FROM events AS e WHERE e.seq = ?`

	listAttemptsSQL = `SELECT delivery_id, number, started_at, duration_us, status_code, outcome, error, response_body
FROM attempts WHERE delivery_id = ? AND number > ? ORDER BY number LIMIT ?`
)

// GetDelivery implements store.DeliveryStore.
func (s *Store) GetDelivery(ctx context.Context, id string) (store.Delivery, error) {
	d, err := scanDelivery(s.readRow(ctx, getDeliverySQL, id))
	if isNoRows(err) {
		return store.Delivery{}, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return d, s.readErr(err)
}

// GetEvent implements store.DeliveryStore.
func (s *Store) GetEvent(ctx context.Context, seq int64) (store.StoredEvent, error) {
	e, err := scanEvent(s.readRow(ctx, getEventSQL, seq))
	if isNoRows(err) {
		return store.StoredEvent{}, fmt.Errorf("event %d: %w", seq, store.ErrNotFound)
	}
	return e, s.readErr(err)
}

// ListDeliveries implements store.DeliveryStore: newest first (by ID, which
// sorts by creation time); the cursor is the last ID of the previous page.
// Every combination of filters is served by an index: (subscription_id, id),
// (subscription_id, status, id), (status, id), or the event's id then
// (event_seq).
func (s *Store) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]store.Delivery, string, error) {
	var where []string
	var args []any
	if f.SubscriptionID != "" {
		where, args = append(where, "d.subscription_id = ?"), append(args, f.SubscriptionID)
	}
	if f.Status != "" {
		where, args = append(where, "d.status = ?"), append(args, string(f.Status))
	}
	if f.EventID != "" {
		where, args = append(where, "e.id = ?"), append(args, f.EventID)
	}
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, false, f.EventID != "")
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
		where, args = append(where, "d.subscription_id = ?"), append(args, f.SubscriptionID)
	}
	ds, next, err := s.listDeliveries(ctx, where, args, f.Page, true, false)
	if err != nil {
		return nil, "", err
	}
	out := make([]store.DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = store.DeadLetter{Delivery: d.Delivery, Event: d.event}
	}
	return out, next, nil
}

// listDeliveriesSQL selects deliveries matching every condition in where,
// newest first, with a LIMIT parameter last. byEvent says where filters on
// the event's id (e.id): the events with that id, then their deliveries, is
// then always the cheapest way (an event has few deliveries), which the
// planner cannot know without statistics, so CROSS JOIN fixes the order.
func listDeliveriesSQL(where []string, withEvent, byEvent bool) string {
	cols := deliveryCols
	if withEvent {
		cols += ", " + eventCols
	}
	q := `SELECT ` + cols + ` FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq`
	if byEvent {
		q = `SELECT ` + cols + ` FROM events AS e CROSS JOIN deliveries AS d INDEXED BY deliveries_event ON d.event_seq = e.seq`
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + ` ORDER BY d.id DESC LIMIT ?`
}

type deliveryWithEvent struct {
	store.Delivery
	event store.StoredEvent
}

func (s *Store) listDeliveries(ctx context.Context, where []string, args []any, p store.Page, withEvent, byEvent bool) ([]deliveryWithEvent, string, error) {
	size := p.Size()
	if p.Cursor != "" {
		where, args = append(where, "d.id < ?"), append(args, p.Cursor)
	}
	q := listDeliveriesSQL(where, withEvent, byEvent)
	args = append(args, size+1)

	rows, err := s.readQuery(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []deliveryWithEvent{}
	for rows.Next() {
		var r deliveryWithEvent
		var extra []any
		var published int64
		if withEvent {
			e := &r.event
			extra = []any{&e.Seq, &e.ID, &e.Source, &e.Type, &e.Subject, &e.Payload, &published}
		}
		d, err := scanDelivery(rows, extra...)
		if err != nil {
			return nil, "", s.readErr(err)
		}
		r.Delivery = d
		r.event.PublishedAt = sqlrow.FromUnixMS(published)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr(err)
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
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("attempts cursor %q: %w", p.Cursor, store.ErrInvalidCursor)
		}
		after = n
	}
	size := p.Size()
	rows, err := s.readQuery(ctx, listAttemptsSQL, deliveryID, after, size+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []store.AttemptRecord{}
	for rows.Next() {
		var a store.AttemptRecord
		var started, us int64
		if err := rows.Scan(&a.DeliveryID, &a.Number, &started, &us, &a.StatusCode, &a.Outcome, &a.Error, &a.ResponseBody); err != nil {
			return nil, "", s.readErr(err)
		}
		a.StartedAt = sqlrow.FromUnixMS(started)
		a.Duration = time.Duration(us) * time.Microsecond
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr(err)
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
	out, next := sqlrow.TrimPage(out, size, func(a store.AttemptRecord) string { return strconv.Itoa(a.Number) })
	return out, next, nil
}
